"""A large tensor captured by each of several chained maps: one copy per map.

A map function that refers to a tensor defined outside it (a lookup table, a
vocabulary, class weights) captures it. The captured tensor becomes an input
of that map's dataset op, and here each map's iterator made its own copy of
it: chaining N such maps over the same table holds N copies of the table at
once, on top of the original.

tensorflow/tensorflow#62788 (Jan. 2024, TF 2.15.0, Python 3.10.13, Linux;
reproduced with the nightly; open) reports it with a 2 GB tensor referenced
by a function passed to several chained `map` calls: every `map` allocates a
new copy, enough to run a Colab machine out of memory. The reporter notes it
is not a leak (the copies are freed later) but that the allocator may keep
the memory. On TF 2.21 here, 8 maps over a 32 MiB table peaked 314 MiB above
the baseline (the table and 8 copies), and the memory stayed in use after the
dataset was dropped; building the dataset again did not add more.

Each repetition is one epoch over a short dataset. The measurement should
show the peak above baseline rising with NUM_MAPS, by about TABLE_BYTES per
map, not growth per repetition.

Source: tensorflow/tensorflow#62788.
"""
import tensorflow as tf

TITLE = "a large tensor fed to chained maps as data, not captured"
SOURCE = "tensorflow/tensorflow#62788"
REPETITION = "one epoch over the dataset"
KIND = "peak"
SIZE_PARAM = "num_maps"
PARAMS = {"num_maps": 2}

TABLE_BYTES = 32 * 1024 * 1024     # float32: 8 M values, e.g. an embedding or lookup table
NUM_ELEMENTS = 64


def setup(num_maps):
    table = tf.random.uniform([TABLE_BYTES // 4], seed=0)
    # The table travels with each element as data: from_tensors holds one copy,
    # repeat() hands out that same buffer, and no map captures it.
    tables = tf.data.Dataset.from_tensors(table).repeat()
    ds = tf.data.Dataset.zip((tf.data.Dataset.range(NUM_ELEMENTS), tables))  # a tuple: zip(a, b) needs TF 2.13+
    for _ in range(num_maps):  # each map takes the table as an argument and passes it on
        ds = ds.map(lambda i, table: (i + tf.cast(table[i] > 0.5, tf.int64), table))
    return ds.map(lambda i, table: i)  # drop the table once the maps are done


def repetition(ds):
    for _ in ds:
        pass
