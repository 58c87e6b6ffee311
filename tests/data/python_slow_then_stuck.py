"""Each repetition sleeps `seconds`, until the `stuck_at`-th call, which sleeps an hour."""
import time

TITLE = "steady slow repetitions, then a stuck one"
SOURCE = "stateful functions"
REPETITION = "sleep"
KIND = "growth"
SIZE_PARAM = "seconds"
PARAMS = {"seconds": 1.0, "stuck_at": 1000}


def setup(seconds, stuck_at):
    return {"seconds": seconds, "stuck_at": stuck_at, "calls": 0}


def repetition(state):
    state["calls"] += 1
    time.sleep(3600 if state["calls"] >= state["stuck_at"] else state["seconds"])
