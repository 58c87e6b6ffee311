"""A repetition that never returns (sleeps an hour): the runner's timeout must
end it and report the phase it hung in."""
import time

TITLE = "a repetition that sleeps for an hour"
SOURCE = "stateful functions"
REPETITION = "sleep"
KIND = "growth"
SIZE_PARAM = "seconds"
PARAMS = {"seconds": 3600}


def setup(seconds):
    return seconds


def repetition(seconds):
    time.sleep(seconds)
