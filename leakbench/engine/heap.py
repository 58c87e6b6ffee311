"""The heap pass: repetitions under memray, and the heap at each repetition's end.

memray intercepts malloc/free (and mmap/munmap) of the whole process, so
TensorFlow's C++ allocations count. It only sees allocations made while
tracking, so the heap starts at 0 bytes.

The heap at a repetition's end is replayed from memray's allocation stream:
each repetition ends with a garbage collection and a marker allocation (a
size nothing else uses, made and freed in `_heap_marker`); the bytes live
just before each marker are that repetition's heap, exactly. memray's own
memory snapshots are not used: they come from a background thread, and their
timestamps do not order them against the main thread's allocations, so a
snapshot stamped after a repetition's end can still show the heap before it
(docs/measurements.md, "memray"). Reading the capture back costs time per
allocation recorded (docs/measurements.md, "memray"); a pipeline with
millions of small allocations per repetition can cap or skip the pass
(HEAP_REPS in leakbench/contract.py).

The same replay sums the live bytes of every Python stack (memray's stack
id) at each marker: the stacks that grew most are the heap's `stack_growth`,
growth by allocation site, each with the frame of the user's own code it
comes from (leakbench.engine.frames.user_frame). Its live allocations at the
end are the heap's retained_bytes and top_stacks: the capture is read once.
Starting and stopping the tracker is the pass's other fixed cost, whatever the
repetitions: memray rewrites, then restores, the malloc entries of every loaded
library's relocation tables, and TensorFlow loads many (docs/measurements.md, "memray").
"""

from __future__ import annotations

import gc
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

from leakbench.engine import frames

MARKER_BYTES = 1_000_003  # bytearray(n) allocates n + 1 bytes; an odd size no pipeline asks for
_MARKER_FUNCTION = "_heap_marker"


def _heap_marker() -> None:
    bytearray(MARKER_BYTES)


def heap_pass(
    module, state, reps: int, path: Path, on_repetition=None, seconds: dict | None = None
) -> dict:
    """Run `reps` repetitions of `module` under memray, tracking into `path`.

    on_repetition(i), if given, is called after repetition i's marker (the child's
    progress message: leakbench.engine.runner's timeout counts from the last one).
    seconds, if given, gets the pass's three costs (docs/measurements.md, "memray"):
    "heap" the tracked repetitions, "heap_tracker" memray's start and stop (a
    fixed cost per pass), "heap_analysis" reading the capture back (grows with its allocations).

    Returns heap_bytes (shape (reps,), bytes live at each repetition's end,
    after a garbage collection), heap_high_water_mark_bytes and
    retained_bytes (memray's peak and bytes still live when tracking
    stopped), allocations (count), top_stacks (leakbench.engine.frames.heap_stacks:
    the largest live at the end) and stack_growth (`growing_stacks`: the
    stacks whose live bytes grew most from the first marker to the last).
    The capture is read once: the replay's live allocations at its end are what
    memray's get_leaked_allocation_records gives (tests/test_heap.py checks it).
    """
    import memray

    path.unlink(missing_ok=True)
    start = time.perf_counter()
    with memray.Tracker(path, native_traces=False):
        tracked = time.perf_counter()
        for rep in range(reps):
            module.repetition(state)
            gc.collect()
            _heap_marker()
            # after the marker: its transient allocations are freed before the next one
            if on_repetition:
                on_repetition(rep)
        done = time.perf_counter()
    stopped = time.perf_counter()
    reader = memray.FileReader(path)
    found = replay(reader.get_allocation_records(), by_stack=True)
    # autograph's copies of user code, back to its lines (read if a stack has one)
    origins = frames.LazyOrigins()
    heap = {
        "heap_bytes": found.marks,
        "heap_high_water_mark_bytes": reader.metadata.peak_memory,
        "retained_bytes": sum(size for size, _ in found.live.values()),
        "allocations": reader.metadata.total_allocations,
        "top_stacks": frames.heap_stacks(found.live_records(), origins),
        "stack_growth": growing_stacks(found.by_stack, found.first, origins),
    }
    if seconds is not None:
        seconds["heap"] = done - tracked
        seconds["heap_tracker"] = (tracked - start) + (stopped - done)
        seconds["heap_analysis"] = time.perf_counter() - stopped
    return heap


TOP_GROWING = 5


def growing_stacks(
    by_stack: list[dict], records: dict, origins, top: int = TOP_GROWING
) -> list[dict]:
    """The `top` stacks whose live bytes grew most from the first marker to the last (growth > 0).

    by_stack: per marker, {stack id: live bytes} (`replay`); records: stack id -> one of its
    AllocationRecords (for its frames). Each entry: frames ('function (file:line)', innermost
    first, the engine's own left out), user_frame (the innermost frame of the user's code, or
    None) and bytes (live bytes at each marker, one per heap repetition). Their bytes_per_rep is
    added in the parent (leakbench.analysis.record.stack_slopes): the estimator's scipy is never
    imported into the measured child, whose baseline RSS it would raise (docs/measurements.md,
    "What the evidence costs").
    """
    if not by_stack:
        return []
    first, last = by_stack[0], by_stack[-1]
    grown = sorted(
        ((last[s] - first.get(s, 0), s) for s in last if last[s] > first.get(s, 0)), reverse=True
    )
    out = []
    for _growth, sid in grown[:top]:
        values = [snapshot.get(sid, 0) for snapshot in by_stack]
        found = frames.stack_frames(records[sid], origins)
        out.append(
            {
                "frames": frames.shown_frames(found),
                "user_frame": frames.user_frame(found),
                "bytes": values,
            }
        )
    return out


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
    command = [
        sys.executable,
        "-m",
        "memray",
        "flamegraph",
        "--leaks",
        "--force",
        "--output",
        str(out),
        str(capture),
    ]
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
    return replay(records)[0]


class Replay(NamedTuple):
    """What `replay` read from an allocation stream."""

    marks: list[int]  # bytes live just before each marker
    by_stack: list[dict]  # per marker, {stack id: live bytes} ([] without by_stack)
    # stack id -> its first AllocationRecord (for its frames; {} without by_stack)
    first: dict
    # stack id -> (live bytes, live allocations) when the stream ends ({} without by_stack)
    live: dict

    def live_records(self) -> list[tuple]:
        """(bytes, allocations, record) per stack with allocations live at the end."""
        return [(size, count, self.first[sid]) for sid, (size, count) in self.live.items()]


def replay(records, by_stack: bool = False) -> Replay:
    """`heap_at_markers`, and with by_stack the live
    bytes of each stack at each marker and at the end.

    A stack id is memray's Python stack of the allocation (`stack_id`; 0: none, a thread
    without Python frames); freed bytes are taken off the stack that allocated them. The live
    allocations at the end, per stack, are memray's
    get_leaked_allocation_records(merge_threads=True) (aggregated by the same key, the Python stack;
    native traces are off), read in the same pass, but for an unmap of
    a mapping's interior, which memray honours and this replay ignores.
    """
    from memray import AllocatorType as A

    # Plain ints and locals: this loop sees every allocation (millions for a shuffle of small
    # tensors; its cost per allocation: docs/measurements.md, "memray"). The bytes per stack are
    # summed at each marker from the live allocations, not kept up to date on every record.
    free, pyfree, mmap, munmap = int(A.FREE), int(A.PYMALLOC_FREE), int(A.MMAP), int(A.MUNMAP)
    low, high = MARKER_BYTES, MARKER_BYTES + 64
    live: dict[int, tuple] = {}  # address -> (size, stack id)
    maps: dict[int, tuple] = {}  # a mapping's start -> (size, stack id)
    first: dict[int, object] = {}
    pop, get = live.pop, live.get
    heap = 0
    marks: list[int] = []
    snapshots: list[dict] = []
    sid = 0
    for rec in records:
        kind = rec.allocator
        if kind == free or kind == pyfree:
            gone = pop(rec.address, None)
            if gone is not None:
                heap -= gone[0]
        elif kind == munmap:
            mapped = maps.pop(rec.address, None)
            if mapped is not None:
                size, owner = mapped
                gone = min(size, rec.size)
                if size > gone:
                    maps[rec.address + gone] = (size - gone, owner)
                heap -= gone
        elif kind == mmap:
            if by_stack:
                sid = rec.stack_id
                if sid not in first:
                    first[sid] = rec
            size, owner = maps.get(rec.address, (0, sid))
            maps[rec.address] = (size + rec.size, owner)
            heap += rec.size
        else:
            address, size = rec.address, rec.size
            if low < size <= high and _is_marker(rec):
                marks.append(heap)
                if by_stack:
                    snapshots.append({s: b for s, (b, _) in _per_stack(live, maps).items() if b})
            if by_stack:
                sid = rec.stack_id
                if sid not in first:
                    first[sid] = rec
            before = get(address)
            heap += size - before[0] if before is not None else size
            live[address] = (size, sid)
    return Replay(marks, snapshots, first, _per_stack(live, maps) if by_stack else {})


def _per_stack(live: dict, maps: dict) -> dict:
    """stack id -> (live bytes, live allocations) of `replay`'s live allocations and mappings."""
    out: dict[int, tuple] = {}
    for table in (live, maps):
        for size, sid in table.values():
            total, count = out.get(sid, (0, 0))
            out[sid] = (total + size, count + 1)
    return out


def _is_marker(rec) -> bool:
    stack = rec.stack_trace(max_stacks=1)
    return bool(stack) and stack[0][0] == _MARKER_FUNCTION
