"""Calibration shape "bounded cache" (a control), held by TensorFlow: a dict of `entries`
tensors keyed by the call count modulo `entries`.

Each repetition iterates a one-element tf.data pipeline and stores the tensor it yields under
`calls % entries`, replacing (and freeing) the one stored `entries` calls before: a user's
cache keyed by `step % k`. It grows by bytes_per_rep per repetition until full, then holds
steady. Not a leak.
"""

import tensorflow as tf

TITLE = "calibration (bounded cache, TF): a dict of `entries` tensors keyed by step % entries"
SOURCE = "caching"
REPETITION = "one epoch over a one-element dataset; store its tensor under calls % entries"
KIND = "growth"
SIZE_PARAM = "bytes_per_rep"
PARAMS = {"bytes_per_rep": 16384, "entries": 6}


def setup(bytes_per_rep, entries):
    dataset = tf.data.Dataset.range(1).map(
        lambda _: tf.fill([bytes_per_rep], tf.constant(1, tf.uint8))
    )
    return {"dataset": dataset, "cache": {}, "entries": entries, "calls": 0}


def repetition(state):
    state["calls"] += 1
    for tensor in state["dataset"]:
        state["cache"][state["calls"] % state["entries"]] = tensor
