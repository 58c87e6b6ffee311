"""Supervise one child process: spawn it in its own session, watch its whole
process tree's RSS against a cap and its wall time against a deadline, kill
the tree, and reap it with the kernel's account of its peak RSS.

The one supervisor of every process leakbench measures in: the engine's
child (leakbench.engine.runner) and the calibration's peers
(leakbench.calibrate.peers). The child side calls die_with_parent, so a
leak never goes on without its cap and timeout when the supervisor dies.
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

import leakbench
from leakbench.units import KIB

POLL_SECONDS = 0.05  # at 1 GB/s of allocation a run overshoots the cap by ~50 MB at most


def child_env(extra: dict | None = None) -> dict:
    """This process's environment for a child: leakbench importable, TensorFlow's banner off, `extra` on top."""
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TensorFlow's start-up banner out of logs
    package_parent = str(Path(leakbench.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    env.update(extra or {})
    return env


def die_with_parent(parent: int) -> None:
    """In the child: have the kernel SIGKILL this process when its supervisor dies (Linux
    prctl PR_SET_PDEATHSIG); exit at once if the supervisor `parent` is already gone."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return  # not Linux: the supervisor's kill in its `finally` is all there is
    if os.getppid() != parent:  # the supervisor died before the prctl took effect
        os._exit(1)


def tree_rss(pid: int) -> int:
    """RSS of a process and all its descendants, in bytes (0 once it is gone)."""
    try:
        root = psutil.Process(pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for proc in tree:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            pass
    return total


class Supervised:
    """A child in its own session (a kill reaches every process it starts).

    max_rss_bytes: the largest tree RSS seen by `over_limits`; peak_rss_bytes: the
    child's own peak RSS over its life from the kernel (wait4's ru_maxrss), once reaped.
    Raises OSError from Popen when the child cannot be started.
    """

    def __init__(self, argv: list[str], *, env: dict, stdout, stderr, pass_fds: tuple = ()):
        self.proc = subprocess.Popen(argv, pass_fds=pass_fds, stdin=subprocess.DEVNULL, stdout=stdout,
                                     stderr=stderr, start_new_session=True, env=env)
        self.started = time.monotonic()
        self.max_rss_bytes = 0
        self.peak_rss_bytes: int | None = None

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def over_limits(self, cap_bytes: int, deadline: float) -> str | None:
        """"over-cap" if the tree's RSS passed cap_bytes, "hang" past `deadline` (time.monotonic), else None."""
        rss = tree_rss(self.proc.pid)
        self.max_rss_bytes = max(self.max_rss_bytes, rss)
        if rss > cap_bytes:
            return "over-cap"
        return "hang" if time.monotonic() > deadline else None

    def reap(self, block: bool = False) -> bool:
        """Reap the child if it has exited (wait for it if `block`); True once it is reaped.

        wait4, not Popen.wait, keeps the kernel's account of the child's peak RSS
        (ru_maxrss, KiB on Linux: getrusage(2)): exact between polls and after a
        kill, where /proc of the child is gone.
        """
        if self.proc.returncode is not None:
            return True
        try:
            pid, status, usage = os.wait4(self.proc.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:  # reaped by someone else: nothing to read
            self.proc.returncode = -1
            return True
        if pid == 0:
            return False
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.peak_rss_bytes = usage.ru_maxrss * KIB
        return True

    def kill(self) -> None:
        """Kill the child's whole session, then reap it, so no process outlives a run."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.reap(block=True)

    def seconds(self) -> float:
        return time.monotonic() - self.started


def python(module: str, *args: str) -> list[str]:
    """argv running `python -m module args` with this interpreter."""
    return [sys.executable, "-m", module, *args]
