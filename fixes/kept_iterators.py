"""Iterators kept alive by a stored exception.

A "peek" takes a new iterator over the dataset (`next(iter(ds))`) to check
the first batch. When the check fails, the loop keeps the exception for a
report at the end. An exception holds its traceback, the traceback holds the
frame of `peek`, and the frame holds the local `it`: a live, partly consumed
iterator with its prefetch buffer and its threads. Nothing ever drops it.

On TF 2.21 each live iterator over this dataset holds about 4 threads and its
prefetched batches (docs/measurements.md, "TensorFlow"); destroying hundreds of them at
once can take seconds, which is why the engine times teardown too.

One repetition is PEEKS_PER_REPETITION peeks. The measurement should show
threads and RSS growing with every repetition.

Seed source: dangling references.
"""
import numpy as np
import tensorflow as tf

TITLE = "peek problems kept as text; the iterators die with their frame"
SOURCE = "dangling references"
REPETITION = "PEEKS_PER_REPETITION peeks at the first batch"
KIND = "growth"
SIZE_PARAM = "peeks_per_repetition"
PARAMS = {"peeks_per_repetition": 4}

NUM_ELEMENTS = 1024
FEATURES = 1024                    # float32: 4 KiB per element
BATCH_SIZE = 32                    # 128 KiB per batch


def peek(ds):
    it = iter(ds)
    batch = next(it)
    tf.debugging.check_numerics(batch, "first batch")  # raises: the data holds a NaN
    return batch


def setup(peeks_per_repetition):
    features = np.ones((NUM_ELEMENTS, FEATURES), np.float32)
    features[0, 0] = np.nan        # one bad record, so the check always fails
    ds = tf.data.Dataset.from_tensor_slices(features).batch(BATCH_SIZE).prefetch(4)
    problems = []
    return ds, problems, peeks_per_repetition


def repetition(state):
    ds, problems, peeks = state
    for _ in range(peeks):
        try:
            peek(ds)
        except tf.errors.InvalidArgumentError as err:
            # Keep the message, not the exception: its traceback would keep
            # peek's frame, and the live iterator in it, alive.
            problems.append(str(err))
