"""Calibration shape "one-off jump" (a control): one block of JUMP_FACTOR x bytes_per_rep bytes
kept once, in the middle of the first run.

Memory steps up once and stays: a buffer allocated lazily, a pool created on first use. Not a
leak: it never grows again.
"""

TITLE = "calibration (one-off jump, a control): one large block kept once, mid-run"
SOURCE = "dangling references"
REPETITION = "count the call; at call JUMP_AT keep one block of JUMP_FACTOR x bytes_per_rep"
KIND = "growth"
SIZE_PARAM = "bytes_per_rep"
PARAMS = {"bytes_per_rep": 16384}

JUMP_FACTOR = 32
JUMP_AT = 9  # 3 warm-ups, then the middle of a first run of 12
KEPT: list[bytearray] = []


def setup(bytes_per_rep):
    return {"size": JUMP_FACTOR * bytes_per_rep, "calls": 0}


def repetition(state):
    state["calls"] += 1
    if state["size"] and state["calls"] == JUMP_AT:
        KEPT.append(bytearray(state["size"]))
