"""A transient peak: each repetition builds a buffer of SIZE_BYTES bytes and
drops it, so nothing is kept, yet the peak during the work scales with size.
24 MiB is below glibc's largest dynamic mmap threshold (32 MiB), so after the
first free glibc serves the buffer from its heap and keeps the pages: a peak
measured from a baseline taken after warm-up would read ~0."""
TITLE = "a buffer of size_bytes built and dropped per repetition"
SOURCE = "caching"
REPETITION = "build and drop one buffer"
KIND = "peak"
SIZE_PARAM = "size_bytes"
PARAMS = {"size_bytes": 25165824}


def setup(size_bytes):
    return size_bytes


def repetition(size_bytes):
    data = b"x" * size_bytes
    del data
