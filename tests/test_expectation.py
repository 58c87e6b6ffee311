"""The one expectation model (leakbench.expectation): what each variant should read,
as its contract declares, and nothing else passes."""

from __future__ import annotations

import pytest

from leakbench import expectation
from leakbench.cli import check_exit_code

CLAIM = {"issue": "tensorflow/tensorflow#61344", "leaks_on": ["2.13.0"], "fixed_in": "2.15.0"}
WORDS = ("leak", "no-leak", "fragmentation", "over-cap", "hang", "error", "skipped")


def rec(
    word: str, variant: str = "leaky", phase: str | None = None, signals=(), **contract
) -> dict:
    return {
        "verdict": word,
        "variant": variant,
        "phase": phase,
        "signals": list(signals),
        "reported": contract.get("reported"),
        "expects": contract.get("expects"),
        "requires": contract.get("requires"),
    }


def accepted(variant: str, **contract) -> set:
    return {w for w in WORDS if expectation.accepts(rec(w, variant, "repetitions", **contract))}


def test_each_variant_accepts_only_what_its_contract_declares():
    assert accepted("leaky") == {"leak", "over-cap"}
    assert accepted("leaky", reported=CLAIM) == {"leak", "no-leak", "over-cap"}
    assert accepted("leaky", expects="fragmentation") == {"fragmentation"}
    assert accepted("fixed") == {"no-leak"}
    # a claim about the leak never excuses the fix
    assert accepted("fixed", reported=CLAIM) == {"no-leak"}
    assert accepted("fixed", requires="GPU") == {"no-leak", "skipped"}
    # a library its ENV preloads (contract.Scenario.needs), which the machine may lack
    assert accepted("fixed", requires="libtcmalloc_minimal.so.4") == {"no-leak", "skipped"}
    assert accepted("check") == accepted("file") == {"no-leak", "fragmentation", "skipped"}


def test_both_sides_reading_fragmentation_do_not_pass_undeclared():
    assert not expectation.accepts(rec("fragmentation", "leaky"))
    assert not expectation.accepts(rec("fragmentation", "fixed"))


@pytest.mark.parametrize(
    "phase, ok",
    [
        ("import", False),
        ("setup", False),
        ("warm-up", True),
        ("repetitions", True),
        ("heap", True),
        ("teardown", False),
    ],
)
def test_an_over_cap_passes_for_a_leak_only_once_the_pipeline_runs(phase, ok):
    assert expectation.accepts(rec("over-cap", "leaky", phase)) is ok
    assert not expectation.accepts(rec("over-cap", "fixed", phase))


def test_a_teardown_stall_passes_only_after_the_signals_moved():
    assert expectation.accepts(rec("hang", "leaky", "teardown", ["threads"]))
    assert not expectation.accepts(rec("hang", "leaky", "teardown"))
    assert not expectation.accepts(rec("hang", "leaky", "repetitions", ["threads"]))


@pytest.mark.parametrize(
    "word, phase, signals, code",
    [
        ("no-leak", None, [], 0),
        ("fragmentation", None, [], 0),
        ("skipped", None, [], 0),
        ("leak", None, ["held"], 1),
        ("over-cap", "repetitions", [], 1),
        ("hang", "teardown", ["threads"], 1),
        ("hang", "repetitions", [], 1),  # a hang is a verdict
        ("error", "setup", [], 3),  # the target could not be measured: a failure
    ],
)
def test_check_exit_code_asks_the_check_expectation(word, phase, signals, code):
    assert check_exit_code(rec(word, "check", phase, signals)) == code
