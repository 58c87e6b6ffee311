"""A text dataset rebuilt every epoch, its map splitting each line with tf.strings.split.

Each `Dataset.map` traces its function into a graph and, when an iterator is
made, TensorFlow registers that function (and the functions it calls) with
the runtime. A pipeline that is built once registers them once; a pipeline
rebuilt every epoch, as in a loop that calls a `make_dataset()` each time,
registers a new set each time. On some releases what a dropped dataset
registered is not released, so memory grows with every rebuild, in C++,
with no Python object left behind.

tensorflow/tensorflow#35152 (Dec. 2019, TF 2.1.0rc1, CPU, eager): memory
grows while iterating a dataset whose map calls `tf.strings.split`, is not
given back afterwards, and grows much faster when the same dataset is
created again and again (303 → 714 MB over 4 loops, no plateau over 20). The
same map through `py_function` grew slowly. Labelled "Fixed in Nightly": in
Oct. 2020 a TF engineer ran 40 loops on tf-nightly and memory stayed at
about 776 MB. Closed.

A plain loop here (3 warm-ups, 12 repetitions, one new dataset over 2,000
lines of 20 words each, Python 3.11) kept 266 KiB per rebuild on TF 2.13.1
(RSS less malloc's free bytes; malloc in use +314) and 1.6 on TF 2.21.0;
the same dataset built once kept 1.6 on 2.13.1. Through leakbench it read
leak on TF 2.12.1 to 2.14.1 (held +225 to +315 KiB per repetition) and
no-leak from 2.15.1 on. REPORTED states the thread's claim; what each release
does is in the committed results (results/records/).

One repetition is one epoch over NUM_LINES lines of WORDS_PER_LINE words,
through a dataset built for that epoch. Where the leak exists the
measurement should show held memory growing by a few hundred KiB per
repetition.

Source: tensorflow/tensorflow#35152.
"""
import tensorflow as tf

TITLE = "the text dataset built once and iterated every epoch"
SOURCE = "tensorflow/tensorflow#35152"
REPORTED = {
    "issue": "tensorflow/tensorflow#35152",
    "leaks_on": ["2.1.0rc1"],
    "fixed_in": None,
    "note": "re-creating the dataset made it grow fastest; labelled Fixed in Nightly (flat on tf-nightly "
            "in Oct. 2020, about 2.4), no release named",
}
REPETITION = "one epoch over a text dataset built for it"
KIND = "growth"
SIZE_PARAM = "num_lines"
PARAMS = {"num_lines": 2000}

WORDS_PER_LINE = 20
VOCABULARY = 997                   # distinct words
BATCH_SIZE = 64


def text_lines(num_lines):
    """Stands in for the lines of a text file."""
    return [" ".join(f"w{(i * 7 + j) % VOCABULARY}" for j in range(WORDS_PER_LINE)) for i in range(num_lines)]


def make_dataset(lines):
    ds = tf.data.Dataset.from_tensor_slices(lines)
    ds = ds.map(lambda line: tf.strings.split(line))
    return ds.batch(BATCH_SIZE)


def setup(num_lines):
    # Built once: its map function is traced and registered once, and every
    # epoch is a new iterator over the same dataset.
    return {"ds": make_dataset(text_lines(num_lines))}


def repetition(state):
    for _ in state["ds"]:
        pass
