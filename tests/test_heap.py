"""The heap pass (leakbench.heap): snapshots in each repetition's quiet window,
and the exact replay used when the snapshot thread misses one. No TensorFlow."""
from collections import namedtuple
from types import SimpleNamespace

import memray
import pytest

from leakbench import heap

MIB = 1 << 20
Snapshot = namedtuple("Snapshot", "time rss heap")


class Kept:
    """A scenario module in miniature: each repetition keeps one MiB."""

    @staticmethod
    def repetition(state):
        state.append(bytearray(MIB))


def test_a_window_without_a_snapshot_reads_none():
    snaps = [Snapshot(5, 0, 100), Snapshot(12, 0, 200), Snapshot(14, 0, 300)]
    assert heap.heap_in_windows(snaps, [(0, 10), (11, 15), (20, 30)]) == [100, 300, None]


@pytest.mark.timeout(60)
def test_heap_pass_reads_the_bytes_kept_per_repetition(tmp_path):
    found = heap.heap_pass(Kept, [], 5, tmp_path / "heap.bin")
    steps = [b - a for a, b in zip(found["heap_bytes"], found["heap_bytes"][1:])]
    assert len(found["heap_bytes"]) == 5
    assert all(step == pytest.approx(MIB, rel=0.05) for step in steps), steps
    assert found["heap_source"] in ("snapshots", "replay")


@pytest.mark.timeout(60)
def test_replay_agrees_with_the_snapshots_and_does_not_count_the_marker(tmp_path):
    path = tmp_path / "heap.bin"
    found = heap.heap_pass(Kept, [], 5, path)
    replayed = heap.heap_at_markers(memray.FileReader(path).get_allocation_records())
    assert len(replayed) == 5
    for snap, exact in zip(found["heap_bytes"], replayed):
        assert snap == pytest.approx(exact, abs=64 * 1024)  # the marker alone is ~1 MiB


@pytest.mark.timeout(60)
def test_a_missed_window_falls_back_to_the_replay(tmp_path, monkeypatch):
    monkeypatch.setattr(heap, "heap_in_windows", lambda snapshots, windows: [None] * len(windows))
    found = heap.heap_pass(Kept, [], 5, tmp_path / "heap.bin")
    assert found["heap_source"] == "replay"
    steps = [b - a for a, b in zip(found["heap_bytes"], found["heap_bytes"][1:])]
    assert all(step == pytest.approx(MIB, rel=0.05) for step in steps), steps


def test_replay_follows_frees_reallocs_and_unmaps():
    A = memray.AllocatorType
    marker = SimpleNamespace(allocator=int(A.MALLOC), address=999, size=heap.MARKER_BYTES + 1,
                             stack_trace=lambda max_stacks=1: [("_heap_marker", "heap.py", 1)])
    decoy = SimpleNamespace(allocator=int(A.MALLOC), address=998, size=heap.MARKER_BYTES + 1,
                            stack_trace=lambda max_stacks=1: [("someone_else", "x.py", 1)])
    rec = lambda kind, address, size=0: SimpleNamespace(allocator=int(kind), address=address, size=size)
    records = [
        rec(A.MALLOC, 1, 100), rec(A.MMAP, 50, 4096), marker,           # 100 + 4096 live
        rec(A.FREE, 999), rec(A.FREE, 1), rec(A.REALLOC, 2, 300), decoy,  # 4096 + 300 + decoy
        rec(A.MUNMAP, 50, 1024), rec(A.FREE, 998), marker,              # 3072 + 300
    ]
    assert heap.heap_at_markers(records) == [4196, 3372]
