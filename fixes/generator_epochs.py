"""A from_generator dataset iterated epoch after epoch: a new generator per epoch.

`Dataset.from_generator` runs a Python generator inside the pipeline. Each
iterator over the dataset (each epoch of `for batch in ds`) asks the
dataset's generator state for a fresh generator, kept in a dict under a new
iterator id until the iterator is finalized; the Python calls that start,
step and finalize it hop between TensorFlow's threads and the interpreter.
When that bookkeeping is not released, every epoch leaves its generator state
behind.

Two public reports describe memory growing epoch after epoch this way:
- tensorflow/tensorflow#37653 (March 2020, TF 2.1.0, Python 3.6.6, Ubuntu
  18.04): memory grows while iterating a `from_generator` dataset; a TF
  engineer's count of Python objects showed one more generator state (with
  its functions, cells and dicts) for each of 100 iterations. Closed.
- tensorflow/tensorflow#65675 (April 2024, open): process memory "grows out of
  hand" iterating a `from_generator` dataset, on some TensorFlow and Python
  combinations only. The reporter saw it with Python 3.11 and TF 2.16.1 (and a
  2.17 nightly), and with Python 3.10.10 and TF 2.13.0; not with Python 3.10
  and TF 2.15.0 or 2.16.1. A TF triager then reproduced it with Python 3.11.

It does not reproduce on every release: on TF 2.21 with Python 3.11 a plain
loop here stayed flat (about 0.1 MB per epoch of 256 × 64 KiB elements, the
glibc malloc heap flat). REPORTED states the thread's claim; what each
release does is in the committed results (results/records/tf-<v>.jsonl).

One repetition is one epoch (a new iterator, hence a new generator) over
NUM_ELEMENTS elements of ELEMENT_BYTES. Where the leak exists the measurement
should show RSS growing with every repetition.

Source: tensorflow/tensorflow#65675 (and #37653).
"""
import numpy as np
import tensorflow as tf

TITLE = "an index dataset mapped through numpy_function: no generator per epoch"
SOURCE = "tensorflow/tensorflow#65675"
REPORTED = {
    "issue": "tensorflow/tensorflow#65675",
    "leaks_on": ["2.13.0", "2.16.1", "2.17.0-dev20240412"],
    "fixed_in": None,
    "note": "the reporter's table: a leak with Python 3.11 on 2.16.1 and the 2.17 nightly and with "
            "Python 3.10.10 on 2.13.0; none with Python 3.10 on 2.15.0 and 2.16.1. Open.",
}
REPETITION = "one epoch over the dataset (a new iterator, a new generator)"
KIND = "growth"
SIZE_PARAM = "num_elements"
PARAMS = {"num_elements": 256}

ELEMENT_BYTES = 64 * 1024          # float32: 16,384 values
BATCH_SIZE = 32


def read_example(i):
    """Stands in for reading one example from disk."""
    return np.full(ELEMENT_BYTES // 4, i, np.float32)


def setup(num_elements):
    # An index source and the same Python called per index: no generator, so
    # no per-iterator generator state for an epoch to leave behind.
    ds = tf.data.Dataset.range(num_elements)
    ds = ds.map(lambda i: tf.numpy_function(read_example, [i], tf.float32))
    ds = ds.map(lambda x: tf.ensure_shape(x, [ELEMENT_BYTES // 4]))  # the shape from_generator declared
    return ds.batch(BATCH_SIZE)


def repetition(ds):
    for _ in ds:
        pass
