"""Process probes, read inside the measured child after each repetition.

Every value comes from psutil except the kernel's high-water mark (VmHWM),
which psutil does not expose; it is read from /proc/self/status and reset by
writing "5" to /proc/self/clear_refs (Linux >= 4.0, Documentation/filesystems/proc.rst).

Where TensorFlow sees a GPU, the GPU allocator's bytes in use
(leakbench.engine.gpu) join every sample.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import os
import re
import sys
import tempfile
from pathlib import Path

import psutil

from leakbench.metrics import SERIES_UNITS
from leakbench.units import KIB

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def sample(process: psutil.Process, gpu=None) -> dict:
    """One sample of every series in leakbench.metrics.SERIES, after a full garbage collection.

    Collecting first means unreachable reference cycles are not counted as kept
    memory. python_objects counts the objects the collector tracks, the frozen
    ones included (`gc.get_objects()` skips them; the child freezes what the
    import made, see leakbench.engine.child): a sample with TensorFlow imported costs a
    full collection, cheap once the import is frozen and many times dearer if not
    (docs/measurements.md, "TensorFlow").
    gpu: the GPU to read (Gpu.find()); None leaves gpu_current_bytes None.
    """
    gc.collect()
    mem = process.memory_full_info()
    malloc = _malloc_in_use()
    anon = mem.rss - mem.shared
    found = {
        "held_bytes": held_bytes(anon, malloc["heap_free_bytes"]),
        "rss_bytes": mem.rss,
        "rss_anon_bytes": anon,
        "uss_bytes": mem.uss,
        **malloc,
        **allocated(malloc["malloc_used_bytes"]),
        "threads": process.num_threads(),
        "open_files": process.num_fds(),
        "python_objects": len(gc.get_objects()) + gc.get_freeze_count(),
        "gpu_current_bytes": gpu.current_bytes() if gpu else None,
    }
    assert found.keys() == SERIES_UNITS.keys(), "leakbench.metrics.SERIES and the probes disagree"
    return found


def _malloc_in_use() -> dict:
    if malloc_heap_unavailable():
        return {
            "heap_used_bytes": None,
            "mmap_used_bytes": None,
            "malloc_used_bytes": None,
            "heap_free_bytes": None,
        }
    info = psutil.heap_info()
    return {
        "heap_used_bytes": info.heap_used,
        "mmap_used_bytes": info.mmap_used,
        "malloc_used_bytes": info.heap_used + info.mmap_used,
        "heap_free_bytes": heap_free_bytes(),
    }


def allocated(malloc_used: int | None) -> dict:
    """pymalloc_used_bytes (pymalloc_used_bytes()) and allocated_bytes: it plus malloc_used
    (bytes, malloc's bytes in use), None where either is."""
    small = pymalloc_used_bytes()
    both = None if small is None or malloc_used is None else malloc_used + small
    return {"pymalloc_used_bytes": small, "allocated_bytes": both}


_ALLOCATED_BLOCKS = re.compile(rb"# bytes in allocated blocks\s*=\s*([\d,]+)")


def pymalloc_used_bytes() -> int | None:
    """Bytes in the blocks CPython's small-object allocator (pymalloc) has handed out, or None.

    Objects of 512 bytes or less (ints, floats, small tuples, a dict's small tables) live in
    pymalloc's arenas, which CPython maps itself: malloc's counters never see them, and a dict
    that gains int keys grows there steadily while malloc sees only its table's lumps
    (docs/verdicts.md, "Longer looks"). The number is the "# bytes in allocated blocks" line of
    sys._debugmallocstats (CPython's own accounting; Objects/obmalloc.c), which writes to the C
    stderr: that descriptor points at a temporary file for the call (0.5-25 ms here; a line
    another thread writes meanwhile lands there too). 0 where pymalloc is off
    (PYTHONMALLOC=malloc: small objects come from malloc, in its counters); None without
    sys._debugmallocstats (not CPython).
    """
    stats = getattr(sys, "_debugmallocstats", None)
    if stats is None:
        return None
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as out:
            os.dup2(out.fileno(), 2)
            try:
                stats()
            finally:
                os.dup2(saved, 2)
            out.seek(0)
            found = _ALLOCATED_BLOCKS.search(out.read())
    finally:
        os.close(saved)
    return int(found.group(1).replace(b",", b"")) if found else 0


class _Mallinfo2(ctypes.Structure):
    """glibc's struct mallinfo2 (malloc.h, glibc >= 2.33), every field a size_t."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


@functools.lru_cache(maxsize=1)
def _mallinfo2():
    try:
        function = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):  # not glibc, or older than 2.33
        return None
    function.restype = _Mallinfo2
    return function


def held_bytes(rss_anon: int, free: int | None) -> int | None:
    """Held memory: anonymous RSS less the free bytes glibc malloc keeps (bytes), or None.

    rss_anon: RssAnon in bytes (psutil: rss - shared, i.e. /proc/PID/statm's
    resident less its file-backed and shmem pages). free: mallinfo2 fordblks
    (heap_free_bytes), None where glibc is not the allocator.

    What a process holds, without what its allocator keeps: every live malloc
    chunk (TensorFlow's tensors, buffers and graphs), Python's object arenas
    (mmapped by obmalloc, outside malloc) and thread stacks, but not the freed
    chunks glibc keeps for reuse. The fixes' RSS wanders by MiB per repetition, all of it
    malloc's free bytes, while this series stays within a few KiB and a leak keeps its
    whole size in it (docs/measurements.md, "Held memory").

    Limits: fordblks counts free bytes whether or not they are resident. Free
    chunks in pages the kernel never backed, or gave back (malloc_trim
    MADV_DONTNEEDs whole free pages inside the heap), are subtracted all the
    same, so after a trim this series reads low by what the trim released:
    the engine trims only after the measured repetitions. Under another
    allocator (jemalloc, tcmalloc preloaded) fordblks does not describe the
    heap: None, and the verdict falls back to RSS (leakbench.analysis.judge.verdict).
    """
    return None if free is None else rss_anon - free


def heap_free_bytes() -> int | None:
    """Free bytes glibc malloc keeps in all its arenas (mallinfo2's fordblks), or None.

    psutil.heap_info() reports the bytes in use (uordblks) and mmapped
    (hblkhd) but not this. RSS growth that is fragmentation is memory malloc
    keeps as free: this rises with it. A leak does not raise it.
    """
    function = _mallinfo2()
    return int(function().fordblks) if function else None


_REPLACEMENTS = ("jemalloc", "tcmalloc", "mimalloc")


@functools.lru_cache(maxsize=1)  # the allocator of a process does not change
def malloc_heap_unavailable() -> str | None:
    """Why glibc's malloc counters do not describe this process's heap, or None if they do.

    psutil.heap_info() reads glibc's mallinfo2(); with another allocator
    preloaded (jemalloc, tcmalloc), glibc's malloc is not the one in use and
    its counters stay near zero (docs/measurements.md, "psutil and glibc malloc").
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
                return int(line.split()[1]) * KIB  # "kB" in /proc is KiB
    except OSError:
        pass
    return None
