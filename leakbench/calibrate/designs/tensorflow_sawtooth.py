"""Calibration shape "sawtooth" (a control), held by TensorFlow: tensors kept, cleared every
`every` repetitions.

Each repetition iterates a one-element tf.data pipeline and keeps the tensor it yields; every
`every`th repetition the list is cleared. Memory rises and falls back. Not a leak.
"""

import tensorflow as tf

TITLE = "calibration (sawtooth, TF): tensors kept, cleared every `every` repetitions"
SOURCE = "dangling references"
REPETITION = "one epoch over a one-element dataset; keep its tensor; every `every`th, clear"
KIND = "growth"
SIZE_PARAM = "bytes_per_rep"
PARAMS = {"bytes_per_rep": 16384, "every": 8}


def setup(bytes_per_rep, every):
    dataset = tf.data.Dataset.range(1).map(
        lambda _: tf.fill([bytes_per_rep], tf.constant(1, tf.uint8))
    )
    return {"dataset": dataset, "kept": [], "every": every, "calls": 0}


def repetition(state):
    state["calls"] += 1
    for tensor in state["dataset"]:
        state["kept"].append(tensor)
    if state["calls"] % state["every"] == 0:
        state["kept"].clear()
