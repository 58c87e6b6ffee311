"""Calibration shape "one-off jump" (a control), held by TensorFlow: one tensor of
JUMP_FACTOR x bytes_per_rep bytes kept once, in the middle of the first run.

Each repetition iterates a one-element tf.data pipeline; at call JUMP_AT a second pipeline
yields the large tensor and it is kept. Memory steps up once and stays. Not a leak.
"""

import tensorflow as tf

TITLE = "calibration (one-off jump, TF): one large tensor kept once, mid-run"
SOURCE = "dangling references"
REPETITION = "one epoch over a one-element dataset; at call JUMP_AT keep one large tensor"
KIND = "growth"
SIZE_PARAM = "bytes_per_rep"
PARAMS = {"bytes_per_rep": 16384}

JUMP_FACTOR = 32
JUMP_AT = 9  # 3 warm-ups, then the middle of a first run of 12
KEPT: list = []


def setup(bytes_per_rep):
    size = JUMP_FACTOR * bytes_per_rep
    small = tf.data.Dataset.range(1).map(lambda _: tf.fill([16], tf.constant(1, tf.uint8)))
    large = tf.data.Dataset.range(1).map(lambda _: tf.fill([size], tf.constant(1, tf.uint8)))
    return {"small": small, "large": large, "keep": size > 0, "calls": 0}


def repetition(state):
    state["calls"] += 1
    for _ in state["small"]:
        pass
    if state["keep"] and state["calls"] == JUMP_AT:
        KEPT.extend(state["large"])
