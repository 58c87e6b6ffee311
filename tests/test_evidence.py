"""Where the memory is: growth by allocation site blamed on the user's line, memory
per tf.data stage with AUTOTUNE's values, and the reference chain that keeps a leak alive.

Unit tests without TensorFlow for the user-frame walk, the stage table and the chain's text; on
TensorFlow, every pipeline runs through the engine (capped, timed child), never in this process.
"""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

import pytest

from leakbench import catalog
from leakbench.check import pipeline as check
from leakbench.engine import buffers, pytypes
from leakbench.engine.chain import (
    REFERENCE_SECONDS,
    describe_chain,
    new_instances,
    object_ids,
    reference_chain,
)
from leakbench.engine.frames import is_user_file, resolve_frames, user_frame
from leakbench.pytest_plugin import LeakError, assert_no_leak
from leakbench.settings import Settings

ROOT = catalog.find_root()
DATA = Path(__file__).parent / "data"
TF_FILE = DATA / "check_tf.py"


def _line(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


# --- without TensorFlow ---


def test_user_frame_skips_libraries_stdlib_and_leakbench():
    site = "/venv/lib/python3.11/site-packages/tensorflow/python/autograph/impl/api.py"
    stdlib = os.path.join(sysconfig.get_paths()["stdlib"], "contextlib.py")
    own = str(Path(pytypes.__file__).resolve().parent.parent / "engine" / "heap.py")
    user = "/home/me/project/input.py"
    frames = [
        ("_call_unconverted", site, 460),
        ("__exit__", stdlib, 191),
        ("heap_pass", own, 49),
        ("<frozen>", "<frozen runpy>", 1),
        ("keep", user, 12),
        ("main", "/home/me/project/run.py", 3),
    ]
    assert user_frame(frames) == f"keep ({user}:12)"
    assert user_frame(frames[:4]) is None
    assert not is_user_file("/usr/lib/python3/dist-packages/numpy/core.py")
    assert not is_user_file("/tmp/__autograph_generated_filexyz.py")


def test_autograph_frames_map_back_to_the_source_line():
    generated = "/tmp/__autograph_generated_file1y0dvksq.py"
    origins = {(generated, 5): ("/home/me/input.py", 64)}
    frames = [
        ("_call_unconverted", "/x/site-packages/tensorflow/api.py", 460),
        ("<lambda>", generated, 5),
    ]
    resolved = resolve_frames(frames, origins)
    assert user_frame(resolved) == "<lambda> (/home/me/input.py:64)"
    assert user_frame(frames) is None  # unresolved, the copy is nobody's code


def test_chain_text_names_types_and_links():
    import types

    module = types.ModuleType("pipeline")
    kept = [object(), object()]
    module.SEEN = kept
    text = describe_chain([module, vars(module), kept, kept[1]])
    assert text == ["module pipeline", "dict .__dict__", "list ['SEEN']", "object [1]"]
    state = ("ds", kept)
    assert describe_chain([state, kept], state) == ["state tuple (what setup returned)", "list [1]"]

    class Holder:
        pass

    holder = Holder()
    holder.problem = ValueError("x")
    assert describe_chain([holder, holder.problem])[1] == "ValueError .problem"


def test_reference_chain_from_a_module_in_process():
    import sys
    import types

    module = types.ModuleType("leakbench_test_chain_module")
    sys.modules[module.__name__] = module

    class Grown:
        pass

    try:
        module.KEPT = [Grown() for _ in range(3)]
        growth = [{"type": Grown.__qualname__, "per_repetition": 3.0, "baseline": 0, "end": 3}]
        found = reference_chain(growth, None, list(module.KEPT))
    finally:
        del sys.modules[module.__name__]
    assert found["chain"][0] == "module leakbench_test_chain_module", found
    assert (
        found["chain"][-1].startswith(Grown.__qualname__) and found["seconds"] < REFERENCE_SECONDS
    )
    assert reference_chain([], None, [])["na"].startswith("no Python type grew")


def test_stages_from_readings_sum_interleave_inputs_and_keep_autotune():
    def node(i, name, nbytes, inputs=(), parameters=None):
        return {
            "id": i,
            "name": name,
            "buffered_bytes": nbytes,
            "buffered_elements": 1,
            "inputs": list(inputs),
            "parameters": parameters or {},
        }

    first = [
        node(1, "Root", 0, [2]),
        node(2, "Prefetch", 10, [3], {"buffer_size": 2}),
        node(3, "ParallelInterleaveV4", 0, [4, 5], {"parallelism": 4}),
        node(4, "MemoryCacheImpl", 5),
        node(5, "MemoryCacheImpl", 5),
    ]
    last = [
        node(1, "Root", 0, [2]),
        node(2, "Prefetch", 20, [3], {"buffer_size": 8}),
        node(3, "ParallelInterleaveV4", 0, [6], {"parallelism": 2}),
        node(6, "MemoryCacheImpl", 40),
    ]
    found = buffers.stages(
        {"readings": [(4, first), (64, last)], "seconds": 0.1, "tensorflow": "x"}
    )
    assert found["readings"] == [4, 64] and found["tensorflow"] == "x"
    assert found["stages"] == [
        {"stage": "Prefetch", "inside": None, "bytes": [10, 20], "autotune": {"buffer_size": 8}},
        {
            "stage": "ParallelInterleaveV4",
            "inside": "Prefetch",
            "bytes": [0, 0],
            "autotune": {"parallelism": 2},
        },
        {
            "stage": "MemoryCache",
            "inside": "ParallelInterleaveV4",
            "bytes": [10, 40],
            "autotune": {},
        },
    ]
    assert buffers.stages({"na": "why"}) == {"na": "why"}
    att = buffers.attribution_from(
        {"readings": [(4, first), (64, last)], "seconds": 0.1, "tensorflow": "x"}
    )
    assert att["elements"] == [4, 64] and all("parameters" not in n for n in att["nodes"])


def test_every_measurement_has_stages_and_a_chain_without_tensorflow():
    rec = check.check(
        f"{DATA / 'check_python.py'}:leaky",
        Settings(warmup=1, reps=6, heap_reps=5, cap_bytes=1 << 30, timeout_seconds=60),
    )
    run = rec["runs"][0]
    assert run["stages"] == {"na": "the target does not use TensorFlow"}
    assert "reference_chain" in run and "stages" in run["seconds"]
    growth = run["heap"]["stack_growth"]
    line = _line(DATA / "check_python.py", "KEPT.append(bytearray")
    assert growth[0]["user_frame"].endswith(f"check_python.py:{line})"), growth
    assert growth[0]["bytes_per_rep"] == pytest.approx(1 << 20, rel=0.05)
    assert len(growth[0]["bytes"]) == 5


# --- on TensorFlow, through the engine ---


@pytest.fixture(scope="module")
def scenario_records(tf_records):
    """The leaky sides' records, as `leakbench check`
    measured them for the whole session (conftest)."""
    return {
        name: tf_records[(name, "leaky")]
        for name in ("stateful_map", "unbounded_cache", "kept_iterators")
    }


@pytest.mark.tf
def test_stateful_map_growing_stack_names_the_scenario_line(scenario_records):
    rec = scenario_records["stateful_map"]
    top = rec["runs"][0]["heap"]["stack_growth"][0]
    line = _line(ROOT / "scenarios" / "stateful_map.py", "SEEN.append(x.copy())")
    assert top["user_frame"] == f"record (scenarios/stateful_map.py:{line})", top
    assert top["bytes_per_rep"] > 3 << 20
    assert any(f"stateful_map.py:{line}" in h for h in rec["diagnosis"]["hints"]), rec["diagnosis"][
        "hints"
    ]


@pytest.mark.tf
def test_unbounded_cache_growing_stage_is_the_cache(scenario_records):
    stages = scenario_records["unbounded_cache"]["runs"][0]["stages"]
    # 128 batches (4,096 elements of 32): every reading falls before half the cardinality, where
    # the buffers would start to drain
    readings = list(buffers.READING_ELEMENTS)
    assert stages["tensorflow"] and stages["readings"] == readings, stages
    assert all(len(s["bytes"]) == len(readings) for s in stages["stages"])
    biggest = max(stages["stages"], key=lambda s: s["bytes"][-1])  # the cache is full since warm-up
    assert biggest["stage"] == "MemoryCache" and biggest["bytes"][-1] >= 32 << 20, stages
    prefetch_like = [s for s in stages["stages"] if s["autotune"]]
    assert all(isinstance(v, (int, float)) for s in prefetch_like for v in s["autotune"].values())


@pytest.mark.tf
def test_kept_iterators_chain_runs_to_the_kept_exception(scenario_records):
    rec = scenario_records["kept_iterators"]
    chain = rec["runs"][0]["reference_chain"]
    assert any(link.startswith("InvalidArgumentError") for link in chain["chain"]), chain
    assert chain["seconds"] < REFERENCE_SECONDS + 1


@pytest.mark.tf
def test_inline_lambda_leak_is_blamed_on_the_users_line_through_the_pytest_helper():
    line = _line(TF_FILE, "LAMBDA_KEPT.append(a.copy())")
    with pytest.raises(LeakError) as caught:
        assert_no_leak(
            f"{TF_FILE}:lambda_map", cap="3GiB", timeout=180, reps=6, heap_reps=5, warmup=1
        )
    message = str(caught.value)
    assert f"comes from <lambda> (tests/data/check_tf.py:{line})" in message, message
    assert "comes from _call_unconverted" not in message
    top = caught.value.record["runs"][0]["heap"]["stack_growth"][0]
    assert (
        top["user_frame"] == f"<lambda> (tests/data/check_tf.py:{line})"
        and "_call_unconverted" in top["frames"][0]
    )


def test_new_instances_are_the_ones_made_after_the_baseline():
    class Made:
        pass

    before = [Made() for _ in range(3)]
    ids = object_ids()
    after = [Made() for _ in range(20)]
    growth = [{"type": Made.__qualname__, "per_repetition": 20.0, "baseline": 3, "end": 23}]
    found = new_instances(growth, ids, limit=4)
    assert len(found) == 4 and all(any(f is a for a in after) for f in found)
    assert not any(f is b for f in found for b in before)
    assert new_instances([], ids) == []


# --- the types that grew, by the verdict's rule (a one-off jump does not count) ---


def _growth(series: dict, reps: int) -> list[dict]:
    """type_growth of count series (one value at the baseline, then one per repetition) read as the
    child reads them: at the baseline, after middle_reps(reps) and at the end."""
    half = pytypes.middle_reps(reps)
    at = lambda i: {name: counts[i] for name, counts in series.items()}  # noqa: E731
    return pytypes.type_growth(at(0), at(half), at(reps), reps)


@pytest.mark.parametrize("reps", [12, 13, 6])
def test_a_one_off_jump_is_no_growth_and_a_steady_climb_reads_its_rate(reps):
    climb = [100 + 5 * i for i in range(reps + 1)]
    # a jump of +46 (ReferenceType's on fixes/stateful_map) after any repetition
    for at in range(1, reps + 1):
        jump = [88 + (46 if i >= at else 0) for i in range(reps + 1)]
        growth = _growth(
            {
                "ReferenceType": jump,
                "Leak": climb,
                "Both": [c + j - 88 for c, j in zip(climb, jump)],
            },
            reps,
        )
        assert [(g["type"], g["per_repetition"]) for g in growth] == [
            ("Leak", 5.0),
            ("Both", 5.0),
        ], (at, growth)
        assert growth[0]["baseline"] == 100 and growth[0]["end"] == 100 + 5 * reps
    alone = _growth({"ReferenceType": [88] + [134] * reps}, reps)
    assert alone == [] and new_instances(alone, object_ids()) == []
    assert reference_chain(alone, None, [])["na"].startswith("no Python type grew")


def test_the_chain_follows_only_a_type_whose_rate_passes():
    class Jumped:
        pass

    ids = object_ids()
    # new since the baseline, but a record of the old rule's 3.8/rep
    made = [Jumped() for _ in range(46)]
    old_rule = [{"type": Jumped.__qualname__, "per_repetition": 46 / 12, "baseline": 0, "end": 46}]
    assert new_instances(old_rule, ids) != []  # 3.8 >= TYPE_GROWTH_MIN: the old rule chased it
    low = [
        {"type": Jumped.__qualname__, "per_repetition": 0.0, "baseline": 0, "middle": 46, "end": 46}
    ]
    assert new_instances(low, ids) == [] and reference_chain(low, None, list(made))[
        "na"
    ].startswith("no Python type grew")


def test_type_rate_is_the_verdicts_rate_and_the_middle_is_counted_in_place():
    from leakbench.analysis.judge.verdict import rate
    from leakbench.bars import OBJECT_SLOPE_MIN

    assert (
        pytypes.type_rate(0, 60, 120, 12)
        == rate({"slope": 10, "first_half": 10, "second_half": 10})
        == 10
    )
    assert pytypes.type_rate(0, 46, 46, 12) == 0 and pytypes.type_rate(0, 0, 46, 12) == 0
    assert pytypes.type_rate(0, None, 46, 1) == 46  # one repetition: no halves, the whole rate
    assert pytypes.TYPE_GROWTH_MIN < OBJECT_SLOPE_MIN
    into = {"NoSuchType": 5}
    assert pytypes.type_counts(into=into) is into and into["NoSuchType"] == 0 and into["dict"] > 0


def test_the_measured_child_imports_no_scipy():
    """The child imports pytypes, which takes verdict's rule
    (metrics.rate): scipy (~80 MiB) must stay out of it."""
    import subprocess
    import sys

    code = (
        "import sys, leakbench.engine.child; print(sorted(m "
        "for m in ('scipy', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "scipy" not in out.stdout, out.stdout
