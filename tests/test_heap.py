"""The heap pass (leakbench.engine.heap): the heap at each repetition's end, replayed
from memray's allocation stream up to a marker. No TensorFlow."""
from types import SimpleNamespace

import memray
import pytest

from leakbench.engine import heap

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


SCENARIO = '''
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
'''


@pytest.mark.timeout(60)
def test_a_scenario_can_skip_the_heap_pass(tmp_path):
    from leakbench import contract
    from leakbench.catalog import Target
    from leakbench.engine.measure import Settings, measure

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
