"""A setup that never returns. When LEAKBENCH_TEST_PIDFILE is set, setup first
starts a grandchild process (`sleep`) and writes its pid there, so a test can
check that the runner's kill reaches the child's whole process tree."""
import os
import subprocess
import time

TITLE = "a setup that sleeps for an hour, with a grandchild process"
SOURCE = "stateful functions"
REPETITION = "nothing"
KIND = "growth"
SIZE_PARAM = "seconds"
PARAMS = {"seconds": 3600}


def setup(seconds):
    pidfile = os.environ.get("LEAKBENCH_TEST_PIDFILE")
    if pidfile:
        grandchild = subprocess.Popen(["sleep", str(seconds)])
        with open(pidfile + ".tmp", "w") as f:
            f.write(str(grandchild.pid))
        os.replace(pidfile + ".tmp", pidfile)
    time.sleep(seconds)


def repetition(state):
    pass
