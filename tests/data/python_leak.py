"""A pure-Python leak for testing the engine without TensorFlow: each
repetition appends BYTES_PER_REP bytes to a module-level list."""
TITLE = "bytes appended to a global list"
SOURCE = "stateful functions"
REPETITION = "append one bytearray"
KIND = "growth"
SIZE_PARAM = "bytes_per_rep"
PARAMS = {"bytes_per_rep": 1048576}

KEPT = []


def setup(bytes_per_rep):
    return bytes_per_rep


def repetition(bytes_per_rep):
    KEPT.append(bytearray(b"x" * bytes_per_rep))
