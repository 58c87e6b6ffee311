"""`leakbench check`: targets of one's own through the engine, evidence and hints, bad targets,
the pytest helper; and on TensorFlow, the same verdicts as `run` for every scenario and fix,
and attribution to the right stage.

Every measurement passes an explicit cap and timeout (project rule).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import invoke, refused
from tf_session import TF_SETTINGS

from leakbench import catalog
from leakbench.catalog import Target
from leakbench.check import pipeline as check
from leakbench.cli import check_exit_code
from leakbench.contract import read_metadata
from leakbench.measure import measure
from leakbench.pytest_plugin import LeakError, assert_no_leak, target_spec
from leakbench.reporters import check as report
from leakbench.settings import Settings

DATA = Path(__file__).parent / "data"
PY = DATA / "check_python.py"
TF = DATA / "check_tf.py"
ROOT = catalog.find_root()
GIB = 1 << 30
SETTINGS = Settings(warmup=1, reps=6, heap_reps=5, cap_bytes=1 * GIB, timeout_seconds=60)


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(Path(sys.executable).with_name("leakbench")), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# --- without TensorFlow ---


@pytest.mark.parametrize(
    "spec, message",
    [
        ("nosuch.py:make", "no file at nosuch.py"),
        ("nosuch_module_xyz:make", "no module named 'nosuch_module_xyz'"),
        ("just_a_word", "give FILE.py:NAME or module:NAME"),
        (f"{PY}:1bad", "is not a Python name"),
    ],
)
def test_bad_target_is_one_line_and_exit_2_before_running(spec, message, monkeypatch):
    """In process (conftest.invoke), with subprocess.Popen refusing to start anything: the target is
    refused before any child runs. (A refusal from a real process, its stderr and exit code, is
    test_fuzz's and test_refusals' subprocess cases.)"""

    def start(*args, **kwargs):
        raise AssertionError(f"would start {args[0] if args else kwargs.get('args')!r}")

    monkeypatch.setattr(subprocess, "Popen", start)
    done = invoke("check", spec, "--cap", "1GiB", "--timeout", "30")
    refused(done, message)  # exit 2, one line 'leakbench: error: ...', no traceback, no exception


def test_leaky_function_is_a_leak_with_its_stack():
    rec = check.check(f"{PY}:leaky", SETTINGS)
    assert rec["verdict"] == "leak" and rec["variant"] == "check"
    # the record is built whole: what the child learned the
    # target to be, and the TARGET string as its name
    assert (rec["pair"], rec["repetition"]) == (f"{PY}:leaky", "one call of the function")
    assert {"held", "heap"} <= set(rec["signals"])
    d = rec["diagnosis"]
    assert d["target_kind"] == "function"
    assert d["attribution"] == {"na": "the target does not use TensorFlow"}
    assert "leaky (" in d["top_stacks"][0]["frames"][0]
    assert any("comes from leaky" in h for h in d["hints"])
    assert check_exit_code(rec) == 1


def test_bounded_function_is_no_leak():
    rec = check.check(f"{PY}:bounded", SETTINGS)
    assert rec["verdict"] == "no-leak", report.check_summary(rec)
    assert check_exit_code(rec) == 0 and not rec["diagnosis"]["hints"]


@pytest.mark.parametrize(
    "name, phase, message",
    [
        (
            "missing",
            "import",
            "has no name 'missing' (it defines: bounded, hangs, leaky, needs_arguments, raises)",
        ),
        ("NOT_CALLABLE", "setup", "is a int object: neither a tf.data.Dataset"),
        ("needs_arguments", "setup", "takes arguments (size)"),
        ("raises", "setup", "RuntimeError: the pipeline's own failure"),
    ],
)
def test_target_that_fails_in_the_child_is_an_error_in_one_line(name, phase, message):
    rec = check.check(f"{PY}:{name}", SETTINGS)
    assert (rec["verdict"], rec["phase"]) == ("error", phase)
    assert rec["repetition"] == f"one repetition of {name}"  # the child never learned what it is
    assert message in rec["error"] and "\n" not in rec["error"].strip()
    assert check_exit_code(rec) == 3  # the target could not be measured: a failure


def test_hanging_target_is_a_hang_with_its_phase_on_the_cli():
    done = cli("check", f"{PY}:hangs", "--cap", "1GiB", "--timeout", "8", "--format", "json")
    rec = json.loads(done.stdout)
    # a hang is a verdict: 1 (leakbench.cli.exits)
    assert (rec["verdict"], rec["phase"], done.returncode) == ("hang", "setup", 1)
    assert re.match(
        r"leakbench: hang in setup: no progress for \d+(\.\d)? "
        r"s in setup \(timeout_seconds 8 s per step\)",
        done.stderr.strip().splitlines()[-1],
    )


def test_cli_json_and_exit_1_on_leak():
    done = cli(
        "check",
        f"{PY}:leaky",
        "--cap",
        "1GiB",
        "--timeout",
        "60",
        "--reps",
        "6",
        "--heap-reps",
        "5",
        "--warmup",
        "1",
        "--format",
        "json",
    )
    assert done.returncode == 1, done.stderr
    rec = json.loads(done.stdout)
    assert rec["verdict"] == "leak" and rec["pair"] == f"{PY}:leaky"


def test_pytest_helper_passes_bounded_and_fails_leaky_with_the_evidence():
    settings = dict(cap="1GiB", timeout=60, reps=6, heap_reps=5, warmup=1)
    assert assert_no_leak(f"{PY}:bounded", **settings)["verdict"] == "no-leak"
    with pytest.raises(LeakError) as caught:
        assert_no_leak(f"{PY}:leaky", **settings)
    assert caught.value.record["verdict"] == "leak"
    assert "leak" in str(caught.value) and "RSS" in str(caught.value)


def test_pytest_helper_takes_module_level_functions_only():
    spec = target_spec(target_spec)
    assert spec.endswith("pytest_plugin.py:target_spec")
    with pytest.raises(TypeError):
        target_spec(lambda: None)


def test_attribution_names_the_deepest_stage_holding_most_bytes():
    mib = 1 << 20
    nodes = [  # Root -> Prefetch -> Batch -> ParallelInterleave -> 2 × (Prefetch -> Map)
        {
            "id": 1,
            "name": "Root",
            "buffered_bytes": 0,
            "buffered_elements": 0,
            "inputs": [2],
            "growth_bytes": 0,
        },
        {
            "id": 2,
            "name": "Prefetch",
            "buffered_bytes": 4 * mib,
            "buffered_elements": 2,
            "inputs": [3],
            "growth_bytes": 0,
        },
        {
            "id": 3,
            "name": "BatchV2",
            "buffered_bytes": 0,
            "buffered_elements": 0,
            "inputs": [4],
            "growth_bytes": 0,
        },
        {
            "id": 4,
            "name": "ParallelInterleaveV4",
            "buffered_bytes": 12 * mib,
            "buffered_elements": 48,
            "inputs": [5, 6],
            "growth_bytes": 0,
        },
        {
            "id": 5,
            "name": "Prefetch",
            "buffered_bytes": 32 * mib,
            "buffered_elements": 16,
            "inputs": [],
            "growth_bytes": 0,
        },
        {
            "id": 6,
            "name": "Prefetch",
            "buffered_bytes": 32 * mib,
            "buffered_elements": 16,
            "inputs": [],
            "growth_bytes": 0,
        },
    ]
    found = check.attribution({"elements": [4, 64], "nodes": nodes})
    assert found["holder"]["stage"] == "ParallelInterleaveV4"
    assert found["holder"]["subtree_bytes"] == 76 * mib
    inner = next(s for s in found["stages"] if s["inside"])
    assert (inner["stage"], inner["count"], inner["buffered_bytes"]) == ("Prefetch", 2, 64 * mib)
    assert check.attribution({"na": "why"}) == {"na": "why"}


def test_check_view_names_the_users_frame_first_and_the_chain():
    from rich.console import Console

    rec = {
        "pair": "p.py:make",
        "verdict": "leak",
        "phase": None,
        "repetition": "one call of the function",
        "signals": ["heap"],
        "metrics": {"peak_above_baseline_bytes": 0},
        "seconds": 1.0,
        "diagnosis": {
            "target_kind": "function",
            "types": [],
            "attribution": {"na": "no TF"},
            "top_stacks": [],
            "stack_growth": [
                {
                    "frames": ["_call_unconverted (tensorflow/api.py:460)", "<lambda> (p.py:7)"],
                    "user_frame": "<lambda> (p.py:7)",
                    "bytes": [1024, 2048, 3072],
                    "bytes_per_rep": 1024.0,
                }
            ],
            "reference_chain": {
                "type": "traceback",
                "chain": ["state tuple", "list [1]"],
                "seconds": 0.5,
            },
            "hints": [],
        },
    }
    console = Console(width=200, record=True)
    for item in report.check_view(rec):
        console.print(item)
    text = console.export_text()
    row = next(line for line in text.splitlines() if "<lambda> (p.py:7)" in line)
    assert row.index("<lambda> (p.py:7)") < row.index("_call_unconverted")
    assert "kept alive (traceback, found in 0.5 s): state tuple → list [1]" in text


def test_check_view_shows_the_types_middle_count_and_says_none_by_the_rule():
    from rich.console import Console

    def text(types: list) -> str:
        rec = {
            "pair": "p.py:make",
            "verdict": "leak",
            "phase": None,
            "repetition": "one call",
            "signals": ["python objects"],
            "metrics": {"peak_above_baseline_bytes": 0},
            "seconds": 1.0,
            "diagnosis": {
                "target_kind": "function",
                "types": types,
                "attribution": {"na": "no TF"},
                "top_stacks": [],
                "stack_growth": [],
                "reference_chain": {},
                "hints": [],
            },
        }
        console = Console(width=200, record=True)
        for item in report.check_view(rec):
            console.print(item)
        return console.export_text()

    shown = text(
        [
            {"type": "Leak", "per_repetition": 5.0, "baseline": 100, "middle": 130, "end": 160},
            # an older record: no middle
            {"type": "Old", "per_repetition": 4.0, "baseline": 1, "end": 49},
        ]
    )
    cells = {
        row[0]: row[1:]
        for line in shown.splitlines()
        if line.startswith("│")
        for row in [[c.strip() for c in line.split("│")[1:-1]]]
    }
    assert cells["Leak"] == ["+5.0", "100", "130", "160"] and cells["Old"] == [
        "+4.0",
        "1",
        "—",
        "49",
    ]
    assert (
        "Python types that grew: none (≥ 3 objects/repetition "
        "over the repetitions and over each half)" in text([])
    )


# --- on TensorFlow ---

SCENARIO_FILES = [
    (name, variant) for name in catalog.pair_names(ROOT) for variant in ("leaky", "fixed")
]
# tf_records (tests/conftest.py): `leakbench check` of every scenario and fix file and of
# the factories in check_tf.py, each measured once per test run


@pytest.mark.tf
@pytest.mark.parametrize("name, variant", SCENARIO_FILES)
def test_check_gives_the_run_verdict_on_every_scenario_and_fix(tf_records, name, variant):
    rec = tf_records[(name, variant)]
    (target,) = catalog.targets(ROOT, [name], variant)
    expected = target.expected  # a REPORTED pair's leaky variant may read either on this release
    assert expected.accepts(rec), report.check_summary(rec)
    assert rec["variant"] == "check" and rec["diagnosis"]["attribution"]


@pytest.mark.tf
@pytest.mark.parametrize(
    "name, stage",
    [
        ("unbounded_cache", "MemoryCache"),
        ("oversized_prefetch", "Prefetch"),
        ("unbounded_interleave", "ParallelInterleave"),
    ],
)
def test_attribution_names_the_stage_of_the_peak_pairs(tf_records, name, stage):
    att = tf_records[(name, "leaky")]["diagnosis"]["attribution"]
    assert att["holder"] and att["holder"]["stage"].startswith(stage), att
    assert att["holder"]["subtree_bytes"] >= 16 << 20


@pytest.mark.tf
def test_attribution_names_shuffle(tf_records):
    rec = tf_records[("shuffle_buffer", "factory")]
    assert rec["diagnosis"]["target_kind"] == "dataset"
    assert rec["diagnosis"]["attribution"]["holder"]["stage"] == "Shuffle"
    assert rec["diagnosis"]["attribution"]["holder"]["subtree_bytes"] >= 16 << 20


@pytest.mark.tf
def test_leaking_dataset_factory_and_its_stack(tf_records):
    rec = tf_records[("stateful_map", "factory")]
    assert rec["verdict"] == "leak", report.check_summary(rec)
    frames = [f for s in rec["diagnosis"]["top_stacks"] for f in s["frames"]]
    assert any(f.startswith("_keep (") for f in frames), frames


@pytest.mark.tf
def test_leaking_dataset_factory_grows_at_the_line_that_keeps_the_elements(tf_records):
    rec = tf_records[("stateful_map", "factory")]
    line = next(
        i
        for i, text in enumerate(TF.read_text().splitlines(), 1)
        if "KEPT.append(x.copy())" in text
    )
    top = rec["runs"][0]["heap"]["stack_growth"][0]
    assert top["user_frame"] == f"_keep (tests/data/check_tf.py:{line})", top
    assert top["bytes_per_rep"] >= 3 << 20 and len(top["bytes"]) == TF_SETTINGS.heap_reps
    assert any(
        f"comes from _keep (tests/data/check_tf.py:{line})" in h for h in rec["diagnosis"]["hints"]
    )
    stages = rec["runs"][0]["stages"]
    assert stages["tensorflow"] and {"stage", "inside", "bytes", "autotune"} <= set(
        stages["stages"][0]
    )


@pytest.mark.tf
def test_repetition_function_on_tf_is_no_leak_and_has_no_pipeline(tf_records):
    rec = tf_records[("bounded_steps", "factory")]
    assert rec["verdict"] == "no-leak", report.check_summary(rec)
    assert rec["diagnosis"]["target_kind"] == "function"
    assert "not a dataset" in rec["diagnosis"]["attribution"]["na"]


@pytest.mark.tf
def test_check_and_run_agree_on_a_real_run(tf_records):
    """One real comparison: `run`'s measurement of a pair against check's record, on both verdicts
    (dataset_per_step: leak and no-leak on every release measured, at about 9 s a side)."""
    for variant in ("leaky", "fixed"):
        target = Target(
            read_metadata(ROOT / catalog.VARIANT_DIRS[variant] / "dataset_per_step.py"), variant
        )
        ran = measure(target, target.scenario.params, TF_SETTINGS)  # the settings tf_records used
        assert ran["verdict"] == tf_records[("dataset_per_step", variant)]["verdict"]


def test_the_pytest_plugin_is_registered_as_an_entry_point():
    """pytest finds the plugin (and its marker) without
    a pytest_plugins line: pyproject's pytest11."""
    from importlib import metadata

    found = [e for e in metadata.entry_points(group="pytest11") if e.name == "leakbench"]
    assert [e.value for e in found] == ["leakbench.pytest_plugin"]
