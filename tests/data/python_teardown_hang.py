"""Leaks 1 MiB per repetition, then stalls when its state is dropped, as
destroying many live tf.data iterators can on TF 2.21."""
import time

TITLE = "a leak whose teardown stalls"
SOURCE = "dangling references"
REPETITION = "append one bytearray"
KIND = "growth"
SIZE_PARAM = "bytes_per_rep"
PARAMS = {"bytes_per_rep": 1048576}


class Stalls:
    def __init__(self):
        self.kept = []

    def __del__(self):
        time.sleep(3600)


def setup(bytes_per_rep):
    return Stalls(), bytes_per_rep


def repetition(state):
    stalls, size = state
    stalls.kept.append(bytearray(size))
