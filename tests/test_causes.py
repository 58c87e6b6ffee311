"""Naming the known cause (leakbench.check.causes): on the committed records alone, no TensorFlow.

The leave-one-out names at least 18 of the CPU leaky pairs right and no fix as a cause, and its
committed table (results/causes-leave-one-out.md) is what `leakbench causes --leave-one-out`
prints; evidence that shares nothing with any known cause names none, nor does evidence that
shares the signals alone; a fix names none; the check view of a record shows the cause with its
lesson and the fix's diff.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from conftest import invoke

from leakbench.check import cause_features, causes, leave_one_out
from leakbench.check import pipeline as checking
from leakbench.cli.base import as_text
from leakbench.history import machines, store
from leakbench.reporters import causes as causes_view
from leakbench.reporters.check import check_summary, check_view

ROOT = Path(__file__).parent.parent
TABLE = "causes-leave-one-out.md"


# The records are results/ as committed (conftest's committed_results), never the working copy
# (a run files beside it, `leakbench publish` regenerates it); the machine is the published
# dataset's (results/reference.json), else the one store.pick_machine reads, not a name written
# here: the dataset is regenerated under the reference machine's name.
@pytest.fixture(scope="module")
def machine(committed_results) -> str:
    return (machines.reference(committed_results) or {}).get("machine") or store.pick_machine(
        committed_results
    )


@pytest.fixture(scope="module")
def committed_root(committed_results, tmp_path_factory) -> Path:
    """A root (LEAKBENCH_ROOT) whose results/ is the committed one, its scenarios/ and fixes/
    the checkout's: where a command reads the known causes from root/results."""
    root = tmp_path_factory.mktemp("causes-root")
    for name in ("scenarios", "fixes"):
        (root / name).symlink_to(ROOT / name)
    (root / "results").symlink_to(committed_results)
    return root


@pytest.fixture
def in_committed_root(committed_root, monkeypatch) -> Path:
    monkeypatch.setenv("LEAKBENCH_ROOT", str(committed_root))
    monkeypatch.chdir(committed_root)
    return committed_root


@pytest.fixture(scope="module")
def evaluation(committed_results, machine) -> leave_one_out.Evaluation:
    return leave_one_out.evaluate(committed_results, machine)


@pytest.fixture(scope="module")
def known(committed_results) -> causes.Known:
    return causes.known_from(
        causes.committed(committed_results), [p.stem for p in (ROOT / "scenarios").glob("*.py")]
    )


@pytest.fixture(scope="module")
def held_out(committed_results, machine):
    """held_out(pair, variant): the committed record of the machine on 2.21.0, the pin."""
    found = store.read_records(store.records_path(committed_results, machine, "2.21.0"))

    def pick(pair: str, variant: str) -> dict:
        return next(dict(r) for r in found if (r["pair"], r["variant"]) == (pair, variant))

    return pick


def test_leave_one_out_names_the_held_out_pairs_and_no_fix(evaluation):
    assert len(evaluation.pairs) >= 20  # every CPU leaky pair (the GPU pair reads skipped)
    wrong = [p.pair for p in evaluation.pairs if not p.held_out.right]
    assert evaluation.right >= 18, wrong
    assert evaluation.fixes and not evaluation.fixes_named, evaluation.fixes_named


def test_the_committed_table_is_what_the_command_prints(evaluation, machine, in_committed_root):
    done = invoke("causes", "--leave-one-out", "--machine", machine)
    assert done.exit_code == 0, done.output
    assert done.stdout == (in_committed_root / "results" / TABLE).read_text(), (
        "regenerate: leakbench causes --leave-one-out --out results/causes-leave-one-out.md"
    )
    assert done.stdout == causes_view.leave_one_out_markdown(evaluation)


def test_a_held_out_record_is_named_by_the_same_pair_on_other_releases(known, held_out, machine):
    rec = held_out("kept_iterators", "leaky")
    skip = f"kept_iterators@{machine} 2.21.0"
    ranked = sorted(
        causes.scores(cause_features.features(rec), known, skip=[skip]).items(),
        key=lambda kv: -kv[1][0],
    )
    assert ranked[0][0] == "kept_iterators" and ranked[0][1][0] >= causes.MATCH_MIN


def test_evidence_without_a_record_names_a_cause(known):
    """What a loop watcher hands in: a mapping of the run's keys, no record around it."""
    evidence = {
        "signals": ["held", "heap", "threads", "python objects"],
        "python_type_growth": [
            {"type": "traceback", "per_repetition": 24.0},
            {"type": "frame", "per_repetition": 17.0},
            {"type": "InvalidArgumentError", "per_repetition": 1.0},
        ],
    }
    named = causes.name_causes(evidence, known)
    assert named and named[0].pair == "kept_iterators"
    assert named[0].lesson == "site/lessons/kept_iterators.html"
    assert "+++ fixes/kept_iterators.py" in named[0].diff


def test_evidence_like_no_known_cause_names_none(known):
    evidence = {
        "verdict": "leak",
        "signals": ["open files"],  # no pair of the suite leaks descriptors
        "python_type_growth": [{"type": "BufferedReader", "per_repetition": 5.0}],
    }
    assert causes.name_causes(evidence, known) == []
    sentence = causes.none_matches(evidence, known)
    assert sentence.startswith(f"none of the {len(known.pairs)} known causes matches")
    assert len(known.pairs) == 22


@pytest.mark.parametrize("pair", ["stateful_map", "unbounded_cache", "kept_iterators"])
def test_a_fix_names_no_cause(known, held_out, pair):
    fixed = held_out(pair, "fixed")
    assert fixed["verdict"] == "no-leak"
    assert causes.name_causes(fixed, known) == []
    assert causes.none_matches(fixed, known) == "nothing grew: no cause to name"


def test_check_view_shows_the_cause_its_lesson_and_the_fix(held_out, in_committed_root):
    """A committed leaky record dressed as a check record: the view names its pair first, with
    the lesson's page, the fix's files and diff; the plain summary carries the same hint."""
    rec = copy.deepcopy(held_out("stateful_map", "leaky"))
    rec["variant"], rec["pair"] = "check", "check my_pipeline.py:make_dataset"
    rec["diagnosis"] = checking.diagnosis(rec)
    shown = as_text(*check_view(rec))
    assert "hint: nearest known cause: stateful_map" in shown
    assert "lesson: site/lessons/stateful_map.html" in shown
    assert "fix: diff scenarios/stateful_map.py fixes/stateful_map.py" in shown
    assert '+    STATS["count"] += 1' in shown  # a line of the fix's diff
    assert "nearest known cause: stateful_map" in check_summary(rec)
    json.dumps(rec)  # the record stays JSON


def test_check_view_says_when_none_matches():
    lines = causes_view.check_lines({"named": [], "none": "none of the 22 known causes matches"})
    assert lines == ["known causes: none of the 22 known causes matches"]


def test_causes_command_names_the_cause_of_a_record_file(tmp_path, held_out, in_committed_root):
    path = tmp_path / "record.json"
    path.write_text(json.dumps(held_out("dataset_per_step", "leaky")))
    done = invoke("causes", path)
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines()[1].strip().startswith("dataset_per_step · similarity")
    assert invoke("causes").exit_code == 2


def test_signals_alone_that_fit_many_causes_name_none(known):
    """The peak signal alone fits the six peak pairs alike: no cause is named, and it says so."""
    evidence = {"verdict": "leak", "signals": ["peak"]}
    assert causes.name_causes(evidence, known) == []
    said = causes.none_matches(evidence, known)
    assert said.startswith("the evidence fits 6 known causes alike (captured_tensor_map, ")


def test_a_pure_python_leak_sharing_only_the_held_signal_names_no_cause(known):
    """A target that leaks a dict of ints, no TensorFlow: what grew is held memory, no type read
    (python objects did not move), no tf.data stage, no library allocation site. The held signal
    alone matches py_function_map's records on old releases at a cosine of 1.00 (one shared
    feature is 1.00 by construction): it says what grew, not why, so no cause is named."""
    evidence = {
        "verdict": "leak",
        "signals": ["held"],
        "python_type_growth": [
            {"type": "dict", "per_repetition": 1.0},
            {"type": "int", "per_repetition": 1024.0},
        ],
        "reference_chain": {"chain": ["module leaky_dict", "dict CACHE"]},
        "heap": {"stack_growth": [{"bytes_per_rep": 64 * 1024, "frames": ["grow (leaky.py:7)"]}]},
    }
    found = cause_features.features(evidence)
    assert {g: sorted(v) for g, v in found.items() if v} == {"signal": ["held"]}
    assert causes.name_causes(evidence, known) == []
    said = causes.none_matches(evidence, known)
    assert "signals alone" in said and "py_function_map" not in said, said
