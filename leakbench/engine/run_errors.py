"""The one-line errors of a child run that did not end well (leakbench.engine.runner): a hang, a
stall after the child's own error report, and a crash.

A child that ends without its last word (a crash, a signal, or a pipe the measured code closed or
replaced: leakbench.engine.child's ChannelLost) reads `error` in one line: how it ended, its
phase, the last line of its output, and the file that whole output (a traceback) is kept in, in
the system's temporary folder.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from pathlib import Path

LAST_LINE_CHARACTERS = 300  # of the child's output, told in a crash's one line


def no_progress(
    seconds: float, phase: str, timeout_seconds: float, last_sign: str, into: float
) -> str:
    """A hang before the result: no progress for `seconds` in `phase` (timeout_seconds per step),
    the last sign of progress `last_sign`, `into` seconds into the run."""
    return (
        f"no progress for {seconds_text(seconds)} in {phase} "
        f"(timeout_seconds {timeout_seconds:g} s per step): the last sign was "
        f"{last_sign}, {seconds_text(into)} into the run"
    )


def teardown_hang(seconds: float, teardown_timeout_seconds: float) -> str:
    """A hang after the result: the teardown not ended `seconds` after it."""
    return (
        f"teardown did not end within {seconds_text(seconds)} of the result "
        f"(teardown_timeout_seconds {teardown_timeout_seconds:g} "
        "s); the measurement is kept"
    )


def stalled(seconds: float) -> str:
    """Told after a child's own error when it then did not exit within `seconds` (its error
    stands: a kill after its report is ours)."""
    return f"; then it did not exit within {seconds_text(seconds)} and was killed"


def seconds_text(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"


def died(child, phase: str | None, log_path: Path, killed: bool, open_pipe: bool) -> str:
    """One line for a child that ended without its last word (result and teardown, error, or
    skip): how it ended, in which phase, the last line of its output (a traceback's is the
    exception), and the file its whole output is kept in (_kept_output)."""
    during = f"during {phase}" if phase else "before its first message"
    if killed and not open_pipe:
        # the measured code closed or replaced the pipe's descriptor, or the child stopped
        # writing and lingered: the pipe's end, not an exit, ended the run
        how = f"closed leakbench's message pipe {during} and was killed, still running"
    elif child.returncode is not None and child.returncode < 0:
        how = f"was killed by {_signal_name(-child.returncode)} {during}"
    else:
        how = f"exited with code {child.returncode} {during}"
    last = _last_line(log_path)
    if not last:
        return f"child {how}, with no output"
    kept = _kept_output(log_path)
    where = f" (its whole output is kept in {kept})" if kept else ""
    return f"child {how}: {last}{where}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _last_line(path: Path) -> str:
    """The last line of the child's output that holds anything, at most LAST_LINE_CHARACTERS, its
    control characters escaped; "" for none."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - (1 << 16)))
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in lines[-1])
    return shown if len(shown) <= LAST_LINE_CHARACTERS else shown[:LAST_LINE_CHARACTERS] + "…"


def _kept_output(log_path: Path) -> Path | None:
    """Move a crashed child's output (its stdout and stderr) out of the run's temporary folder,
    which is deleted, into a file of its own in the system's temporary folder
    (tempfile.gettempdir(): $TMPDIR, else /tmp), leakbench-child-XXXXXXXX.log, kept for the user;
    None where it cannot be."""
    try:
        fd, kept = tempfile.mkstemp(prefix="leakbench-child-", suffix=".log")
        os.close(fd)
        shutil.move(log_path, kept)
    except OSError:
        return None
    return Path(kept)
