"""Pure-Python check targets (no TensorFlow): one name per case of `leakbench check`."""
import time

KEPT = []
NOT_CALLABLE = 42


def leaky():
    """One repetition keeps 1 MiB for ever."""
    KEPT.append(bytearray(1 << 20))


def bounded():
    """One repetition allocates 1 MiB and drops it."""
    bytearray(1 << 20)


def raises():
    raise RuntimeError("the pipeline's own failure")


def hangs():
    time.sleep(3600)


def needs_arguments(size):
    return bytearray(size)
