"""One number per verdict (issue 31): the engine decides once and writes its decision into the
record (leakbench.analysis.decision); every view formats that decision and none re-derives it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from leakbench import metrics
from leakbench.analysis import decision
from leakbench.history import matrix, store
from leakbench.reporters import history as history_md
from leakbench.reporters import table
from leakbench.site import lessons

PACKAGE = Path(decision.__file__).resolve().parents[1]
VIEWS = ("reporters", "site", "history")
RESULTS = PACKAGE.parent / "results"
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


def _committed() -> list[dict]:
    return [
        rec
        for machine in store.machines(RESULTS)
        for path in store.available(RESULTS, machine).values()
        for rec in store.read_records(path)
    ]


def test_every_view_shows_the_one_deciding_number_of_each_committed_record():
    """The run table, the matrix's cell, the index's cell and the lesson's verdict show the same
    words, decision.number of the record's decision; the JSON keeps it whole."""
    recs = _committed()
    assert len(recs) >= 400
    for rec in recs:
        found = decision.of(rec)
        words = decision.number(found)
        assert table.decided_by(rec) == words
        cell = matrix.cell(rec)
        assert cell["decision"] == found
        assert f" · {words}" in history_md.matrix_cell(cell)
        assert lessons.cell_view(cell)["number"] == words
        assert lessons.verdict_view(rec)["number"] == words


def test_no_committed_cell_contradicts_its_verdict():
    """A leak's number is its deciding signal at or over its bar (a peak: its rise and k at or
    over theirs); every no-leak's number is under its bar, or the decision says why."""
    for rec in _committed():
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
