"""Writes on leakbench's message pipe (the child's config names its fd) what is no message."""
import json
import os
import sys

TITLE = "a scenario that writes garbage on the runner's pipe"
SOURCE = "stateful functions"
REPETITION = "write a line on the pipe"
KIND = "growth"
SIZE_PARAM = "size"
PARAMS = {"size": 1, "kind": 0}
LINES = [b"not json\n", b"[1, 2]\n", b"\xff\xfe\n", b"1" * 5000 + b"\n"]


def setup(size, kind):
    fd = json.loads(sys.argv[-1])["fd"]
    return {"fd": fd, "line": LINES[int(kind)]}


def repetition(state):
    os.write(state["fd"], state["line"])
