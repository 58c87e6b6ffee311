"""One number per verdict (issue 31): the engine decides once and writes its decision into the
record (analysis.judge.decision); every view formats that decision and none re-derives it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from leakbench import metrics
from leakbench.analysis.judge import decision, in_words
from leakbench.history import compare as comparing
from leakbench.history import machines, matrix, store
from leakbench.reporters import gate as gate_md
from leakbench.reporters import history as history_md
from leakbench.reporters import table
from leakbench.site import lessons, stages

PACKAGE = Path(decision.__file__).resolve().parents[2]  # leakbench/ (analysis/judge/decision.py)
VIEWS = ("reporters", "site", "history")
ROOT = PACKAGE.parent
# what computes a slope or decides against a bar: leakbench's rules and estimators, and the
# fitting functions of numpy and scipy
DECIDING_CALLS = {
    "rate",
    "memory_rate",
    "moved",
    "moved_signals",
    "steady",
    "steady_signals",
    "decide",
    "trend",
    "theil_sen",
    "theilslopes",
    "linregress",
    "polyfit",
    "envelope_rises",
}


def _bar_name(node: ast.AST) -> str | None:
    """The name of a bar a comparison reads: a *_MIN constant, or a metric's .threshold."""
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
    if name and (name.endswith("_MIN") or name == "threshold" or name == "TREND_P_MAX"):
        return name
    return None


def _problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in DECIDING_CALLS:
                found.append(f"{path.name}:{node.lineno} calls {name}()")
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                bar = next((b for n in ast.walk(side) if (b := _bar_name(n))), None)
                if bar:
                    found.append(f"{path.name}:{node.lineno} compares with {bar}")
    return found


@pytest.mark.parametrize("folder", VIEWS)
def test_no_view_computes_a_slope_or_compares_with_a_bar(folder):
    files = sorted((PACKAGE / folder).glob("*.py"))
    assert files
    problems = [p for f in files for p in _problems(f)]
    assert problems == [], "a view re-derives a decision: read decision.of(record) instead"


def test_the_check_catches_a_view_that_decides(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from leakbench import metrics\n"
        "def cell(rec):\n"
        "    value = metrics.rate(rec['metrics']['held_growth'])\n"
        "    return 'leak' if value >= metrics.HELD_SLOPE_MIN else 'no-leak'\n"
    )
    assert _problems(bad) == ["bad.py:3 calls rate()", "bad.py:4 compares with HELD_SLOPE_MIN"]


# The committed records are results/ as committed (conftest's committed_results), never the
# working copy (a run files beside it, `leakbench publish` regenerates it); whichever machines it
# holds, the published one (results/reference.json, else store.pick_machine) for one build's.


def _committed(results: Path) -> list[dict]:
    return [
        rec
        for machine in store.machines(results, with_local=False)
        for path in store.available(results, machine).values()
        for rec in store.read_records(path)
    ]


def _published_build(results: Path, build: str = "2.21.0") -> dict:
    """{(pair, variant): record} of the published machine's records of `build`."""
    machine = (machines.reference(results) or {}).get("machine") or store.pick_machine(results)
    return {
        (r["pair"], r["variant"]): r
        for r in store.read_records(store.records_path(results, machine, build))
    }


def test_every_view_shows_the_one_deciding_number_of_each_committed_record(committed_results):
    """The run table, the matrix's cell, the index's cell and the lesson's verdict show the same
    words, decision.number of the record's decision; the JSON keeps it whole."""
    recs = _committed(committed_results)
    # every pair of the catalog has committed records: none of the checks below is vacuous
    assert {r["pair"] for r in recs} == {p.stem for p in (ROOT / "scenarios").glob("*.py")}
    for rec in recs:
        found = decision.of(rec)
        words = in_words.number(found)
        assert table.decided_by(rec) == words
        cell = matrix.cell(rec)
        assert cell["decision"] == found
        assert f" · {words}" in history_md.matrix_cell(cell)
        assert lessons.cell_view(cell)["number"] == words
        assert lessons.verdict_view(rec)["number"] == words


def test_compare_and_the_gate_show_the_matrix_cells_deciding_number_on_each_side(
    committed_results,
):
    """`compare` and the gate (one classification: history.compare) on each two consecutive
    versions of every committed machine: each side of an entry, in the JSON and in the summary's
    line, is the verdict and the number of that record's matrix cell. Consecutive pairs put every
    record on one side at least. The compared metric of its deciding signal reads the decision's
    number, a confirmation's where one decided (retracing's fix on 2.16.2 read +13.4 KiB/rep, its
    first run's, in the row and +5, its confirmation's, in the line)."""
    checked = set()
    for machine in store.machines(committed_results, with_local=False):
        table_of = matrix.matrix(committed_results, machine)
        cells = {(r["pair"], r["variant"]): r["cells"] for r in table_of["rows"]}
        found = store.by_version(committed_results, machine)
        versions = table_of["versions"]
        for old, new in zip(versions, versions[1:]):
            c = comparing.compare(old, list(found[old].values()), new, list(found[new].values()))
            rows = {(r["pair"], r["variant"], r["key"]): r for r in c.rows}
            for e in c.entries:
                key = (e["pair"], e["variant"])
                for side, version in (("old", old), ("new", new)):
                    cell = cells[key][version]
                    if cell is None:
                        assert e[side] is None, (machine, version, key)
                        continue
                    words = f"{cell['verdict']} · {in_words.number(cell['decision'])}"
                    assert e[side] == words, (machine, version, key)
                    assert f" · {in_words.number(cell['decision'])}" in history_md.matrix_cell(cell)
                    assert words in gate_md.entry_line(e, c.factor), (machine, version, key)
                    checked.add((machine, version, key))
                    deciding = metrics.BY_SIGNAL.get(cell["decision"]["signal"] or "")
                    if deciding and deciding.label == cell["decision"]["label"]:
                        row = rows.get((*key, deciding.key))
                        if row is not None:
                            assert row[side] == cell["decision"]["value"], (machine, version, key)
    assert len(checked) == len(_committed(committed_results))


def test_no_committed_cell_contradicts_its_verdict(committed_results):
    """A leak's number is its deciding signal at or over its bar (a peak: its rise and k at or
    over theirs); every no-leak's number is under its bar, or the decision says why."""
    for rec in _committed(committed_results):
        found = decision.of(rec)
        value, bar, verdict = found["value"], found["bar"], rec["verdict"]
        if value is None or bar is None or verdict not in ("leak", "no-leak"):
            continue
        where = (rec["pair"], rec["variant"], rec["environment"].get("tensorflow"))
        if verdict == "leak":
            assert value >= bar or found["why"], where
            if found["signal"] == metrics.PEAK_SIGNAL:
                assert found["exponent"] >= found["k_bar"], where
        else:
            peak_bounded = found["signal"] == metrics.PEAK_SIGNAL and (
                found["exponent"] is None or found["exponent"] < found["k_bar"]
            )
            assert value < bar or peak_bounded or found["why"], where


def test_a_lesson_opens_with_the_chart_that_decided(committed_results):
    """generator_per_step's leak rests on Python objects (its held memory is flat): its lesson's
    first chart is the Python objects panel; stateful_map's rests on held memory: the memory
    chart."""
    recs = _published_build(committed_results)
    for pair, panel in (("generator_per_step", "python_objects"), ("stateful_map", None)):
        charted = {v: recs[(pair, v)] for v in ("leaky", "fixed")}
        found = lessons.deciding_chart(charted, ["drawn"] * 3)
        drawn = None if found["panel"] is None else lessons.charts.PANELS[found["panel"]].key
        assert drawn == panel, pair
        assert found["words"]["leaky"] == in_words.number(decision.of(charted["leaky"]))


def test_a_chain_both_variants_share_is_not_shown_as_the_holder():
    """stateful_map on 2.21.0, as an earlier engine recorded it (a fixture: tests/data/chains):
    both variants reach a ReferenceType from TensorFlow's mode_keys module (its ABC registry), so
    the lesson names no holder from it."""
    fixture = Path(__file__).parent / "data" / "chains" / "stateful_map-2.21.0.jsonl"
    recs = {(r["pair"], r["variant"]): r for r in store.read_records(fixture)}
    found = stages.reference_chains({v: recs[("stateful_map", v)] for v in ("leaky", "fixed")})
    assert [c["variant"] for c in found] == ["leaky", "fixed"]
    assert all("chain" not in c and "mode_keys" in c["why"] for c in found)


def test_a_reference_chain_prefers_the_pipelines_own_module(tmp_path, monkeypatch):
    """The instance is reachable from a library module (json) in three links and from the
    pipeline's own module in four: the chain shown starts at the pipeline's."""
    import json
    import sys
    import types

    from leakbench.engine import chain

    class Grown:
        pass

    kept = Grown()
    own = types.ModuleType("leakbench_test_pipeline")
    own.__file__ = str(tmp_path / "leakbench_test_pipeline.py")
    own.KEPT = [kept]
    monkeypatch.setitem(sys.modules, own.__name__, own)
    monkeypatch.setattr(json, "_leakbench_test_kept", kept, raising=False)
    growth = [{"type": Grown.__qualname__, "per_repetition": 100.0}]
    # the search walks this whole pytest process: room for a busy machine (the preference, not
    # the clock, is under test)
    monkeypatch.setattr(chain, "REFERENCE_SECONDS", 120.0)
    found = chain.reference_chain(growth, None, [kept])
    assert found["chain"][0] == "module leakbench_test_pipeline", found
    assert chain._library(json) and not chain._library(own)


def test_a_peak_pairs_freed_peak_is_no_fragmentation_and_the_free_form_says_its_number():
    """unbounded_interleave's fix at --jobs 2: AUTOTUNE's buffers grew under load, the run left
    malloc 100 MiB free (the trim gave back nothing: -21 MiB) and read fragmentation in one of two
    runs. A peak pair's level after its run is its own peak, freed: it reads no-leak by the peak
    rule. A growth pair with the same level reads fragmentation, and says the free bytes."""
    from leakbench.analysis.judge import verdict
    from leakbench.units import MIB

    level = {
        "trim_returned_bytes": -21 * MIB,
        "rss_held_bytes": 150 * MIB,
        "malloc_free_held_bytes": 100 * MIB,
        "rss_growth_bytes": 0,
        "malloc_free_growth_bytes": 0,
        "malloc_heap_unavailable": None,
    }
    peak = {**level, "peak_scaling": {"sizes": [1, 4], "peaks_bytes": [90 * MIB, 93 * MIB]}}
    assert verdict.unmoved(peak) == ("no-leak", [], None)
    assert verdict.unmoved(level) == ("fragmentation", [], verdict.FREE_FORM)
    rec = {"verdict": "fragmentation", "kind": "growth", "metrics": level, "signals": []}
    assert in_words.number(decision.of(rec)) == "malloc keeps 100.0 MiB free"
