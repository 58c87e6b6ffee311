"""The bounded twin of python_peak.py: setup keeps a buffer of a fixed 24 MiB
whatever size_bytes is, so the peak does not scale with size."""
TITLE = "a fixed-size buffer kept from setup on"
SOURCE = "caching"
REPETITION = "read the buffer's length"
KIND = "peak"
SIZE_PARAM = "size_bytes"
PARAMS = {"size_bytes": 25165824}

FIXED_BYTES = 25165824


def setup(size_bytes):
    return {"buffer": b"x" * FIXED_BYTES}


def repetition(state):
    len(state["buffer"])
