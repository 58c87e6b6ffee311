"""A CPU hog: one busy process per core beside a repeatability run, so that the
table can show verdicts on a machine whose cores are all busy (`leakbench repeat
--cpu-hog`). Each busy process spins in pure Python, in its own session, and is
killed when the run ends; if the run is killed before it can do that (SIGTERM, SIGKILL), each
ends by itself within a moment, once its parent is gone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

# Spins while the process that started it lives (argv[1]: its pid): a killed parent runs no
# `finally`, and the loop would otherwise keep a core busy for good. Checked every ~10^6 steps.
SPIN = (
    "import os, sys\nwhile os.getppid() == int(sys.argv[1]):\n    for _ in range(1_000_000): pass"
)


@contextlib.contextmanager
def cpu_hog(processes: int) -> Iterator[list[int]]:
    """Run `processes` busy loops (0: none) for the duration of the block; yields their pids."""
    started = [
        subprocess.Popen(
            [sys.executable, "-c", SPIN, str(os.getpid())],
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
