"""Calibration shape "rare steps": one block of `every` x bytes_per_rep bytes kept every
`every` repetitions.

A leak that grows only now and then, as a log or a history that keeps one large item per
epoch would: flat repetitions, then one step. BYTES_PER_REP per repetition on average;
0 is the control.
"""

TITLE = "calibration (rare steps): one block kept every `every` repetitions"
SOURCE = "dangling references"
REPETITION = "count the call; every `every`th, keep a bytearray of every x bytes_per_rep bytes"
KIND = "growth"
SIZE_PARAM = "bytes_per_rep"
PARAMS = {"bytes_per_rep": 16384, "every": 4}

KEPT: list[bytearray] = []  # never cleared: this is the leak


def setup(bytes_per_rep, every):
    return {"block": every * bytes_per_rep, "every": every, "calls": 0}


def repetition(state):
    state["calls"] += 1
    if state["block"] and state["calls"] % state["every"] == 0:
        KEPT.append(bytearray(state["block"]))
