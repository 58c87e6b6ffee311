"""Process probes, read inside the measured child after each repetition.

Every value comes from psutil except the kernel's high-water mark (VmHWM),
which psutil does not expose; it is read from /proc/self/status and reset by
writing "5" to /proc/self/clear_refs (Linux >= 4.0, Documentation/filesystems/proc.rst).
"""
from __future__ import annotations

import gc
from pathlib import Path

import psutil

# Series sampled after every repetition, with their units.
SERIES_UNITS = {
    "rss_bytes": "bytes",
    "uss_bytes": "bytes",
    "heap_used_bytes": "bytes",  # glibc mallinfo2 via psutil.heap_info(): bytes malloc holds in use
    "threads": "threads",
    "open_files": "file descriptors",
    "python_objects": "objects",
}

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def sample(process: psutil.Process) -> dict:
    """One sample of every series in SERIES_UNITS, after a full garbage collection.

    Collecting first means unreachable reference cycles are not counted as kept
    memory; `gc.get_objects()` counts objects tracked by the collector.
    Costs ~0.15 s in a process that imported TensorFlow (mostly gc.collect).
    """
    gc.collect()
    mem = process.memory_full_info()
    return {
        "rss_bytes": mem.rss,
        "uss_bytes": mem.uss,
        "heap_used_bytes": _heap_used(),
        "threads": process.num_threads(),
        "open_files": process.num_fds(),
        "python_objects": len(gc.get_objects()),
    }


def _heap_used() -> int | None:
    try:
        return psutil.heap_info().heap_used
    except (AttributeError, OSError):  # not glibc, or psutil < 7.2
        return None


def reset_high_water_mark() -> bool:
    """Reset VmHWM to the current RSS; False where the kernel does not allow it."""
    try:
        _CLEAR_REFS.write_text("5")
        return True
    except OSError:
        return False


def high_water_mark_bytes() -> int | None:
    """The kernel's peak RSS of this process since start or the last reset (VmHWM), in bytes."""
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None
