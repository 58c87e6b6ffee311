"""Calibration shape "a block that moves": a growing bytearray that moves mid-run.

As python_bytearray.py, a bytearray extended by bytes_per_rep per repetition, set up in a heap
that holds a large free hole, already resident (written, then freed; a chunk in use after it
keeps glibc from trimming it). When the block can no longer grow in place, glibc moves it,
whole, into that hole (about call CROSS_AT: a confirmation run's later half), and held memory
(RssAnon less malloc's free bytes) jumps by megabytes in one repetition, as the hole's free
bytes become bytes in use. Past THRESHOLD_BYTES (mallopt's M_MMAP_THRESHOLD, fixed so that
glibc does not move it) the block later moves to a mapping of its own. A leak of BYTES_PER_REP
per repetition on average; 0 is the control.
"""

import ctypes

from leakbench.calibrate import warm_heap

# a heap with free bytes, as a long-running process has; at import, so the baselines hold it
warm_heap.warm()

TITLE = "calibration (mmap move): a growing bytearray crosses the mmap threshold mid-run"
SOURCE = "dangling references"
REPETITION = "extend one module-level bytearray by bytes_per_rep zero bytes"
KIND = "growth"
SIZE_PARAM = "bytes_per_rep"
PARAMS = {"bytes_per_rep": 16384}

M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)
THRESHOLD_BYTES = 4 * 1024 * 1024
CROSS_AT = 30  # calls of repetition() before the block crosses the threshold
HOLE_BYTES = 2 * THRESHOLD_BYTES  # a resident free hole the block grows into

KEPT = bytearray()  # never cleared: this is the leak
WALL: list = []  # keeps the hole from being trimmed away


def setup(bytes_per_rep):
    ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, THRESHOLD_BYTES)
    hole = bytearray(HOLE_BYTES)  # written, so resident; freed below, a chunk in use after it
    WALL.append(bytearray(4096))
    start = max(THRESHOLD_BYTES - CROSS_AT * bytes_per_rep, 0) if bytes_per_rep else 0
    del hole
    KEPT.extend(bytes(start))  # set up, before the baseline: not part of the growth
    return {"chunk": bytes(bytes_per_rep)}


def repetition(state):
    KEPT.extend(state["chunk"])
