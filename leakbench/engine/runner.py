"""Start one measured child process and watch it: memory cap, timeout, phases.

The child (leakbench.engine.child) is a fresh interpreter started with subprocess
(spawn semantics: nothing of this process, TensorFlow least of all, is forked).
It runs in its own session so that a kill reaches every process it started.
While it runs, this process polls the resident set size of the child's whole
process tree every POLL_SECONDS; past the cap the tree is killed and the run
ends `over-cap`; past the timeout it ends `hang`, naming the phase it was in.
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import psutil

import leakbench
from leakbench.units import KIB

POLL_SECONDS = 0.05  # at 1 GB/s of allocation a run overshoots the cap by ~50 MB at most
STDERR_TAIL_LINES = 12


@dataclass
class Outcome:
    """What one child run produced. status: ok, over-cap, hang, error or skipped."""

    status: str
    phase: str | None
    params: dict
    wall_seconds: float
    max_rss_bytes: int = 0                     # largest RSS of the child's tree the runner saw
    peak_rss_bytes: int | None = None          # the child's own peak RSS over its life, from the kernel
    result: dict | None = None                 # the child's "result" message
    samples: list = field(default_factory=list)  # samples received, also when the run was cut short
    teardown_seconds: float | None = None
    error: str | None = None
    missing_module: str | None = None
    device: dict | None = None                 # the child's "device" message (leakbench.engine.child._device)
    versions: dict | None = None               # ... and the versions it sent with it
    skipped: str | None = None                 # why the child measured nothing (REQUIRES a GPU, none visible)


def run_child(path: Path, params: dict, *, warmup: int, reps: int, heap_reps: int,
              cap_bytes: int, timeout_seconds: float, teardown_timeout_seconds: float = 30.0,
              env: dict | None = None, on_message: Callable[[dict], None] | None = None,
              child_options: dict | None = None, heap_file: Path | None = None) -> Outcome:
    """Measure scenario file `path` with `params` in a fresh, capped, timed process.

    cap_bytes: RSS of the child's process tree (bytes) past which it is killed.
    timeout_seconds: wall time for the whole child, import to teardown.
    teardown_timeout_seconds: once the child has sent its result, the time it
        has left to tear down and exit. Dropping hundreds of live tf.data
        iterators has stalled for minutes on TF 2.21 (../shared/FIELD-NOTES.md);
        the measurement is already in hand, so it need not wait that long.
    env: extra environment variables for the child (e.g. LD_PRELOAD).
    on_message: called with every message the child sends (progress).
    child_options: more keys for the child's config (leakbench check: "target", "diagnose").
    heap_file: where the heap pass writes its memray capture, kept for the
        caller; by default it goes into this run's temporary folder and is deleted.
    Never raises for anything the child does; returns an Outcome.
    """
    read_fd, write_fd = os.pipe()
    with tempfile.TemporaryDirectory(prefix="leakbench-") as tmp:
        config = {"path": str(Path(path).resolve()), "params": params, "warmup": warmup, "reps": reps,
                  "heap_reps": heap_reps, "heap_file": str(Path(heap_file).resolve() if heap_file else Path(tmp) / "heap.bin"),
                  "fd": write_fd, "parent": os.getpid(),
                  **(child_options or {})}
        log_path = Path(tmp) / "child.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "leakbench.engine.child", json.dumps(config)],
                pass_fds=(write_fd,), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                start_new_session=True, env=_child_env(env))
        os.close(write_fd)
        outcome = _watch(proc, read_fd, params, cap_bytes, timeout_seconds, teardown_timeout_seconds, on_message)
        if outcome.status == "error" and outcome.error is None:  # a crash: the log says why
            outcome.error = f"child exited with code {proc.returncode} during {outcome.phase}\n{_tail(log_path)}"
    return outcome


def _watch(proc, read_fd, params, cap_bytes, timeout_seconds, teardown_timeout_seconds, on_message) -> Outcome:
    outcome = Outcome(status="ok", phase=None, params=params, wall_seconds=0.0)
    start = time.monotonic()
    deadline = start + timeout_seconds
    selector = selectors.DefaultSelector()
    selector.register(read_fd, selectors.EVENT_READ)
    buffer = b""
    open_pipe = True
    try:
        while open_pipe:
            for _key, _ in selector.select(POLL_SECONDS):
                chunk = os.read(read_fd, 1 << 16)
                if not chunk:
                    open_pipe = False
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    message = json.loads(line)
                    _take(outcome, message, on_message)
                    if "result" in message:
                        deadline = min(deadline, time.monotonic() + teardown_timeout_seconds)
            rss = _tree_rss(proc.pid)
            outcome.max_rss_bytes = max(outcome.max_rss_bytes, rss)
            if rss > cap_bytes:
                outcome.status = "over-cap"
                break
            if time.monotonic() > deadline:
                outcome.status = "hang"
                break
            if _reap(proc, outcome) and not selector.select(0):
                break  # the child exited; a process it forked holds the pipe open: nothing more will come
    finally:
        selector.close()
        os.close(read_fd)
        if not open_pipe:  # the child closed its end: give it a moment to exit by itself
            grace = time.monotonic() + 5
            while not _reap(proc, outcome) and time.monotonic() < grace:
                time.sleep(POLL_SECONDS)
        _kill_tree(proc, outcome)
        outcome.wall_seconds = time.monotonic() - start
    if outcome.status == "ok":
        # Judged by what the child said, not its exit code: a kill after the
        # final message is ours, not the scenario's.
        finished = outcome.result is not None and outcome.teardown_seconds is not None
        if outcome.skipped and not outcome.error:
            outcome.status = "skipped"
        elif outcome.error or not finished:
            outcome.status = "error"
    return outcome


def _take(outcome: Outcome, message: dict, on_message) -> None:
    if "phase" in message:
        outcome.phase = message["phase"]
    if "sample" in message:
        outcome.samples.append(message["sample"])
    if "result" in message:
        outcome.result = message["result"]
    if "device" in message:
        outcome.device = message["device"]
        outcome.versions = message.get("versions")
    if "skipped" in message:
        outcome.skipped = message["skipped"]
        outcome.phase = None  # not cut short in a phase: nothing was to be measured
    if "teardown_seconds" in message:
        outcome.teardown_seconds = message["teardown_seconds"]
        outcome.phase = None
    if "error" in message:
        outcome.error = message["error"]
        outcome.missing_module = message.get("missing_module")
    if on_message:
        on_message(message)


def _tree_rss(pid: int) -> int:
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


def _kill_tree(proc: subprocess.Popen, outcome: Outcome | None = None) -> None:
    """Kill the child's whole session, then reap it, so no process outlives a run."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _reap(proc, outcome, block=True)


def _reap(proc: subprocess.Popen, outcome: Outcome | None, block: bool = False) -> bool:
    """Reap the child if it has exited (wait for it if `block`); True once it is reaped.

    Reaped with wait4, not Popen.wait, to keep the kernel's account of the
    child's peak RSS (ru_maxrss, KiB on Linux: getrusage(2)) in
    outcome.peak_rss_bytes (if an outcome is given): the exact peak, between
    the runner's polls too and after a kill, where /proc of the child is gone.
    """
    if proc.returncode is not None:
        return True
    try:
        pid, status, usage = os.wait4(proc.pid, 0 if block else os.WNOHANG)
    except ChildProcessError:  # reaped by someone else: nothing to read
        proc.returncode = -1
        return True
    if pid == 0:
        return False
    proc.returncode = os.waitstatus_to_exitcode(status)
    if outcome is not None:
        outcome.peak_rss_bytes = usage.ru_maxrss * KIB
    return True


def _child_env(extra: dict | None) -> dict:
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TensorFlow's start-up banner out of logs
    package_parent = str(Path(leakbench.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    env.update(extra or {})
    return env


def _tail(path: Path) -> str:
    lines = path.read_text(errors="replace").strip().splitlines()
    return "\n".join(lines[-STDERR_TAIL_LINES:])
