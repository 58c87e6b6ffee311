"""A pair that needs a GPU (REQUIRES = "GPU") and never imports TensorFlow:
with no GPU visible it must read `skipped` before setup runs (setup raises)."""
TITLE = "needs a GPU"
SOURCE = "dangling references"
REPETITION = "nothing"
KIND = "growth"
SIZE_PARAM = "n"
PARAMS = {"n": 1}
REQUIRES = "GPU"


def setup(n):
    raise AssertionError("setup ran although no GPU is visible")


def repetition(state):
    pass
