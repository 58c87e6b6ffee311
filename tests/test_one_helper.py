"""One helper per job (issue 32): bytes for people through units.format_bytes (a metric's value
through its Metric.display), TensorFlow versions through history.builds, the default release
written once, and every bar of the verdict in leakbench.bars."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from leakbench import bars, units
from leakbench.analysis.judge import verdict
from leakbench.history import builds

PACKAGE = Path(units.__file__).resolve().parent
ROOT = PACKAGE.parent
VIEWS = ("reporters", "site", "cli", "check")
UNIT_NAMES = {"KIB", "MIB", "GIB"}
UNIT_VALUES = {units.KIB, units.MIB, units.GIB}
UNIT_SHIFTS = {10, 20, 30}  # n >> 20: bytes into MiB
# Divisions the views keep, by file and expression, each with why. A number a template formats
# itself: the templates (leakbench/site/templates/) are to take format_bytes' text instead.
KEPT = {
    ("site/stacks.py", "(s.get('bytes_per_rep') or 0.0) / KIB"): (
        "kib_per_rep: templates/memory.html.j2 formats it ('{:+,.0f}' KiB/repetition)"
    ),
    ("site/flamegraphs.py", "size / KIB"): (
        "the flame graph's kib: templates/lesson.html.j2 formats it ('{:,.0f}' KiB)"
    ),
    ("site/flamegraphs.py", "total / MIB"): (
        "retained_mib: templates/lesson.html.j2 formats it ('{:,.1f}' MiB)"
    ),
}
# Python files that construct a packaging Version besides leakbench/history/builds.py, with why.
VERSION_KEPT = {
    "leakbench/contract_rules.py": (
        "rank 0 (a scenario's REPORTS metadata: leaks_on, fixed_in), below history: it may not "
        "import builds (tests/test_layout.py)"
    ),
}
# The bars leakbench.analysis.judge.verdict re-exports (leakbench.bars', through the registry).
VERDICT_BARS = (
    "HELD_SLOPE_MIN",
    "RSS_SLOPE_MIN",
    "HEAP_SLOPE_MIN",
    "GPU_SLOPE_MIN",
    "COUNT_SLOPE_MIN",
    "OBJECT_SLOPE_MIN",
    "PEAK_RISE_MIN",
    "TREND_P_MAX",
    "PEAK_EXPONENT_MIN",
    "TRIM_SHARE_MIN",
    "TRIM_HELD_MIN",
    "FREE_HELD_MIN",
    "STEADY_RISE_SHARE",
    "STEP_SHARE_MAX",
)


def _constant(node: ast.AST) -> int | None:
    """The value of an integer written out (1024, 1 << 20, 2 ** 20, 1024 * 1024), else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.LShift, ast.Pow, ast.Mult)):
        left, right = _constant(node.left), _constant(node.right)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Mult):
            return left * right
        if right > 64:  # past any byte count: not worth computing
            return None
        return left << right if isinstance(node.op, ast.LShift) else left**right
    return None


def _is_unit(node: ast.AST) -> bool:
    """True for KIB, MIB, GIB (units.MIB too) or their value written out."""
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
    return name in UNIT_NAMES or _constant(node) in UNIT_VALUES


def _unit_text(node: ast.AST) -> bool:
    """True for a string that begins with a unit's name: the text after a hand-formatted number."""
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and re.match(r"\s?[KMG]iB\b", node.value) is not None
    )


def hand_divisions(source: str, name: str = "<source>") -> list[tuple[int, str]]:
    """(line, expression) of every byte count divided or shifted into a unit by hand in `source`,
    and of every number formatted by hand before a unit's name (f"{kib:,.0f} KiB")."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, (ast.BinOp, ast.AugAssign)):
            right = node.right if isinstance(node, ast.BinOp) else node.value
            if (isinstance(node.op, (ast.Div, ast.FloorDiv, ast.RShift)) and _is_unit(right)) or (
                isinstance(node.op, ast.RShift) and _constant(right) in UNIT_SHIFTS
            ):
                found.append((node.lineno, ast.unparse(node)))
        if isinstance(node, ast.JoinedStr):
            for value, after in zip(node.values, node.values[1:]):
                if (
                    isinstance(value, ast.FormattedValue)
                    and value.format_spec
                    and _unit_text(after)
                ):
                    found.append((node.lineno, ast.unparse(node)))
    return found


def _view_files() -> list[Path]:
    return sorted(p for folder in VIEWS for p in (PACKAGE / folder).glob("*.py"))


def test_no_view_divides_bytes_by_hand():
    files = _view_files()
    assert {f.parent.name for f in files} == set(VIEWS)
    found = [
        (f"{f.parent.name}/{f.name}", line, expr)
        for f in files
        for line, expr in hand_divisions(f.read_text(), str(f))
    ]
    wrong = [f"{where}:{line}: {expr}" for where, line, expr in found if (where, expr) not in KEPT]
    assert wrong == [], "bytes for people go through units.format_bytes (or a Metric's display)"
    # every exception still exists: one that no longer does is to be struck off KEPT
    assert sorted(set(KEPT) - {(where, expr) for where, _, expr in found}) == []


@pytest.mark.parametrize(
    "line",
    [
        "x = n / KIB",
        "x = n / units.MIB",
        "x = n // GIB",
        "x = n / 1024",
        "x = n / (1024 * 1024)",
        "x = n / (1 << 20)",
        "x = n / 2**30",
        "x = n >> 20",
        "n /= MIB",
        'x = f"{kib:,.0f} KiB per repetition"',
        'x = f"{n / 1048576:+,.1f}"',
    ],
)
def test_the_check_catches_bytes_divided_by_hand(line):
    assert len(hand_divisions(line)) == 1


@pytest.mark.parametrize(
    "line",
    [
        "x = format_bytes(n, unit=MIB)",
        "x = n * KIB",
        "x = n >= 100 * KIB",
        "x = seconds / 60",
        "x = out / 'index.html'",
        'x = f"{format_bytes(n, label=False)} MiB"',
        'x = f"{seconds:,.0f} s"',
    ],
)
def test_the_check_passes_what_is_no_byte_arithmetic(line):
    assert hand_divisions(line) == []


def test_format_bytes_signs_a_change():
    assert units.format_bytes(5939, unit=units.KIB, sign=True) == "+5.8 KiB"
    assert units.format_bytes(-5939, unit=units.KIB, sign=True) == "-5.8 KiB"
    assert units.format_bytes(-1, unit=units.MIB, sign=True, label=False) == "+0.0"
    assert units.format_bytes(None, sign=True) == "—"


def _version_calls(path: Path) -> list[str]:
    """Where `path` constructs a packaging Version: Version(...), packaging.version.parse(...)."""
    tree = ast.parse(path.read_text(), str(path))
    parse_names = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "packaging.version"
        for alias in node.names
        if alias.name == "parse"
    }
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        module = ast.unparse(func.value) if isinstance(func, ast.Attribute) else ""
        if name == "Version" or name in parse_names or (name == "parse" and "version" in module):
            found.append(f"{path.relative_to(ROOT).as_posix()}:{node.lineno}")
    return found


def _python_files() -> list[Path]:
    """The package, the asv glue and the Python scripts."""
    scripts = [
        p for p in (ROOT / "scripts").iterdir() if p.read_text().startswith("#!/usr/bin/env python")
    ]
    return (
        sorted(PACKAGE.rglob("*.py")) + sorted((ROOT / "benchmarks").glob("*.py")) + sorted(scripts)
    )


def test_only_builds_parses_a_tensorflow_version():
    found = [c for p in _python_files() for c in _version_calls(p)]
    allowed = {"leakbench/history/builds.py", *VERSION_KEPT}
    assert [c for c in found if c.split(":")[0] not in allowed] == [], (
        "parse a TensorFlow version with leakbench.history.builds.parse (or pep440)"
    )
    assert {c.split(":")[0] for c in found} >= set(VERSION_KEPT)  # none of them is stale


def test_the_default_release_is_written_once():
    make = re.search(r"^TF_VERSION \?= (\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert make and make.group(1) == builds.DEFAULT_RELEASE  # make cannot import Python
    # a string that is the release and nothing else: examples inside a docstring or help are words
    spelled = [
        p.relative_to(ROOT).as_posix()
        for p in _python_files()
        for node in ast.walk(ast.parse(p.read_text(), str(p)))
        if isinstance(node, ast.Constant) and node.value == builds.DEFAULT_RELEASE
    ]
    assert spelled == ["leakbench/history/builds.py"], "read builds.DEFAULT_RELEASE instead"


def test_every_bar_of_the_verdict_is_one_of_the_bars():
    for name in VERDICT_BARS:
        assert getattr(verdict, name) is getattr(bars, name), name
    # verdict.py writes no number of its own at module level: a bar there would be a second home
    tree = ast.parse(Path(verdict.__file__).read_text())
    numbers = [
        f"verdict.py:{node.lineno}"
        for top in tree.body
        if isinstance(top, (ast.Assign, ast.AnnAssign))
        for node in ast.walk(top)
        if isinstance(node, ast.Constant) and type(node.value) in (int, float)
    ]
    assert numbers == []
