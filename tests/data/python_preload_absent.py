"""A scenario whose ENV preloads a library no machine has: the dynamic loader
would not find it, so nothing may run (setup raises) and the record reads
`skipped`, naming the library, not `error` (leakbench.engine.preload)."""
TITLE = "bytes under an allocator this machine lacks"
SOURCE = "stateful functions"
REPETITION = "nothing"
KIND = "growth"
SIZE_PARAM = "n"
PARAMS = {"n": 1}
ENV = {"LD_PRELOAD": "libleakbench_absent.so.1"}


def setup(n):
    raise AssertionError("setup ran although the preloaded library is missing")


def repetition(state):
    pass
