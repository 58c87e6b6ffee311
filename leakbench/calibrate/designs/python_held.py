"""Calibration: a designed leak of exactly `bytes_per_rep` bytes per repetition,
held by a Python object.

Each repetition builds one zero-filled `bytearray` of BYTES_PER_REP bytes (its
pages are written, so they count in RSS) and appends it to a module-level list
that is never cleared: the process keeps BYTES_PER_REP more bytes after every
repetition, plus the list slot and the bytearray header (~60 bytes). With
`bytes_per_rep = 0` it is the control: the same work, nothing kept.

The measurement should show an RSS slope and a memray heap slope equal to
BYTES_PER_REP per repetition. `leakbench calibrate` runs it at known sizes to
measure detection rate, bias and noise of each signal.
"""

TITLE = "calibration: bytes_per_rep kept in a Python list"
SOURCE = "dangling references"
REPETITION = "build one buffer of bytes_per_rep bytes and keep it (0: keep nothing)"
KIND = "growth"
SIZE_PARAM = "bytes_per_rep"
PARAMS = {"bytes_per_rep": 65536}  # 64 KiB; calibrate sets each size

KEPT: list[bytearray] = []  # never cleared: this is the leak


def setup(bytes_per_rep):
    return {"bytes_per_rep": bytes_per_rep}


def repetition(state):
    buffer = bytearray(state["bytes_per_rep"])
    if state["bytes_per_rep"]:
        KEPT.append(buffer)
