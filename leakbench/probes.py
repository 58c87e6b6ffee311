"""Process probes, read inside the measured child after each repetition.

Every value comes from psutil except the kernel's high-water mark (VmHWM),
which psutil does not expose; it is read from /proc/self/status and reset by
writing "5" to /proc/self/clear_refs (Linux >= 4.0, Documentation/filesystems/proc.rst).
"""
from __future__ import annotations

import functools
import gc
from pathlib import Path

import psutil

# Series sampled after every repetition, with their units.
SERIES_UNITS = {
    "rss_bytes": "bytes",
    "uss_bytes": "bytes",
    "heap_used_bytes": "bytes",  # glibc mallinfo2 via psutil.heap_info(): bytes in use in malloc's heap
    "mmap_used_bytes": "bytes",  # ... and in chunks malloc mapped on their own (large allocations)
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
        **_malloc_in_use(),
        "threads": process.num_threads(),
        "open_files": process.num_fds(),
        "python_objects": len(gc.get_objects()),
    }


def _malloc_in_use() -> dict:
    if malloc_heap_unavailable():
        return {"heap_used_bytes": None, "mmap_used_bytes": None}
    info = psutil.heap_info()
    return {"heap_used_bytes": info.heap_used, "mmap_used_bytes": info.mmap_used}


_REPLACEMENTS = ("jemalloc", "tcmalloc", "mimalloc")


@functools.lru_cache(maxsize=1)  # the allocator of a process does not change
def malloc_heap_unavailable() -> str | None:
    """Why glibc's malloc counters do not describe this process's heap, or None if they do.

    psutil.heap_info() reads glibc's mallinfo2(); with another allocator
    preloaded (jemalloc, tcmalloc), glibc's malloc is not the one in use and
    its counters stay near zero (../shared/FIELD-NOTES.md).
    """
    if not hasattr(psutil, "heap_info"):
        return "psutil has no heap_info() (needs psutil >= 7.2 on glibc)"
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return "no /proc/self/maps"
    for name in _REPLACEMENTS:
        if f"lib{name}" in maps:
            return f"lib{name} is loaded: glibc's mallinfo2 does not describe its heap"
    return None


def trim_malloc(process: psutil.Process) -> dict | None:
    """RSS before and after malloc_trim (psutil.heap_trim), in bytes; None where n/a.

    malloc_trim returns free pages of glibc's heap to the system. RSS growth
    that a trim gives back was never held by the program: it was freed memory
    the allocator kept (fragmentation), not a leak.
    """
    if malloc_heap_unavailable():
        return None
    gc.collect()
    before = process.memory_info().rss
    psutil.heap_trim()
    return {"rss_before_trim_bytes": before, "rss_after_trim_bytes": process.memory_info().rss}


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
