"""A fast leak for the memory cap: every repetition keeps BYTES_PER_REP more
bytes (64 MiB by default), forever. Only ever run it with a small cap."""
TITLE = "64 MiB kept per repetition"
SOURCE = "stateful functions"
REPETITION = "keep one more buffer"
KIND = "growth"
SIZE_PARAM = "bytes_per_rep"
PARAMS = {"bytes_per_rep": 67108864}

KEPT = []


def setup(bytes_per_rep):
    return bytes_per_rep


def repetition(bytes_per_rep):
    KEPT.append(b"x" * bytes_per_rep)  # b"x" * n writes every page, so RSS grows
