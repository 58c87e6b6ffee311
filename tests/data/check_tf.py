"""Small TensorFlow check targets for tests/test_check.py: one stage that buffers
each, so attribution has one right answer, and a dataset factory that leaks."""
import numpy as np
import tensorflow as tf

ELEMENT_FLOATS = 4096              # 16 KiB per float32 element
KEPT = []


def _elements(n):
    return tf.data.Dataset.range(n).map(lambda i: tf.fill([ELEMENT_FLOATS], tf.cast(i, tf.float32)))


def shuffle_buffer():
    """shuffle(2048) of 16 KiB elements: Shuffle holds ~32 MiB."""
    return _elements(4096).shuffle(2048).batch(32)


def cache_in_memory():
    """cache() in memory of 1,024 × 16 KiB: MemoryCache holds 16 MiB once filled."""
    return _elements(1024).cache().batch(32)


def prefetch_unbatched():
    """prefetch(256) before batch(): Prefetch holds up to 256 × 16 KiB = 4 MiB."""
    return _elements(1024).prefetch(256).batch(8)


def interleave_all():
    """interleave over 8 inputs at once, each prefetching 32 × 16 KiB."""
    def read(i):
        return _elements(64).prefetch(32)
    return tf.data.Dataset.range(8).interleave(read, cycle_length=8, num_parallel_calls=tf.data.AUTOTUNE).batch(8)


def _keep(x):
    KEPT.append(x.copy())          # state kept by the map function: every element, for ever
    return x


def stateful_map():
    """A numpy_function map keeping every 16 KiB element: 256 elements = 4 MiB per pass."""
    return _elements(256).map(lambda x: tf.numpy_function(_keep, [x], tf.float32))


def bounded_steps():
    """A zero-argument repetition: a few steps of work, nothing kept."""
    for batch in _elements(256).batch(32):
        tf.reduce_sum(batch)


def not_a_pipeline():
    """Returns neither None nor a dataset: a repetition function returning a value."""
    return np.zeros(4)


LAMBDA_KEPT = []


def lambda_map():
    """A numpy_function map whose inline lambda keeps every 16 KiB element (4 MiB per pass):
    the leak is on the lambda's line below, not in TensorFlow."""
    return _elements(256).map(
        lambda x: tf.numpy_function(lambda a: LAMBDA_KEPT.append(a.copy()) or a, [x], tf.float32))
