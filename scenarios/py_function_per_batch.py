"""A tf.py_function called eagerly on each batch the dataset yields, in the training loop.

Outside a traced function, `tf.py_function` runs eagerly: every call wraps the
Python function in a new `EagerFunc`, registers it in TensorFlow's
Python-function registry and ties its lifetime to the current default graph.
In eager mode that graph is the process-wide one, which is never destroyed,
so every call leaves its wrapper (and what it refers to) behind. An
augmentation applied this way to each batch in a `for batch in ds` loop
leaks once per batch, epoch after epoch. `tf.numpy_function`, called
eagerly, just calls the Python function on the NumPy values.

- tensorflow/tensorflow#51839 (Sep. 2021, TF 2.6 and 2.7, Python 3.7): a loop
  calling `tf.py_function` on a function returning two large NumPy arrays
  (1000 × 1000 × 20) grows memory without bound; a TF triager reproduced it
  on Colab with TF 2.6 and tf-nightly. Closed as stalled.
- tensorflow/tensorflow#35010 (Dec. 2019, TF 2.0): the same growth from
  eager `py_function` calls in a Keras layer; a later comment (TF 2.4) found
  `numpy_function` free of it.

A plain loop here (3 warm-ups, 12 repetitions of 10 eager `py_function`
calls returning a 1 MiB float32 array, Python 3.11) left 7 Python objects
per call on TF 2.13.1 and on TF 2.21.0, and kept 480 KiB (2.13.1) and 382
KiB (2.21.0) per repetition (RSS less malloc's free bytes). Through
leakbench, with 1 MiB batches, the leak read 56 objects (7 per call) and
held +324 to +512 KiB per repetition on every release measured, but the fix's
held memory stepped by about 1 MiB now and then (TensorFlow's pool for
tensors of 256 KiB and more grows in steps): +209 KiB per repetition in one
run on 2.12.1, turned away by its confirmation run. Batches of 128 KiB keep
the tensors out of that pool; the leak keeps the same ~45 KiB per call.

One repetition is one epoch: NUM_BATCHES batches of BATCH_SIZE elements of
ELEMENT_BYTES, each augmented by one eager call. The measurement should show
Python objects growing by several per batch, on every release.

Source: tensorflow/tensorflow#51839 (and #35010).
"""
import numpy as np
import tensorflow as tf

TITLE = "tf.py_function called eagerly on each batch in the training loop"
SOURCE = "tensorflow/tensorflow#51839"
REPETITION = "one epoch: NUM_BATCHES batches, one eager augmentation call each"
KIND = "growth"
SIZE_PARAM = "num_batches"
PARAMS = {"num_batches": 8}

ELEMENT_BYTES = 16 * 1024          # float32: 4,096 values
BATCH_SIZE = 8                     # a 128 KiB batch: under the 256 KiB from which TF's CPU
                                   # allocator serves tensors from a pool that grows in steps


def augment(batch):
    """Python augmentation: flip each example."""
    return np.flip(np.asarray(batch), axis=1).copy()


def setup(num_batches):
    ds = tf.data.Dataset.range(num_batches * BATCH_SIZE)
    ds = ds.map(lambda i: tf.fill([ELEMENT_BYTES // 4], tf.cast(i, tf.float32)))
    return ds.batch(BATCH_SIZE)


def repetition(ds):
    for batch in ds:
        tf.py_function(augment, [batch], tf.float32)
