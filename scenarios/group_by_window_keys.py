"""group_by_window keyed by a value with many distinct keys: a partial window per key.

`group_by_window` keeps one window per key and emits it when it holds
window_size elements (or when the input ends). Every key seen and not yet
completed holds up to window_size − 1 elements in memory. Keyed by a value
with many distinct values (an exact sequence length, an id), with each key
arriving only now and then, nearly every key holds a partial window: memory
grows with the number of distinct keys × window_size × element size, up to
the whole input.

tensorflow/tensorflow#36877 (Feb. 2020, TF 2.0.0, Python 3.7, GPU, graph mode)
reports a memory leak from a pipeline that repeats a TFRecord dataset for 50
epochs and then groups it with `group_by_window(key_func=lambda elem, *args:
elem, ..., window_size=batch_size)`, keyed by the element itself; the same
pipeline without `group_by_window` is fine. Keyed by the element, each key
comes back once per epoch, so its window of 64 would fill only after 64
epochs: every element of the 50 stays buffered. Closed. On TF 2.21 here the
peak rose by about 0.6 MB per distinct key, each holding 7 × 32 KiB of data:
2–3 times the data it holds.

Here examples carry a length (one of NUM_KEYS values, in a round-robin order
as in a shuffled stream) and are grouped by it. One repetition is one epoch of
NUM_KEYS × WINDOW_SIZE examples of ELEMENT_BYTES. The measurement should show
the peak above baseline rising in proportion to NUM_KEYS (about NUM_KEYS ×
(WINDOW_SIZE − 1) × ELEMENT_BYTES), not growth per epoch.

Source: tensorflow/tensorflow#36877.
"""
import tensorflow as tf

TITLE = "group_by_window keyed by a value with many distinct keys"
SOURCE = "tensorflow/tensorflow#36877"
REPETITION = "one epoch over the dataset"
KIND = "peak"
SIZE_PARAM = "num_keys"
PARAMS = {"num_keys": 64}

WINDOW_SIZE = 8
ELEMENT_BYTES = 32 * 1024          # float32: 8,192 values per example


def make_example(i, num_keys):
    length = i % num_keys          # each length comes back once every num_keys examples
    return length, tf.fill([ELEMENT_BYTES // 4], tf.cast(i, tf.float32))


def key_by_length(length, features):
    return length


def setup(num_keys):
    ds = tf.data.Dataset.range(num_keys * WINDOW_SIZE)
    ds = ds.map(lambda i: make_example(i, num_keys))
    return ds.group_by_window(key_func=key_by_length, window_size=WINDOW_SIZE,
                              reduce_func=lambda key, window: window.batch(WINDOW_SIZE))


def repetition(ds):
    for _ in ds:
        pass
