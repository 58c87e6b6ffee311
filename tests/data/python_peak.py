"""A peak scenario: setup builds a buffer of SIZE_BYTES bytes and keeps it in
the state (like a cache filled once), so the peak above the process before
setup scales with size_bytes, while repetitions add nothing."""
TITLE = "a buffer of size_bytes kept from setup on"
SOURCE = "caching"
REPETITION = "read the buffer's length"
KIND = "peak"
SIZE_PARAM = "size_bytes"
PARAMS = {"size_bytes": 25165824}


def setup(size_bytes):
    return {"buffer": b"x" * size_bytes}  # b"x" * n writes every page


def repetition(state):
    len(state["buffer"])
