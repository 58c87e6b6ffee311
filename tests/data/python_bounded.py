"""The bounded twin of python_leak.py: each repetition allocates BYTES_PER_REP
bytes into a deque that keeps only the last two, so memory stops growing
after two repetitions."""
from collections import deque

TITLE = "bytes appended to a bounded deque"
SOURCE = "stateful functions"
REPETITION = "append one bytearray"
KIND = "growth"
SIZE_PARAM = "bytes_per_rep"
PARAMS = {"bytes_per_rep": 1048576}


def setup(bytes_per_rep):
    return {"size": bytes_per_rep, "kept": deque(maxlen=2)}


def repetition(state):
    state["kept"].append(bytearray(b"x" * state["size"]))
