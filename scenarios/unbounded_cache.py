"""cache() in memory of a dataset larger than the memory budget.

`Dataset.cache()` with no file name keeps every element it has produced in
memory, for the life of the dataset: after the first epoch the process holds
the whole dataset, cardinality × element size, whatever the budget. A pipeline
developed on a sample grows with the data it is later pointed at.

One repetition is one epoch (NUM_ELEMENTS elements of ELEMENT_BYTES each).
The measurement should show the peak above baseline rising in proportion to
NUM_ELEMENTS (here 1× = 256 MiB, 8× BUDGET_BYTES), not growth per epoch:
the cache fills during warm-up.

Seed source: caching. See the tf.data performance guide, "Caching"
(https://www.tensorflow.org/guide/data_performance#caching).
"""
import tensorflow as tf

TITLE = "cache() in memory of a dataset larger than the budget"
SOURCE = "caching"
REPETITION = "one epoch over the dataset"
KIND = "peak"
SIZE_PARAM = "num_elements"
PARAMS = {"num_elements": 4096}

ELEMENT_BYTES = 64 * 1024          # one float32 feature vector of 16,384 values
BUDGET_BYTES = 32 * 1024 * 1024    # what this pipeline may keep in memory


def make_element(i):
    return tf.fill([ELEMENT_BYTES // 4], tf.cast(i, tf.float32))


def setup(num_elements):
    ds = tf.data.Dataset.range(num_elements).map(make_element)
    ds = ds.cache()
    return ds.batch(32)


def repetition(ds):
    for _ in ds:
        pass
