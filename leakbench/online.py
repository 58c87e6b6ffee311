"""Samples taken in the user's process, for the online judge (analysis.judge.sequential).

Used by leakbench.watch (custom loops) and leakbench.keras (the callback), which hand each sample
to the judge. It joins the engine's probes (leakbench.engine.probes) and the analysis's judge, as
leakbench.measure joins the engine's child runs and the analysis (docs/layout.md).

What a sample reads (`sample`): held memory (RssAnon less glibc malloc's free bytes,
probes.held_bytes; RssAnon is psutil's rss - shared, /proc/self/statm), RSS, malloc's bytes in
use (psutil.heap_info), threads and open file descriptors: the cheap reads, about 0.1 ms. A full
sample also runs a full garbage collection first, reads pymalloc's bytes (and so the bytes
malloc and pymalloc handed out, probes.allocated) and counts Python objects (the objects the
collector tracks, frozen ones included): 0.1-0.6 s with TensorFlow imported, so the watcher
takes it only as often as its budget allows (leakbench.watch); the series it alone fills are
read over the samples that have them, per sample. USS and memray's heap are not read.
"""

from __future__ import annotations

import gc

import psutil

from leakbench.engine import probes

_NOT_READ = {"pymalloc_used_bytes": None, "allocated_bytes": None}


def sample(process: psutil.Process, objects: bool = True, full: bool = True) -> dict:
    """One sample of SAMPLED: bytes and counts. full: run a full garbage collection first
    (gc.collect), read pymalloc's bytes (sys._debugmallocstats, 0.5-25 ms) and count Python
    objects (where `objects`); else those three are None, and the sample costs about 0.1 ms.

    held_bytes: RssAnon (psutil rss − shared) less mallinfo2's fordblks (probes.held_bytes),
    None under another allocator; malloc_used_bytes: heap_used + mmap_used (psutil.heap_info),
    None likewise; pymalloc_used_bytes and allocated_bytes: probes.allocated; python_objects:
    len(gc.get_objects()) + gc.get_freeze_count().
    """
    if full:
        gc.collect()
    mem = process.memory_info()
    unavailable = probes.malloc_heap_unavailable()
    free = None if unavailable else probes.heap_free_bytes()
    info = None if unavailable else psutil.heap_info()
    malloc_used = info.heap_used + info.mmap_used if info else None
    counted = full and objects
    return {
        "held_bytes": probes.held_bytes(mem.rss - mem.shared, free),
        "rss_bytes": mem.rss,
        "malloc_used_bytes": malloc_used,
        **(probes.allocated(malloc_used) if full else _NOT_READ),
        "threads": process.num_threads(),
        "open_files": process.num_fds(),
        "python_objects": len(gc.get_objects()) + gc.get_freeze_count() if counted else None,
    }
