"""A dataset rebuilt from a numpy array at every step, and kept.

`Dataset.from_tensor_slices(array)` copies the array into a constant tensor
owned by the dataset. Built inside the training loop, each step makes a new
copy; kept in a list (here a history for "debugging later"; a closure or a
tf.function capturing it does the same), no copy is ever freed.

One repetition is one training step over a freshly built dataset of
ARRAY_BYTES. The measurement should show RSS and heap growing by about
ARRAY_BYTES per repetition.

Seed source: dangling references.
"""
import numpy as np
import tensorflow as tf

TITLE = "from_tensor_slices inside the loop, each dataset kept"
SOURCE = "dangling references"
REPETITION = "one training step over the dataset"
KIND = "growth"
SIZE_PARAM = "array_bytes"
PARAMS = {"array_bytes": 2097152}  # 2 MiB

FEATURES = 256                     # float32: 1 KiB per row
BATCH_SIZE = 64


def setup(array_bytes):
    features = np.random.default_rng(0).random((array_bytes // (4 * FEATURES), FEATURES), np.float32)
    history = []
    return features, history


def repetition(state):
    features, history = state
    ds = tf.data.Dataset.from_tensor_slices(features).batch(BATCH_SIZE)
    history.append(ds)
    for batch in ds:
        tf.reduce_sum(batch)
