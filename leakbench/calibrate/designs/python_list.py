"""Calibration shape "lumpy": one list grown by `bytes_per_rep` bytes of pointers per repetition.

Each repetition appends bytes_per_rep / 8 references to one shared object, so only the list's
pointer array grows (8 bytes a slot, no new objects). CPython over-allocates it (about 1/8 of
its size, list_resize) and glibc moves it as it grows: the growth comes in lumps. A leak of
BYTES_PER_REP per repetition on average; 0 is the control.
"""

from leakbench.calibrate import warm_heap

# a heap with free bytes, as a long-running process has; at import, so the baselines hold it
warm_heap.warm()

TITLE = "calibration (lumpy): one list grown by bytes_per_rep of pointers per repetition"
SOURCE = "dangling references"
REPETITION = "append bytes_per_rep / 8 references to one module-level list"
KIND = "growth"
SIZE_PARAM = "bytes_per_rep"
PARAMS = {"bytes_per_rep": 16384}

POINTER_BYTES = 8
KEPT: list = []  # never cleared: this is the leak


def setup(bytes_per_rep):
    return {"slots": [None] * (bytes_per_rep // POINTER_BYTES)}


def repetition(state):
    KEPT.extend(state["slots"])
