"""Calibration shape "rare steps", held by TensorFlow: one tensor of `every` x bytes_per_rep
bytes kept every `every` repetitions.

Each repetition iterates a one-element tf.data pipeline; every `every`th, the pipeline yields a
block of every x bytes_per_rep bytes and it is kept. BYTES_PER_REP per repetition on average;
0 is the control.
"""

import tensorflow as tf

TITLE = "calibration (rare steps, TF): one tensor kept every `every` repetitions"
SOURCE = "dangling references"
REPETITION = "one epoch over a one-element dataset; every `every`th, keep the tensor it yields"
KIND = "growth"
SIZE_PARAM = "bytes_per_rep"
PARAMS = {"bytes_per_rep": 16384, "every": 4}

KEPT: list = []  # never cleared: this is the leak


def setup(bytes_per_rep, every):
    block = every * bytes_per_rep
    dataset = tf.data.Dataset.range(1).map(lambda _: tf.fill([block], tf.constant(1, tf.uint8)))
    return {"dataset": dataset, "keep": block > 0, "every": every, "calls": 0}


def repetition(state):
    state["calls"] += 1
    for tensor in state["dataset"]:
        if state["keep"] and state["calls"] % state["every"] == 0:
            KEPT.append(tensor)
