"""Calibration shape "sawtooth" (a control): a buffer list cleared every `every` repetitions.

Each repetition keeps one block of bytes_per_rep bytes; every `every`th repetition the list is
cleared: memory rises for `every` repetitions, falls back, and rises again. Not a leak.
"""

TITLE = "calibration (sawtooth, a control): blocks kept, cleared every `every` repetitions"
SOURCE = "dangling references"
REPETITION = "keep one block of bytes_per_rep bytes; every `every`th call, clear them all"
KIND = "growth"
SIZE_PARAM = "bytes_per_rep"
PARAMS = {"bytes_per_rep": 16384, "every": 8}


def setup(bytes_per_rep, every):
    return {"kept": [], "size": bytes_per_rep, "every": every, "calls": 0}


def repetition(state):
    state["calls"] += 1
    state["kept"].append(bytearray(state["size"]))
    if state["calls"] % state["every"] == 0:
        state["kept"].clear()
