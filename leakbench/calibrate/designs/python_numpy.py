"""Calibration shape "lumpy": a numpy buffer that grows by a quarter when full.

The usual way to append to an array: keep a capacity, and when the data outgrows it copy into
a new array GROWTH times larger (np.empty, then a slice copy). malloc's bytes in use jump at
each move; the pages are touched as data is written. Each repetition writes bytes_per_rep
bytes. A leak of BYTES_PER_REP per repetition on average; 0 is the control.
"""

import numpy as np

from leakbench.calibrate import warm_heap

# a heap with free bytes, as a long-running process has; at import, so the baselines hold it
warm_heap.warm()

TITLE = "calibration (lumpy): a numpy buffer grown by a quarter when full"
SOURCE = "dangling references"
REPETITION = "write bytes_per_rep bytes at the end of a buffer, growing it 1.25x when full"
KIND = "growth"
SIZE_PARAM = "bytes_per_rep"
PARAMS = {"bytes_per_rep": 16384}

GROWTH = 1.25


def setup(bytes_per_rep):
    return {"buffer": np.empty(4 * bytes_per_rep, np.uint8), "used": 0, "step": bytes_per_rep}


def repetition(state):
    used, step = state["used"], state["step"]
    if used + step > len(state["buffer"]):
        bigger = np.empty(int((used + step) * GROWTH), np.uint8)
        bigger[:used] = state["buffer"][:used]
        state["buffer"] = bigger  # the old buffer is freed: the data moved
    state["buffer"][used : used + step] = 1
    state["used"] = used + step
