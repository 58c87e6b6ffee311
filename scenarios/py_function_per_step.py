"""A small dataset built at every step, its map parsing records through tf.py_function.

Some training loops build each step's input anew: a handful of records in a
new dataset, parsed by a Python function through `tf.py_function`, iterated
once and dropped. Tracing the map wraps the Python function in an `EagerFunc`
and registers it with TensorFlow's Python-function registry; the dataset is
dropped after the step, but the wrapper, its closures and what the function
machinery keeps for it (its tape cache, AutoGraph's wrapper) stay alive. One
set per step, for the life of the process, however small the dataset.

tensorflow/tensorflow#35084 (Dec. 2019, TF 2.0, Python 3.6.8, Ubuntu 16.04):
each step builds a dataset from a generator of CSV strings, maps it through a
`py_function` that parses them and a `tf.strings.split`, and iterates it;
memory grows step after step, and the reporter expected each step's dataset
to be freed. A TF engineer found the `py_function` kept by the process-wide
default graph and moved it to the traced function's graph (TensorFlow
commit 3b74a63), and named two more holders not yet solved then:
py_function's tape cache and AutoGraph's wrapper. Another user saw the same
on TF 1.14. Closed as stalled.

A plain loop here (3 warm-ups, 12 repetitions of 10 steps, each a new
dataset of 32 strings through a `py_function`, Python 3.11) left 9 Python
objects per step on TF 2.13.1 and on TF 2.21.0, and kept 69 KiB per step on
2.13.1 (RSS less malloc's free bytes), 2 on 2.21.0. With `numpy_function` in
place of `py_function` it still left 5 objects per step on 2.21.0 and kept
62 KiB per step on 2.13.1: what leaks is the dataset built per step. The fix
builds one pipeline and takes a batch per step from one iterator. Through
leakbench (4 steps per repetition) the leak read 36 objects per repetition
on both releases, and 297 KiB of held memory per repetition on 2.13.1.

One repetition is STEPS_PER_REPETITION steps, each parsing RECORDS_PER_STEP
CSV records. The measurement should show Python objects growing by about 9
per step on every release, and on TF 2.12.1 to 2.14.1 held memory too (+242
to +297 KiB per repetition there: what each rebuilt dataset registers, as in
`rebuilt_split_map`).

Source: tensorflow/tensorflow#35084.
"""
import tensorflow as tf

TITLE = "a small dataset built every step, mapped through tf.py_function"
SOURCE = "tensorflow/tensorflow#35084"
REPETITION = "STEPS_PER_REPETITION training steps, one batch of RECORDS_PER_STEP parsed records each"
KIND = "growth"
SIZE_PARAM = "steps_per_repetition"
PARAMS = {"steps_per_repetition": 4}

RECORDS_PER_STEP = 16
RECORD = "1,2,3,4,5,6,7,8"         # one CSV record, as in the thread


def parse_record(record):
    """Python parsing: each field of the CSV record plus one."""
    fields = bytes.decode(record.numpy()).split(",")
    return ",".join(str(int(f) + 1) for f in fields)


def parse(record):
    return tf.py_function(parse_record, [record], tf.string)


def setup(steps_per_repetition):
    return {"steps": steps_per_repetition}


def repetition(state):
    for _ in range(state["steps"]):
        ds = tf.data.Dataset.from_tensor_slices([RECORD] * RECORDS_PER_STEP)
        ds = ds.map(parse).batch(RECORDS_PER_STEP)
        for _ in ds:
            pass
