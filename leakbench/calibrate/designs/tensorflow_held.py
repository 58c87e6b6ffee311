"""Calibration: a designed leak of exactly `bytes_per_rep` bytes per repetition,
held by TensorFlow tensors.

Each repetition iterates a one-element tf.data pipeline whose `map` fills a
fresh uint8 tensor of BYTES_PER_REP bytes (allocated by TensorFlow's CPU
allocator, in C++), and appends the tensor it yields to a module-level list
that is never cleared. A new iterator per repetition is also the usual work of
an epoch loop: its threads come and go, which is the noise a real pipeline
brings. With `bytes_per_rep = 0` it is the control: the same pipeline, the
tensor dropped.

The measurement should show an RSS slope and a memray heap slope equal to
BYTES_PER_REP per repetition (plus the EagerTensor object, ~200 bytes).
"""

import tensorflow as tf

TITLE = "calibration: bytes_per_rep held by tf.data output tensors kept in a list"
SOURCE = "dangling references"
REPETITION = "one epoch over a one-element dataset; keep the tensor it yields (0: keep nothing)"
KIND = "growth"
SIZE_PARAM = "bytes_per_rep"
PARAMS = {"bytes_per_rep": 65536}  # 64 KiB; calibrate sets each size

KEPT: list = []  # never cleared: this is the leak


def setup(bytes_per_rep):
    dataset = tf.data.Dataset.range(1).map(
        lambda _: tf.fill([bytes_per_rep], tf.constant(1, tf.uint8))
    )
    return {"dataset": dataset, "keep": bytes_per_rep > 0}


def repetition(state):
    for tensor in state["dataset"]:
        if state["keep"]:
            KEPT.append(tensor)
