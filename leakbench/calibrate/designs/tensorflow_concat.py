"""Calibration shape "lumpy", held by TensorFlow: one tensor grown by `bytes_per_rep` bytes per
repetition with tf.concat.

Each repetition iterates a one-element tf.data pipeline that yields a fresh uint8 tensor of
bytes_per_rep bytes, and concatenates it onto one kept tensor: TensorFlow allocates the larger
tensor and frees the old one, as a growing vector of TensorFlow's own does. The block moves
every repetition, through the heap and past glibc's mmap threshold. A leak of BYTES_PER_REP per
repetition; 0 is the control (the same pipeline, the tensor dropped).
"""

import tensorflow as tf

TITLE = "calibration (lumpy, TF): one tensor grown with tf.concat by bytes_per_rep per repetition"
SOURCE = "dangling references"
REPETITION = "one epoch over a one-element dataset; concatenate its tensor onto the kept one"
KIND = "growth"
SIZE_PARAM = "bytes_per_rep"
PARAMS = {"bytes_per_rep": 16384}

KEPT = {"tensor": tf.zeros([0], tf.uint8)}  # never cleared: this is the leak


def setup(bytes_per_rep):
    dataset = tf.data.Dataset.range(1).map(
        lambda _: tf.fill([bytes_per_rep], tf.constant(1, tf.uint8))
    )
    return {"dataset": dataset, "keep": bytes_per_rep > 0}


def repetition(state):
    for tensor in state["dataset"]:
        if state["keep"]:
            KEPT["tensor"] = tf.concat([KEPT["tensor"], tensor], 0)
