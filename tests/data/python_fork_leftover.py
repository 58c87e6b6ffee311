"""A bounded scenario whose setup forks a process that outlives the child
(as a multiprocessing pool left running would). The fork inherits the
child's message pipe, so the pipe never reaches end-of-file while it lives:
the runner must still end the run when the child exits, with its results,
and kill the leftover. When LEAKBENCH_TEST_PIDFILE is set, the forked pid is
written there."""
import os
import time

TITLE = "a forked process left running after the child exits"
SOURCE = "dangling references"
REPETITION = "nothing"
KIND = "growth"
SIZE_PARAM = "seconds"
PARAMS = {"seconds": 3600}


def setup(seconds):
    pid = os.fork()
    if pid == 0:
        time.sleep(seconds)
        os._exit(0)
    pidfile = os.environ.get("LEAKBENCH_TEST_PIDFILE")
    if pidfile:
        with open(pidfile + ".tmp", "w") as f:
            f.write(str(pid))
        os.replace(pidfile + ".tmp", pidfile)
    return pid


def repetition(state):
    pass
