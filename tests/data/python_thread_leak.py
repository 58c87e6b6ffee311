"""A thread leak: each repetition starts a thread that waits forever on an
event that is never set (like an iterator whose worker pool is never shut
down). Threads are daemons, so the interpreter can still exit."""
import threading

TITLE = "one waiting thread started per repetition"
SOURCE = "dangling references"
REPETITION = "start one thread"
KIND = "growth"
SIZE_PARAM = "threads_per_rep"
PARAMS = {"threads_per_rep": 1}


def setup(threads_per_rep):
    return {"n": threads_per_rep, "never": threading.Event(), "threads": []}


def repetition(state):
    for _ in range(state["n"]):
        t = threading.Thread(target=state["never"].wait, daemon=True)
        t.start()
        state["threads"].append(t)
