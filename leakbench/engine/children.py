"""This process's measured children (python -m leakbench.engine.child, each started by
leakbench.engine.runner in a session of its own): found, and stopped at once."""

from __future__ import annotations

import os
import signal

import psutil

from leakbench.engine.runner import CHILD_MODULE


def measured_children(pid: int | None = None) -> list[psutil.Process]:
    """The measured children (python -m CHILD_MODULE) of process `pid`, this one by default: not
    any other command it runs (record.environment's platform.processor() runs `uname -p`). A
    child that ends as it is looked at is left out."""
    found = []
    for child in psutil.Process(pid).children():
        try:
            if CHILD_MODULE in child.cmdline():
                found.append(child)
        except psutil.Error:
            pass
    return found


def stop_children() -> None:
    """Kill the session of every measured child this process started (runner.run_child starts
    each in its own session), so that their run_child calls return at once: for a Ctrl-C in a
    thread other than theirs (leakbench.history.rounds)."""
    for child in measured_children():
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
