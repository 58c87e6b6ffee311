"""A CPU hog: one busy process per core beside a repeatability run, so that the
table can show verdicts on a machine whose cores are all busy (`leakbench repeat
--cpu-hog`). Each busy process spins in pure Python, in its own session, and is
killed when the run ends, however it ends.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

SPIN = "while True: pass"


@contextlib.contextmanager
def cpu_hog(processes: int) -> Iterator[list[int]]:
    """Run `processes` busy loops (0: none) for the duration of the block; yields their pids."""
    started = [
        subprocess.Popen(
            [sys.executable, "-c", SPIN],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for _ in range(processes)
    ]
    try:
        yield [p.pid for p in started]
    finally:
        for p in started:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
