"""Calibration shape "lumpy": one bytearray grown by `bytes_per_rep` bytes per repetition.

CPython over-allocates a growing bytearray (about 1/8 of its size, PyByteArray_Resize) and
moves it when glibc cannot extend it in place, so the process's memory grows in lumps: flat
repetitions, then a rise of several repetitions' worth. Past glibc's mmap threshold the block
moves to a mapping of its own, and held memory can drop as the old heap chunk becomes free
bytes (mallopt(3), M_MMAP_THRESHOLD). The average growth is exactly BYTES_PER_REP per
repetition: a leak. With `bytes_per_rep = 0` it is the control.
"""

from leakbench.calibrate import warm_heap

# a heap with free bytes, as a long-running process has; at import, so the baselines hold it
warm_heap.warm()

TITLE = "calibration (lumpy): one bytearray extended by bytes_per_rep per repetition"
SOURCE = "dangling references"
REPETITION = "extend one module-level bytearray by bytes_per_rep zero bytes"
KIND = "growth"
SIZE_PARAM = "bytes_per_rep"
PARAMS = {"bytes_per_rep": 16384}

KEPT = bytearray()  # never cleared: this is the leak


def setup(bytes_per_rep):
    return {"chunk": bytes(bytes_per_rep)}


def repetition(state):
    KEPT.extend(state["chunk"])
