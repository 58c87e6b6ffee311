"""A full-dataset shuffle per epoch, and glibc malloc keeping the freed pages.

Report: tensorflow/tensorflow#44176 ("Massive memory leaks due to
data.Dataset.shuffle", TF 2.3, 2020). Its repro shuffles 10 M float scalars
with a buffer as large as the dataset and batches them; users saw RSS climb by
~50 MB per pass, into GBs. The thread found nothing held: each element is a
tiny tensor allocated by tf.data's threads, freed when the buffer drains, and
glibc malloc keeps the freed chunks in its per-thread arenas instead of
returning the pages. The advice there, and in TensorFlow's performance guide,
is another allocator (tcmalloc or jemalloc) preloaded.

Here: 1 M scalars (4 MB of data), `shuffle(cardinality)`, one epoch with a new
iterator per repetition. Measured on TF 2.21 with glibc: RSS settles
400-700 MiB above the process before setup, jumping by a hundred MiB between
epochs, while the bytes malloc has in use stay flat; `malloc_trim` gives back
500-540 MiB. The verdict is `fragmentation`, not `leak`: nothing is held.
"""
import numpy as np
import tensorflow as tf

TITLE = "the same shuffle with tcmalloc preloaded"
SOURCE = "tensorflow/tensorflow#44176"
REPETITION = "one epoch over the shuffled dataset (a new iterator)"
KIND = "growth"
SIZE_PARAM = "num_elements"
PARAMS = {"num_elements": 1_000_000}
HEAP_REPS = 0  # ~6 M small allocations per epoch: memray's pass would cost minutes and adds nothing here
# The fix is the process's allocator, not the pipeline: tcmalloc returns freed
# memory to its central lists and the system (Debian package libtcmalloc-minimal4).
# ENV is the contract's environment for the measured process; the loader finds the soname.
ENV = {"LD_PRELOAD": "libtcmalloc_minimal.so.4"}


def setup(num_elements):
    data = np.ones([num_elements, 1], dtype=np.float32)
    ds = tf.data.Dataset.from_tensor_slices(data)
    return ds.shuffle(num_elements).batch(num_elements // 10)


def repetition(ds):
    for _ in ds:
        pass
