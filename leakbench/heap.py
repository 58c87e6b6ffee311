"""The heap pass: repetitions under memray, and the heap at each repetition's end.

memray intercepts malloc/free (and mmap/munmap) of the whole process, so
TensorFlow's C++ allocations count. It only sees allocations made while
tracking, so the heap starts at 0 bytes.

Why markers and not memray's memory snapshots: snapshots come from a
background thread every `memory_interval_ms`; on a loaded machine that thread
can miss a repetition's end, a stale value ties two points of a six-point
series, and a real leak then fails the trend test (seen in CI). Instead each
repetition ends with one allocation of a size nothing else uses, made and
freed in `_heap_marker`; replaying memray's allocation stream (in the order
memray wrote it) gives the bytes live at each marker, exactly.
"""
from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

from leakbench import diagnose

MARKER_BYTES = 1_000_003  # bytearray(n) allocates n + 1 bytes; an odd size no pipeline asks for
_MARKER_FUNCTION = "_heap_marker"


def _heap_marker() -> None:
    bytearray(MARKER_BYTES)


def heap_pass(module, state, reps: int, path: Path) -> dict:
    """Run `reps` repetitions of `module` under memray, tracking into `path`.

    Returns heap_bytes (shape (reps,), bytes live at each repetition's end,
    after a garbage collection), heap_high_water_mark_bytes and
    retained_bytes (memray's peak and bytes still live when tracking
    stopped), allocations (count) and top_stacks (leakbench.diagnose).
    """
    import memray

    path.unlink(missing_ok=True)
    with memray.Tracker(path, native_traces=False):
        for _ in range(reps):
            module.repetition(state)
            gc.collect()
            _heap_marker()
    reader = memray.FileReader(path)
    live = list(reader.get_leaked_allocation_records(merge_threads=True))
    return {
        "heap_bytes": heap_at_markers(reader.get_allocation_records()),
        "heap_high_water_mark_bytes": reader.metadata.peak_memory,
        "retained_bytes": sum(r.size for r in live),
        "allocations": reader.metadata.total_allocations,
        "top_stacks": diagnose.heap_stacks(live),
    }


def render_flamegraph(capture: Path, out: Path, timeout_seconds: float = 300.0) -> str | None:
    """Write memray's flame graph of the allocations still live when tracking
    stopped (`memray flamegraph --leaks`) of the heap pass's `capture` to `out`.

    Uses memray's documented command line, in its own process. The HTML loads
    its scripts (d3, plotly, jQuery, Bootstrap) from CDNs; `--no-web` would
    inline them, ~4.5 MB per file, so `leakbench site` points them at one
    local copy instead. The capture was made with pymalloc on: small Python
    objects show as the pymalloc arenas that hold them (memray's page says so).
    Returns None when written, else why not (one line).
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "memray", "flamegraph", "--leaks", "--force", "--output", str(out), str(capture)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_seconds)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"memray flamegraph did not finish: {e}"
    if done.returncode != 0 or not out.is_file():
        last = (done.stderr or done.stdout).strip().splitlines()
        return f"memray flamegraph failed: {last[-1] if last else done.returncode}"
    return None


def heap_at_markers(records) -> list[int]:
    """Replay memray AllocationRecords in stream order; return the live bytes
    just before each marker allocation (so the marker itself never counts).

    memray records realloc as a free of the old address then an allocation of
    the new one. munmap of a mapping's start is honoured (whole or leading
    part); an unmap of an interior range is ignored, which can only overstate
    the heap of code that unmaps pieces of its own mappings.
    """
    from memray import AllocatorType as A

    frees = {A.FREE, A.PYMALLOC_FREE}
    live: dict[int, int] = {}
    maps: dict[int, int] = {}
    heap = 0
    marks = []
    for rec in records:
        kind = rec.allocator
        if kind in frees:
            heap -= live.pop(rec.address, 0)
        elif kind == A.MUNMAP:
            size = maps.pop(rec.address, 0)
            gone = min(size, rec.size)
            if size > gone:
                maps[rec.address + gone] = size - gone
            heap -= gone
        elif kind == A.MMAP:
            maps[rec.address] = maps.get(rec.address, 0) + rec.size
            heap += rec.size
        else:
            if MARKER_BYTES < rec.size <= MARKER_BYTES + 64 and _is_marker(rec):
                marks.append(heap)
            heap += rec.size - live.get(rec.address, 0)
            live[rec.address] = rec.size
    return marks


def _is_marker(rec) -> bool:
    stack = rec.stack_trace(max_stacks=1)
    return bool(stack) and stack[0][0] == _MARKER_FUNCTION
