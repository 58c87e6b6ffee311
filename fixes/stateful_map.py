"""A map function that keeps every element in Python state.

`numpy_function` (and `py_function`) run ordinary Python inside the
pipeline, so they can do what graph ops cannot: keep state. Here the function
appends each element to a module-level list, meaning to compute statistics
later. Every element it has ever seen stays referenced: NUM_ELEMENTS ×
ELEMENT_BYTES more memory per epoch, for the life of the process.

One repetition is one epoch. The measurement should show RSS, the malloc heap
and Python objects growing by about NUM_ELEMENTS × ELEMENT_BYTES per
repetition (a plain loop here grew 7.9 MB per epoch of 500 × 16 KiB).

Seed source: stateful functions.
"""
import numpy as np
import tensorflow as tf

TITLE = "numpy_function map keeping running statistics only"
SOURCE = "stateful functions"
REPETITION = "one epoch over the dataset"
KIND = "growth"
SIZE_PARAM = "num_elements"
PARAMS = {"num_elements": 256}

ELEMENT_BYTES = 16 * 1024          # float32: 4,096 values
STATS = {"count": 0, "sum": 0.0}  # bounded state: two numbers, not every element


def record(x):
    STATS["count"] += 1            # running statistics instead of a list of elements
    STATS["sum"] += float(x.sum())
    return x


def setup(num_elements):
    ds = tf.data.Dataset.range(num_elements)
    ds = ds.map(lambda i: tf.fill([ELEMENT_BYTES // 4], tf.cast(i, tf.float32)))
    ds = ds.map(lambda x: tf.numpy_function(record, [x], tf.float32))
    return ds.batch(32)


def repetition(ds):
    for _ in ds:
        pass
