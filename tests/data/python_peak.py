"""A peak scenario: setup builds a buffer of SIZE_BYTES bytes and keeps it in
the state (like a cache filled once), so the peak above the process before
setup scales with size_bytes, while repetitions add nothing. rep_seconds
makes each repetition last that long (a test that must see the buffer held)."""
import time

TITLE = "a buffer of size_bytes kept from setup on"
SOURCE = "caching"
REPETITION = "read the buffer's length"
KIND = "peak"
SIZE_PARAM = "size_bytes"
PARAMS = {"size_bytes": 25165824, "rep_seconds": 0.0}


def setup(size_bytes, rep_seconds):
    return {"buffer": b"x" * size_bytes, "rep_seconds": rep_seconds}  # b"x" * n writes every page


def repetition(state):
    len(state["buffer"])
    time.sleep(state["rep_seconds"])
