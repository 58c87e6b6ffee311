"""The heap pass: repetitions under memray, and the heap at each repetition's end.

memray intercepts malloc/free (and mmap/munmap) of the whole process, so
TensorFlow's C++ allocations count. It only sees allocations made while
tracking, so the heap starts at 0 bytes.

The heap at a repetition's end is replayed from memray's allocation stream:
each repetition ends with a garbage collection and a marker allocation (a
size nothing else uses, made and freed in `_heap_marker`); the bytes live
just before each marker are that repetition's heap, exactly. memray's own
memory snapshots are not used: they come from a background thread, and their
timestamps do not order them against the main thread's allocations (here, a
snapshot stamped after a repetition's end still showed the heap before it:
a step of 0 where 1 MiB was kept; in CI a tie of two points failed a real
leak's trend test). The replay costs about 1 µs per allocation recorded
(0.1-3 s for the pairs here); a pipeline with millions of small allocations
per repetition can cap or skip the pass (HEAP_REPS in leakbench/contract.py).

The same replay keeps the live bytes of every Python stack (memray's stack
id) at each marker: the stacks that grew most are the heap's `stack_growth`,
growth by allocation site, each with the frame of the user's own code it
comes from (leakbench.check.frames.user_frame). Keeping them costs about
0.1 µs more per allocation: 0.28 s against 0.21 s for
stateful_map's 622k allocations in 6 repetitions (2026-12-01).
"""
from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

from leakbench.check import frames

MARKER_BYTES = 1_000_003  # bytearray(n) allocates n + 1 bytes; an odd size no pipeline asks for
_MARKER_FUNCTION = "_heap_marker"


def _heap_marker() -> None:
    bytearray(MARKER_BYTES)


def heap_pass(module, state, reps: int, path: Path) -> dict:
    """Run `reps` repetitions of `module` under memray, tracking into `path`.

    Returns heap_bytes (shape (reps,), bytes live at each repetition's end,
    after a garbage collection), heap_high_water_mark_bytes and
    retained_bytes (memray's peak and bytes still live when tracking
    stopped), allocations (count), top_stacks (leakbench.check.evidence:
    the largest live at the end) and stack_growth (`growing_stacks`: the
    stacks whose live bytes grew most from the first marker to the last).
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
    marks, by_stack, records = replay(reader.get_allocation_records(), by_stack=True)
    origins = frames.autograph_origins()  # autograph's copies of user code, back to its lines
    return {
        "heap_bytes": marks,
        "heap_high_water_mark_bytes": reader.metadata.peak_memory,
        "retained_bytes": sum(r.size for r in live),
        "allocations": reader.metadata.total_allocations,
        "top_stacks": frames.heap_stacks(live, origins),
        "stack_growth": growing_stacks(by_stack, records, origins),
    }


TOP_GROWING = 5


def growing_stacks(by_stack: list[dict], records: dict, origins: dict, top: int = TOP_GROWING) -> list[dict]:
    """The `top` stacks whose live bytes grew most from the first marker to the last (growth > 0).

    by_stack: per marker, {stack id: live bytes} (`replay`); records: stack id -> one of its
    AllocationRecords (for its frames). Each entry: frames ('function (file:line)', innermost
    first, the engine's own left out), user_frame (the innermost frame of the user's code, or
    None) and bytes (live bytes at each marker, one per heap repetition). Their bytes_per_rep is
    added in the parent (leakbench.analysis.record.stack_slopes): the estimator's scipy is never
    imported into the measured child (it would add ~80 MiB to every child's baseline RSS).
    """
    if not by_stack:
        return []
    first, last = by_stack[0], by_stack[-1]
    grown = sorted(((last[s] - first.get(s, 0), s) for s in last if last[s] > first.get(s, 0)), reverse=True)
    out = []
    for _growth, sid in grown[:top]:
        values = [snapshot.get(sid, 0) for snapshot in by_stack]
        found = frames.stack_frames(records[sid], origins)
        out.append({"frames": frames.shown_frames(found), "user_frame": frames.user_frame(found),
                    "bytes": values})
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
    return replay(records)[0]


def replay(records, by_stack: bool = False) -> tuple[list[int], list[dict], dict]:
    """`heap_at_markers`, and with by_stack the live bytes of each stack at each marker.

    Returns (marks: bytes live before each marker; per marker {stack id: live bytes} of the
    allocations that stack made, [] without by_stack; stack id -> its first AllocationRecord).
    A stack id is memray's Python stack of the allocation (`stack_id`), freed bytes are taken off
    the stack that allocated them.
    """
    from memray import AllocatorType as A

    # Plain ints and locals: this loop sees every allocation (millions for a
    # shuffle of small tensors), about 1 µs each.
    free, pyfree, mmap, munmap = int(A.FREE), int(A.PYMALLOC_FREE), int(A.MMAP), int(A.MUNMAP)
    low, high = MARKER_BYTES, MARKER_BYTES + 64
    live: dict[int, int] = {}
    maps: dict[int, int] = {}
    owner: dict[int, int] = {}       # address -> stack id (by_stack)
    map_owner: dict[int, int] = {}
    stacks: dict[int, int] = {}      # stack id -> live bytes
    first: dict[int, object] = {}
    pop, get = live.pop, live.get
    heap = 0
    marks: list[int] = []
    snapshots: list[dict] = []
    for rec in records:
        kind = rec.allocator
        if kind == free or kind == pyfree:
            size = pop(rec.address, 0)
            heap -= size
            if by_stack and size:
                sid = owner.pop(rec.address)
                stacks[sid] -= size
        elif kind == munmap:
            size = maps.pop(rec.address, 0)
            gone = min(size, rec.size)
            if size > gone:
                maps[rec.address + gone] = size - gone
            heap -= gone
            if by_stack and size:
                sid = map_owner.pop(rec.address)
                stacks[sid] -= gone
                if size > gone:
                    map_owner[rec.address + gone] = sid
        elif kind == mmap:
            maps[rec.address] = maps.get(rec.address, 0) + rec.size
            heap += rec.size
            if by_stack:
                sid = rec.stack_id
                if sid not in first:
                    first[sid] = rec
                    stacks[sid] = 0
                stacks[sid] += rec.size
                map_owner.setdefault(rec.address, sid)
        else:
            address, size = rec.address, rec.size
            if low < size <= high and _is_marker(rec):
                marks.append(heap)
                if by_stack:
                    snapshots.append({s: b for s, b in stacks.items() if b})
            before = get(address, 0)
            heap += size - before
            live[address] = size
            if by_stack:
                if before:
                    stacks[owner[address]] -= before
                sid = rec.stack_id
                if sid not in first:
                    first[sid] = rec
                    stacks[sid] = 0
                stacks[sid] += size
                owner[address] = sid
    return marks, snapshots, first


def _is_marker(rec) -> bool:
    stack = rec.stack_trace(max_stacks=1)
    return bool(stack) and stack[0][0] == _MARKER_FUNCTION
