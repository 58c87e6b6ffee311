"""scripts/noise-floors' readings on fake records, longer looks and calibration observations:
nothing is measured, no file is read or written, no TensorFlow."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path

import pytest

from leakbench import bars, metrics
from leakbench.analysis.judge import verdict
from leakbench.units import KIB

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "noise-floors"


@pytest.fixture(scope="module")
def floors():
    loader = importlib.machinery.SourceFileLoader("noise_floors", str(SCRIPT))
    spec = importlib.util.spec_from_loader("noise_floors", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def floor_trend(rate: float, p: float = 1e-6) -> dict:
    """A trend whose rate (the least of the slope and its halves) is `rate`, bytes/rep."""
    return {
        "slope": rate + KIB,
        "first_half": rate,
        "second_half": rate + KIB / 2,
        "p_increasing": p,
    }


def floor_record(pair: str, held: float, variant: str = "fixed", **kw) -> dict:
    """A record of kind growth whose first run's held memory and allocated bytes rose by `held`
    (bytes/rep), decided by its first run unless `decision` says otherwise."""
    trend = floor_trend(held, kw.get("p", 1e-6))
    return {
        "pair": pair,
        "variant": variant,
        "kind": kw.get("kind", "growth"),
        "verdict": kw.get("verdict", "no-leak"),
        "reported": kw.get("reported"),
        "expects": None,
        "requires": None,
        "metrics": {"held_growth": trend, "allocated_growth": trend},
        "decision": kw.get("decision", {"source": "first run"}),
    }


def floor_observation(holder: str, size: int, held: float, leaks: bool, shape: str) -> dict:
    """A calibration run (calibration.observe's keys the script reads): held memory `held`
    bytes/rep, memray's heap flat without a trend, no RSS trend."""
    return {
        "holder": holder,
        "shape": shape,
        "leaks": leaks,
        "bytes_per_rep": size,
        "held_trend": floor_trend(held),
        "heap_trend": floor_trend(0.0, p=1.0),
        "rss_trend": None,
    }


def test_a_reading_is_the_judges(floors):
    t = {"slope": 9000.0, "first_half": 2000.0, "second_half": 7000.0, "p_increasing": 0.001}
    found = floors.reading(t, 2000.0, "x, 2.21.0")
    assert found["rate"] == verdict.rate(t) == 2000.0 and found["at_bar"]
    assert not found["at_probe"]  # 2,000 bytes is under 8 KiB
    assert not floors.reading(t, 2001.0, "x")["at_bar"]
    assert floors.reading(t, None, "x")["at_bar"] is None  # no bar of its own
    assert not floors.reading({**t, "p_increasing": bars.TREND_P_MAX}, 1000.0, "x")["at_bar"]


def test_groups_pick_growth_fixes_and_leaky_sides_that_may_read_no_leak(floors):
    reported = {"issue": "x#1", "leaks_on": ["2.1.0"], "fixed_in": None, "note": "n"}
    assert floors.is_fix(floor_record("a", 1.0))
    assert not floors.is_fix(floor_record("a", 1.0, kind="peak"))
    assert not floors.is_fix(floor_record("a", 1.0, verdict="skipped"))
    assert floors.is_leaky_read_clean(floor_record("a", 1.0, "leaky", reported=reported))
    # a leaky side that must leak, or a reported one that read leak, is in neither group
    assert not floors.is_leaky_read_clean(floor_record("a", 1.0, "leaky"))
    leak = floor_record("a", 1.0, "leaky", reported=reported, verdict="leak")
    assert not floors.is_leaky_read_clean(leak)


def test_a_summary_names_its_largest_and_each_builds_largest(floors):
    fixes = [
        ("2.16.2", floor_record("noisy", 12 * KIB)),
        ("2.16.2", floor_record("calm", 1 * KIB)),
        ("2.21.0", floor_record("wander", 9 * KIB, p=0.3)),  # no trend: never moves
        ("2.21.0", floor_record("small", 2 * KIB)),
    ]
    got = floors.summary(floors.first_runs(fixes, metrics.HELD))
    assert (got["n"], got["median"], got["p90"]) == (4, 5.5 * KIB, pytest.approx(11.1 * KIB))
    assert (got["largest"]["rate"], got["largest"]["set_by"]) == (12 * KIB, "noisy, 2.16.2")
    assert got["by_build"] == {"2.16.2": 12 * KIB, "2.21.0": 9 * KIB}
    assert got["at_bar"] == 0  # 12 KiB is under held memory's 13
    assert got["at_probe"] == 1  # 9 KiB has no trend
    assert floors.summary(floors.first_runs(fixes, metrics.ALLOCATED))["at_bar"] is None


def test_a_longer_look_is_read_as_the_judge_reads_it(floors, monkeypatch):
    """A record whose decision came from a longer look: its number and why are the decision's,
    its later half protocol.later_metrics' of the look's run; a first run's decision, or a look
    that measured nothing, gives no row."""
    seen = []

    def later_metrics(run):
        seen.append(run)
        return {"held_growth": floor_trend(12 * KIB), "allocated_growth": floor_trend(13 * KIB)}

    monkeypatch.setattr(floors.protocol, "later_metrics", later_metrics)
    why = "measured 72 more: the lows of allocated bytes rose (+13 KiB/rep): under the bar"
    decision = {"source": "extension", "label": "held memory", "value": 12 * KIB, "why": why}
    rec = floor_record("dataset_per_step", 13 * KIB, decision=decision)
    rec["extension"] = {"status": "ok", "run": {"series": "the look's"}}
    row = floors.looked("2.16.2", rec)
    assert seen == [{"series": "the look's"}]
    assert (row["look"], row["verdict"], row["value"], row["why"]) == (
        "extension",
        "no-leak",
        12 * KIB,
        why,
    )
    held = row["later"]["held memory"]
    assert held["at_probe"] and not held["at_bar"]  # 12 KiB/rep: over 8, under held memory's 13
    assert row["later"]["allocated bytes"]["at_bar"] is None and "RSS" not in row["later"]
    assert floors.looked("2.16.2", floor_record("first", 1.0)) is None
    rec["extension"]["status"] = "over-cap"
    assert floors.looked("2.16.2", rec) is None
    said = floors.sentence(metrics.HELD, [], [held], [])
    assert "its later half moves on 1 of 1 fixes that had one (1 more than at its bar)" in said
    assert said.startswith("Yes.") and "+12.0 (dataset_per_step, 2.16.2)" in said
    assert "+12.0, moves at 8 KiB" in "\n".join(floors.looks_table([row]))


def test_controls_and_leaks_at_8_kib_are_told_apart_only_where_every_run_is_over(floors):
    obs = [
        *(floor_observation("cache24", 8 * KIB, 8 * KIB, False, "bounded cache") for _ in range(3)),
        floor_observation("cache24", 64 * KIB, 64 * KIB, False, "bounded cache"),  # not at 0 or 8
        floor_observation("steady", 0, 0.5 * KIB, True, "steady"),  # nothing kept: a control
        floor_observation("steady", 8 * KIB, 9 * KIB, True, "steady"),
        floor_observation("steady", 8 * KIB, 7 * KIB, True, "steady"),
        floor_observation("steady", 16 * KIB, 16 * KIB, True, "steady"),  # neither
    ]
    assert len(floors.controls(obs, metrics.HELD, False)) == 5
    assert len(floors.controls(obs, metrics.HELD, True)) == 4
    table = floors.holder_table(obs)
    top = table["controls"]["held memory"]
    assert (top["rate"], top["set_by"]) == (8 * KIB, "cache24")
    assert table["controls"]["RSS"] is None  # no trend kept for it
    held = table["leaks"]["steady"]["held memory"]
    assert held == {"least": 7 * KIB, "over": 1, "n": 2}
    lines = "\n".join(floors.controls_table({**table, "designs": "d", "machine": "m", "file": "f"}))
    assert "| steady | +7.0, 1/2 over |" in lines and lines.endswith("| none |")


def test_the_sentence_is_computed_from_the_data(floors):
    quiet = [floor_observation("c", 0, 0.0, False, "sawtooth")]
    calm = floors.first_runs([("2.21.0", floor_record("calm", 2 * KIB))], metrics.HELD)
    said = floors.sentence(metrics.HELD, calm, [], quiet)
    assert said.startswith("No. held memory (its bar: +13.0 KiB/rep), at a bar of 8 KiB/rep")
    assert "0 of 1 fixes" in said and "0 of 1 control runs" in said
    noisy = floors.first_runs([("2.16.2", floor_record("noisy", 9 * KIB))], metrics.HELD)
    said = floors.sentence(metrics.HELD, noisy, [], quiet)
    assert said.startswith("Yes.") and "1 of 1 fixes (1 more than at its bar)" in said
    assert "the largest +9.0 (noisy, 2.16.2)" in said and "longer look" not in said
    assert "not recorded" in floors.sentence(metrics.ALLOCATED, [], [], quiet)
