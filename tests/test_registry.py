"""The registry drives the views: leakbench.metrics names every sample series and metric
once, with the views that show it; views and rules ask it instead of listing names of their own.

Read from the source with ast (nothing is imported to scan it), and on small synthetic records:
no subprocess, no TensorFlow.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from leakbench import metrics
from leakbench.analysis.judge import verdict
from leakbench.history import matrix, readings
from leakbench.reporters import table
from leakbench.site import colours

PACKAGE = Path(__file__).resolve().parents[1] / "leakbench"
# The faces, the rules that read the registry, and the schemas that check a record's metrics.
# metrics.py alone may spell a metric's key.
VIEWS = [
    *(PACKAGE / d for d in ("reporters", "site", "calibrate", "history", "cli")),
    PACKAGE / "check" / "diagnosis.py",
    *(
        PACKAGE / "analysis" / f
        for f in (
            "verdict.py",
            "validate.py",
            "json_schemas.py",
            "record_schema.py",
            "schema_parts.py",
        )
    ),
]
# The modules whose rules turn on a signal's name (record["signals"]); elsewhere "heap" and "peak"
# are also a run's heap pass, a child's phase and a scenario's kind.
SIGNAL_RULES = [PACKAGE / "check" / "diagnosis.py", PACKAGE / "analysis" / "verdict.py"]

NAMES = {m.key for m in metrics.METRICS} | {s.name for s in metrics.SERIES}
SIGNALS = {m.signal for m in metrics.METRICS if m.signal} | {metrics.PEAK_SIGNAL}


def literals(paths: list[Path], names: set[str]) -> list[str]:
    """ "file:line: 'name'" for every string literal
    (f-strings' text included) equal to one of `names`."""
    files = sorted({f for p in paths for f in ([p] if p.is_file() else p.rglob("*.py"))})
    found = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value in names
            ):
                where = path.relative_to(PACKAGE.parent) if PACKAGE in path.parents else path.name
                found.append(f"{where}:{node.lineno}: {node.value!r}")
    return found


def test_no_view_spells_a_metric_or_series_name():
    assert literals(VIEWS, NAMES) == []


def test_no_rule_spells_a_signal_name():
    assert literals(SIGNAL_RULES, SIGNALS) == []


def test_the_scan_finds_a_hard_coded_name(tmp_path):
    """The two tests above can fail: a key, a series or a signal spelled in a view is found,
    in a subscript, a tuple, a comparison; the same word inside a sentence is not."""
    (tmp_path / "view.py").write_text(
        '"""Shows held_growth and rss_bytes in words."""\n'
        'WIDE = ("held_growth", "trim_returned_bytes")\n'
        "def cell(m, signals):\n"
        '    if "open files" in signals:\n'
        '        return m["rss_bytes"], f"{m} held_growth"\n'
    )
    found = literals([tmp_path], NAMES | SIGNALS)
    assert [f.split(": ", 1)[1] for f in found] == [
        "'held_growth'",
        "'trim_returned_bytes'",
        "'open files'",
        "'rss_bytes'",
    ]


def test_every_number_a_record_computes_is_in_the_registry():
    """record.metrics sets each key of record["metrics"] by name: every one is a METRICS key or
    one of LEVELS, but for the two that are no number (the schema spells those)."""
    tree = ast.parse((PACKAGE / "analysis" / "record.py").read_text())
    function = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "metrics")
    keys = {
        target.slice.value
        for node in ast.walk(function)
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Subscript)
        and isinstance(target.value, ast.Name)
        and target.value.id == "out"
        and isinstance(target.slice, ast.Constant)
    }
    assert len(keys) > 10, "the scan found record.metrics' keys"
    others = keys - set(metrics.BY_KEY) - set(metrics.LEVELS)
    assert others == {"malloc_heap_unavailable", "peak_scaling"}
    assert not set(metrics.LEVELS) & set(metrics.BY_KEY)


@pytest.mark.parametrize(
    "view",
    [
        metrics.TABLE,
        metrics.WIDE,
        metrics.LESSON,
        metrics.MATRIX,
        metrics.MEMORY,
        metrics.COUNTS,
        metrics.CALIBRATION,
    ],
)
def test_every_view_has_its_entries_in_one_order(view):
    shown = [*metrics.series_in(view), *metrics.metrics_in(view)]
    assert shown, f"nothing in view {view!r}"
    places = [e.views[view] for e in shown]
    assert len(places) == len(set(places)), f"two entries share a place in view {view!r}"


def test_short_names_where_a_view_uses_them():
    for m in (*metrics.metrics_in(metrics.TABLE), *metrics.metrics_in(metrics.MATRIX)):
        assert m.short, m.key  # a column head, a matrix cell's evidence
    memory = [*metrics.series_in(metrics.MEMORY), *metrics.metrics_in(metrics.MEMORY)]
    shorts = [e.short for e in memory]
    assert all(shorts) and len(set(shorts)) == len(shorts)
    # every line has its colour (colours.py: every colour, once)
    assert set(shorts) <= set(colours.SERIES)


def test_the_run_table_keeps_its_columns():
    """The columns the views listed before the registry drove them: same heads, same order."""
    assert table.columns() == [
        "pair",
        "variant",
        "verdict",
        "should read",
        "decided by",
        "peak MiB",
        "seconds",
    ]
    assert table.columns(wide=True) == [
        "pair",
        "variant",
        "verdict",
        "should read",
        "signals",
        "decided by",
        "peak MiB",
        "held memory KiB/rep",
        "RSS KiB/rep",
        "malloc in use KiB/rep",
        "returned by malloc_trim MiB",
        "memray heap KiB/rep",
        "threads /rep",
        "Python objects /rep",
        "seconds",
    ]


def _trend(slope: float) -> dict:
    return {
        "slope": slope,
        "low": slope,
        "high": slope,
        "p_increasing": 1e-4,
        "first_half": slope,
        "second_half": slope,
        "unit": "bytes/repetition",
    }


def _metric_record(found: dict) -> dict:
    return {
        "pair": "p",
        "variant": "leaky",
        "kind": "growth",
        "verdict": "leak",
        "signals": ["rss"],
        "expects": None,
        "requires": None,
        "metrics": found,
        "seconds": 1.0,
        "phase": None,
    }


@pytest.mark.parametrize(
    "found",
    [
        # held memory not measured
        {"rss_growth": _trend(600 * 1024)},
        # ... or without a trend
        {"rss_growth": _trend(600 * 1024), "held_growth": None},
        {
            "rss_growth": _trend(600 * 1024),
            "held_growth": _trend(90 * 1024),  # glibc's counters n/a
            "malloc_heap_unavailable": "libjemalloc is loaded",
        },
    ],
)
def test_a_record_without_held_memory_reads_rss_in_every_view(found):
    """memory_basis is the one answer: the verdict's rules, the record's words, the run table,
    the matrix and bisect all name RSS and its rate."""
    rec = _metric_record(found)
    assert verdict.memory_basis(found).metric is metrics.RSS
    assert verdict.memory_basis(found).words.startswith("rss (held memory ")
    assert verdict.moved_signals(found) == ["rss"]
    assert table.decided_by({**rec, "signals": []}) == "rss +600 KiB/rep"
    assert matrix.cell({**rec, "signals": []})["decision"]["value"] == 600 * 1024
    assert readings.rate_of({**rec, "signals": []}) == ("RSS", 600 * 1024, "bytes/repetition")
