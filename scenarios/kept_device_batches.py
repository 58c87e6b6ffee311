"""Batches kept in a Python list after prefetch_to_device stay in GPU memory.

`tf.data.experimental.prefetch_to_device("/GPU:0", buffer_size=2)` ends the
pipeline: each batch is copied to the GPU ahead of the step that needs it,
and two wait there. The loop keeps every batch it saw, to replay the one that
produced a NaN loss. A batch from this pipeline is a GPU tensor, so every
reference in the list keeps its buffer allocated in TensorFlow's GPU
allocator: GPU memory grows by one batch per step until the allocator fails
with ResourceExhaustedError ("OOM when allocating tensor"). Host memory
hardly moves: RSS, glibc's heap and memray see nothing; only the GPU
allocator's bytes in use (tf.config.experimental.get_memory_info) grow.

One repetition is one epoch of `steps` batches of `batch_kib` KiB. On a GPU
the record's `gpu` signal should move by about steps × batch_kib KiB per
repetition (8 MiB at the defaults). With no GPU visible to TensorFlow the pair is
skipped (REQUIRES = "GPU"). Untested on a GPU: it was written on a machine
without one.

Seed source: dangling references (a device tensor kept across steps, as
`losses.append(loss)` instead of `float(loss)` in an eager training loop).
"""
import numpy as np
import tensorflow as tf

TITLE = "keeps every batch that prefetch_to_device put on the GPU"
SOURCE = "dangling references"
REPETITION = "one epoch: `steps` batches copied to the GPU"
KIND = "growth"
SIZE_PARAM = "steps"
PARAMS = {"steps": 8, "batch_kib": 1024}
REQUIRES = "GPU"

DEVICE = "/GPU:0"
BUFFER_SIZE = 2                    # batches waiting on the GPU ahead of the loop
FEATURES = 256                     # float32: 1 KiB per row


def setup(steps, batch_kib):
    rows = batch_kib                # 1 KiB per row
    data = np.random.default_rng(0).random((steps * rows, FEATURES), dtype=np.float32)
    ds = tf.data.Dataset.from_tensor_slices(data).batch(rows)
    ds = ds.apply(tf.data.experimental.prefetch_to_device(DEVICE, buffer_size=BUFFER_SIZE))
    return {"dataset": ds, "seen": []}


def repetition(state):
    for batch in state["dataset"]:
        loss = tf.reduce_mean(tf.square(batch))   # the training step
        if tf.math.is_nan(loss):
            raise FloatingPointError("NaN loss")
        state["seen"].append(batch)
