"""The heap pass (leakbench.engine.heap): the heap at each repetition's end, replayed
from memray's allocation stream up to a marker. No TensorFlow."""

import mmap
from types import SimpleNamespace

import memray
import pytest

from leakbench.engine import frames, heap

MIB = 1 << 20


class Kept:
    """A scenario module in miniature: each repetition keeps one MiB."""

    @staticmethod
    def repetition(state):
        state.append(bytearray(MIB))


@pytest.mark.timeout(60)
def test_heap_pass_reads_the_bytes_kept_per_repetition(tmp_path):
    found = heap.heap_pass(Kept, [], 5, tmp_path / "heap.bin")
    steps = [b - a for a, b in zip(found["heap_bytes"], found["heap_bytes"][1:])]
    assert len(found["heap_bytes"]) == 5
    assert all(step == pytest.approx(MIB, rel=0.05) for step in steps), steps


def test_replay_follows_frees_reallocs_and_unmaps():
    A = memray.AllocatorType
    marker = SimpleNamespace(
        allocator=int(A.MALLOC),
        address=999,
        size=heap.MARKER_BYTES + 1,
        stack_trace=lambda max_stacks=1: [("_heap_marker", "heap.py", 1)],
    )
    decoy = SimpleNamespace(
        allocator=int(A.MALLOC),
        address=998,
        size=heap.MARKER_BYTES + 1,
        stack_trace=lambda max_stacks=1: [("someone_else", "x.py", 1)],
    )

    def rec(kind, address, size=0):
        return SimpleNamespace(allocator=int(kind), address=address, size=size)

    records = [
        rec(A.MALLOC, 1, 100),
        rec(A.MMAP, 50, 4096),
        marker,  # 100 + 4096 live
        rec(A.FREE, 999),
        rec(A.FREE, 1),
        rec(A.REALLOC, 2, 300),
        decoy,  # 4096 + 300 + decoy
        rec(A.MUNMAP, 50, 1024),
        rec(A.FREE, 998),
        marker,  # 3072 + 300
    ]
    assert heap.heap_at_markers(records) == [4196, 3372]


def test_replay_keeps_each_stacks_live_bytes_at_markers_and_end():
    A = memray.AllocatorType
    marker = SimpleNamespace(
        allocator=int(A.MALLOC),
        address=999,
        size=heap.MARKER_BYTES + 1,
        stack_id=9,
        stack_trace=lambda max_stacks=1: [("_heap_marker", "heap.py", 1)],
    )

    def rec(kind, address, size=0, sid=0):
        return SimpleNamespace(allocator=int(kind), address=address, size=size, stack_id=sid)

    records = [
        rec(A.MALLOC, 1, 100, 1),
        rec(A.MMAP, 50, 4096, 2),
        rec(A.MALLOC, 3, 10, 1),
        marker,
        rec(A.FREE, 999),
        rec(A.FREE, 1),
        rec(A.MUNMAP, 50, 1024),
        rec(A.MALLOC, 3, 30, 3),
        marker,
        rec(A.FREE, 999),
    ]
    found = heap.replay(records, by_stack=True)
    assert found.marks == [4206, 3102]
    assert found.by_stack == [{1: 110, 2: 4096}, {2: 3072, 3: 30}]
    # the unmapped leading KiB is gone, the rest kept
    assert found.live == {2: (3072, 1), 3: (30, 1)}
    assert sorted(found.first) == [1, 2, 3, 9] and found.first[1] is records[0]


class Mixed:
    """Each repetition keeps one MiB and a 16 KiB
    mapping, and frees as much again (3 MiB, 32 KiB)."""

    @staticmethod
    def repetition(state):
        state.append(bytearray(MIB))
        bytearray(3 * MIB)
        state.append(mmap.mmap(-1, 4 * 4096))
        mmap.mmap(-1, 8 * 4096).close()


@pytest.mark.timeout(60)
def test_one_read_gives_what_memrays_leaked_records_give(tmp_path):
    """The pass reads its capture once: the replay's live allocations at the end, per stack, are
    memray's get_leaked_allocation_records(merge_threads=True) (bytes, count), mappings included."""
    path, seconds = tmp_path / "heap.bin", {}
    found = heap.heap_pass(Mixed, [], 3, path, seconds=seconds)
    reader = memray.FileReader(path)
    leaked = list(reader.get_leaked_allocation_records(merge_threads=True))
    assert {r.stack_id: (r.size, r.n_allocations) for r in leaked} == heap.replay(
        reader.get_allocation_records(), by_stack=True
    ).live
    assert {int(memray.AllocatorType.MMAP), int(memray.AllocatorType.MUNMAP)} <= {
        r.allocator for r in reader.get_allocation_records()
    }
    assert found["retained_bytes"] == sum(r.size for r in leaked)
    as_memray = frames.heap_stacks([(r.size, r.n_allocations, r) for r in leaked], {})
    key = lambda stack: (stack[("bytes")], stack[("frames")])  # noqa: E731 - equal sizes may come in either order
    assert sorted(found["top_stacks"], key=key) == sorted(as_memray, key=key)
    assert found["top_stacks"][0]["bytes"] == pytest.approx(3 * MIB, abs=64)
    assert found["top_stacks"][0]["allocations"] == 3
    assert set(seconds) == {"heap", "heap_tracker", "heap_analysis"} and min(seconds.values()) > 0


def test_autograph_origins_are_read_only_for_an_autograph_frame(monkeypatch):
    reads = []
    monkeypatch.setattr(
        frames,
        "autograph_origins",
        lambda: reads.append(1) or {("/tmp/__autograph_generated_file1.py", 7): ("me.py", 3)},
    )
    origins = frames.LazyOrigins()
    plain = [("f", "me.py", 1), ("g", "/x/site-packages/tensorflow/a.py", 2)]
    assert frames.resolve_frames(plain, origins) == plain and reads == []
    generated = [
        ("tf__f", "/tmp/__autograph_generated_file1.py", 7),
        ("h", "/tmp/__autograph_generated_file1.py", 9),
    ]
    assert frames.resolve_frames(generated, origins) == [("tf__f", "me.py", 3), generated[1]]
    frames.resolve_frames(generated, origins)
    assert reads == [1]  # read once


SCENARIO = """
TITLE = "kept bytes"
SOURCE = "stateful functions"
REPETITION = "keep one MiB"
KIND = "growth"
SIZE_PARAM = "n"
PARAMS = {"n": 1048576}
HEAP_REPS = %s
KEPT = []
def setup(n):
    return n
def repetition(n):
    KEPT.append(bytearray(n))
"""


@pytest.mark.timeout(60)
def test_a_scenario_can_skip_the_heap_pass(tmp_path):
    from leakbench import contract
    from leakbench.catalog import Target
    from leakbench.measure import measure
    from leakbench.settings import Settings

    path = tmp_path / "no_heap.py"
    path.write_text(SCENARIO % 0)
    target = Target(contract.read_metadata(path), "file")
    settings = Settings(warmup=1, reps=6, heap_reps=6, cap_bytes=1 << 30, timeout_seconds=60)
    rec = measure(target, target.scenario.params, settings)
    assert rec["runs"][0]["heap"] is None and rec["metrics"]["retained_heap"] is None
    assert rec["verdict"] == "leak" and "heap" not in rec["signals"]  # RSS still sees it


@pytest.mark.parametrize("value", ["-1", "2.5", "True", "'six'"])
def test_heap_reps_must_be_a_count(tmp_path, value):
    from leakbench import contract

    path = tmp_path / "bad.py"
    path.write_text(SCENARIO % value)
    with pytest.raises(contract.ContractError, match="HEAP_REPS"):
        contract.read_metadata(path)
