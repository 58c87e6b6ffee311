"""A repetition that kills its own interpreter without a Python exception
(like a segfault in native code): the run must end `error`, with the exit code
and the tail of the child's output."""
import os
import sys

TITLE = "a repetition that exits the interpreter"
SOURCE = "stateful functions"
REPETITION = "exit"
KIND = "growth"
SIZE_PARAM = "code"
PARAMS = {"code": 7}


def setup(code):
    return code


def repetition(code):
    sys.stderr.write("native code says goodbye\n")
    sys.stderr.flush()
    os._exit(code)
