"""A shuffle buffer as large as the dataset: hundreds of bytes per element.

`shuffle(buffer_size)` fills a buffer of buffer_size elements before it
yields the first one, and refills it every epoch. A buffer as large as the
dataset gives a perfect shuffle and holds the whole dataset, and each
buffered element costs far more than its data: a vector of tensors, a tensor
buffer on the heap, allocator overhead. For small elements the overhead is
most of it.

- tensorflow/tensorflow#32376 (Sept. 2019, TF 2.0rc): `shuffle` with a buffer
  the size of the dataset fills RAM before every epoch, until the machine
  hangs. A TF maintainer: expected; a perfect shuffle of data that does not fit
  in memory is not supported, use a smaller buffer. Closed.
- tensorflow/tensorflow#60599 (May 2023, TF 2.12, Python 3.8, Ubuntu 22.04):
  a full shuffle of 50,000,000 int64 scalars (`from_tensor_slices(np.arange)`,
  then `shuffle(50_000_000)`) used about 10 GB where the reporter expected
  about 1 GB. Closed as stale.
On TF 2.21 here a plain loop held about 440–480 bytes per int64 element
(250,000 elements: 104 MiB above the baseline; 1,000,000: 449 MiB), and
leakbench's runs 500–660 bytes (49,152 → 196,608 elements: 47 → 139 MiB).

One repetition is one epoch of NUM_ELEMENTS int64 values, shuffled, in batches.
The measurement should show the peak above baseline rising in proportion to
NUM_ELEMENTS, at hundreds of bytes per 8-byte element, not growth per epoch.

Source: tensorflow/tensorflow#60599 (and #32376).
"""
import numpy as np
import tensorflow as tf

TITLE = "a perfect shuffle of one dense index tensor per epoch, no element buffer"
SOURCE = "tensorflow/tensorflow#60599"
REPETITION = "one epoch over the shuffled dataset"
KIND = "peak"
SIZE_PARAM = "num_elements"
PARAMS = {"num_elements": 98304}

BATCH_SIZE = 1024


def setup(num_elements):
    values = np.arange(num_elements)   # int64: 8 bytes each, the report's data at a small scale
    # Shuffle the whole tensor in one op, anew each epoch (8 bytes per element,
    # not a buffered element each); for records larger than an index, shuffle
    # indices or file names this way and load the records after.
    ds = tf.data.Dataset.from_tensors(values).map(tf.random.shuffle)
    return ds.rebatch(BATCH_SIZE)  # cut the shuffled tensor into batches: nothing buffered per element


def repetition(ds):
    for _ in ds:
        pass
