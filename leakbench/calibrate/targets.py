"""Calibration's targets: what the engine should catch, and at what cost, with
what it measured against each (leakbench.calibrate.stats' summary,
leakbench.calibrate.cost's figures, leakbench.calibrate.committed's suite
cost), and the smallest designed leak caught in every run. Pure functions:
nothing is measured or read here. The bounds are set here; what was measured
against them on this machine: docs/calibration.md, its committed runs; the
smallest leak caught: docs/verdicts.md, "Growth signals and their thresholds". The targets read
the steady designs' rows only (python, tensorflow, tensorflow-system-allocator); the smallest leak
caught reads every designed leak's, whatever its shape (lumps, rare steps, a block that moves):
"no-leak" should mean the same for the shapes real growth takes (issue 30).
"""

from __future__ import annotations

from leakbench import metrics as registry
from leakbench.calibrate.stats import CONTROL, STEADY, is_control, shape_of
from leakbench.units import KIB, format_bytes

HELD, HEAP = registry.HELD.signal, registry.HEAP.signal  # the signals the targets name


def steady(rows: list[dict]) -> list[dict]:
    """The rows of steady designs (a summary row without a shape is one: stats.shape_of)."""
    return [r for r in rows if shape_of(r)[0] == STEADY]


def smallest_caught(rows: list[dict]) -> int | None:
    """The smallest designed leak (bytes/repetition) whose verdict read leak in every run (10 runs
    or more) for every leak design in `rows` (summarize's, of one table or several), every larger
    size caught as well; None if none is. Controls (stats.is_control) do not count. What "no-leak"
    means: growth below it may go unseen."""
    rows = [r for r in rows if not is_control(r)]
    sizes = sorted({r["bytes_per_rep"] for r in rows if r["bytes_per_rep"]}, reverse=True)
    caught = None
    for size in sizes:
        if not all(_every_run(r["leak"]) for r in rows if r["bytes_per_rep"] == size):
            break
        caught = size
    return caught


def _every_run(detected: dict) -> bool:
    """Caught in every run, over 10 runs or more."""
    return detected["n"] >= 10 and detected["k"] == detected["n"]


def targets(rows: list[dict], costs: dict, suite: dict | None) -> list[dict]:
    """The calibration's targets, each {target, measured (text, None if not measured), met (bool,
    None if not measured)}, from summarize's rows (the steady designs'), cost's figures and
    committed.suite_cost's."""
    rows = steady(rows)

    def row(holder, size):
        return next((r for r in rows if (r["holder"], r["bytes_per_rep"]) == (holder, size)), None)

    out = []
    for holder in sorted({r["holder"] for r in rows}):
        r = row(holder, 64 * KIB)
        out.append(
            _target(
                f"{holder}: 64 KiB/rep caught 10/10 by {registry.HELD.label}",
                r and r[HELD]["detected"],
                _every_run,
            )
        )
        r = row(holder, 16 * KIB)
        out.append(
            _target(
                f"{holder}: 16 KiB/rep caught 10/10 by {registry.HELD.label} (aim)",
                r and r[HELD]["detected"],
                _every_run,
            )
        )
        r = row(holder, KIB)
        out.append(
            _target(
                f"{holder}: 1 KiB/rep caught 10/10 by {HEAP}", r and r[HEAP]["detected"], _every_run
            )
        )
        r = row(holder, 0)
        alarms = r and r["false_alarms"]
        found = _target(f"{holder}: no false alarm on the control", alarms, lambda d: d["k"] == 0)
        if found["measured"]:
            found["measured"] += f" runs read other than {CONTROL.label}"
        out.append(found)
        out.append(_slope_cv(holder, rows))
        out.append(_memray_cost(holder, costs))
    ratio = (suite or {}).get("wall_over_floor")
    out.append(
        {
            "target": "suite <= 1.5x its floor",
            "measured": ratio and f"{ratio:.2f}x",
            "met": None if not ratio else ratio <= 1.5,
        }
    )
    return out


def _slope_cv(holder: str, rows: list[dict]) -> dict:
    """The target on held memory's slope CV (a share: 0.10 is 10 %), worst over the holder's
    sizes where it detects (steady rows, with a leak)."""
    cvs = [
        (r["bytes_per_rep"], r[HELD]["slope"]["cv"])
        for r in rows
        if r["holder"] == holder and r["bytes_per_rep"] and r[HELD]["detected"]["k"]
    ]
    worst = max((cv for _, cv in cvs if cv is not None), default=None)
    return {
        "target": f"{holder}: {HELD} slope CV <= 10 % where it detects",
        "measured": worst is not None
        and ", ".join(f"{format_bytes(s, whole=True)} {cv:.0%}" for s, cv in cvs if cv is not None),
        "met": None if worst is None else worst <= 0.10,
    }


def _memray_cost(holder: str, costs: dict) -> dict:
    """The target on the memray pass's cost: its seconds per repetition over the plain pass's
    (a ratio), from cost's figures for the holder."""
    c = costs.get(holder) or {}
    ratio, whole = c.get("heap_over_plain"), c.get("heap_total_over_plain")
    # Judged on the whole pass (memray's start, stop and read-back included): the plain pass
    # samples after every repetition and the tracked repetitions do not, so theirs alone flatters.
    return {
        "target": f"{holder}: memray pass <= 1.5x the plain pass (per repetition, whole pass)",
        "measured": None
        if whole is None
        else f"{whole:.2f}x"
        if ratio is None
        else f"{whole:.2f}x (its tracked repetitions alone {ratio:.2f}x)",
        "met": None if whole is None else whole <= 1.5,
    }


def _target(name: str, detected: dict | None, ok) -> dict:
    if not detected or not detected["n"]:
        return {"target": name, "measured": None, "met": None}
    return {"target": name, "measured": f"{detected['k']}/{detected['n']}", "met": ok(detected)}
