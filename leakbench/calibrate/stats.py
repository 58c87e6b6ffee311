"""Calibration's statistics: from the observations leakbench.calibrate.calibration keeps
to the summary, per case and per peer. Pure functions: nothing is measured or
read here (the cost is leakbench.calibrate.cost's, the targets
leakbench.calibrate.targets', what committed records add
leakbench.calibrate.committed's).

An observation (calibration.observe) is one engine run of one case: holder (the
design's name), shape (one of SHAPES), leaks (a designed leak, or a control
shape: a control at every size), bytes_per_rep (true bytes kept per
repetition; 0 is the control), run, verdict,
signals, phase, wall_seconds, the child's per-phase seconds, peak_rss_bytes
(VmHWM), and per signal of SIGNALS `<signal>_slope` (bytes/repetition),
`_moved`, `_reach`, `_trend_only`. Rates come with a 95 % Wilson interval
(scipy.stats.binomtest), spreads from numpy. How to read the figures:
docs/calibration.md, "How to read its tables"; what they were on this machine:
docs/measurements.md, "Held memory".
"""

from __future__ import annotations

import re

import numpy as np

from leakbench import expectation
from leakbench import metrics as registry
from leakbench.analysis.judge import verdict
from leakbench.units import format_bytes

# The signals calibration reads (the registry's CALIBRATION view), by their record["signals"] name,
# each with its threshold: held memory and memray's heap
# decide, RSS is read beside them at its fallback threshold.
SIGNALS = {m.signal: m for m in registry.metrics_in(registry.CALIBRATION) if m.signal is not None}
# what a control (bytes_per_rep 0) should read: any other verdict is a false alarm
CONTROL = expectation.NO_LEAK
ASV_FACTOR = 1.1  # asv continuous / compare: a change past 10 % is reported
# The shape library's shapes (leakbench.calibrate.shape_library.DESIGNS), in the order the tables
# group them: steady, in lumps, a block that moves, rare steps (designed leaks); bounded cache,
# sawtooth, one-off jump (controls: they stop growing or fall back).
SHAPES = ("steady", "lumpy", "moves", "rare steps", "bounded cache", "sawtooth", "one-off jump")
STEADY = SHAPES[0]


def shape_of(o: dict) -> tuple[str, bool]:
    """An observation's or a summary row's (shape, leaks). Results made before the shape library
    have neither key: their designs (python, tensorflow, tensorflow-system-allocator) were steady
    leaks."""
    return o.get("shape", STEADY), o.get("leaks", True)


def is_control(o: dict) -> bool:
    """True for a control case (an observation's or a summary row's): size 0, or a control
    shape's design at any size; its verdicts other than CONTROL's are false alarms."""
    return not (shape_of(o)[1] and o["bytes_per_rep"])


def _order(row: tuple) -> tuple:
    """Rows grouped by shape (SHAPES' order), then by design name with its numbers read as numbers
    (python-cache3 before python-cache12), then by size."""
    shape, holder, size = row
    rank = SHAPES.index(shape) if shape in SHAPES else len(SHAPES)
    name = [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", holder)]
    return (rank, shape, name, size)


def reach(trend: dict | None) -> float | None:
    """The largest threshold (the trend's unit per repetition) at which this trend still moves
    (verdict.moved): its rate (verdict.rate) if the
    trend test passes, else None (it never moves)."""
    if not trend or trend["p_increasing"] >= verdict.TREND_P_MAX:
        return None
    return verdict.rate(trend)


def trend_only(trend: dict | None) -> bool:
    """The trend test passes and both halves rise, with no size threshold: what a signal could
    catch at best with a lower bar."""
    return bool(
        trend
        and trend["p_increasing"] < verdict.TREND_P_MAX
        and min(trend["first_half"], trend["second_half"]) > 0
    )


def _rate(k: int, n: int) -> dict:
    """{k, n, rate = k/n, low, high}: the 95 % Wilson interval; rate and bounds None for n = 0."""
    from scipy import stats  # on first use: the CLI's import of every command does not wait for it

    if n == 0:
        return {"k": 0, "n": 0, "rate": None, "low": None, "high": None}
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return {"k": k, "n": n, "rate": k / n, "low": float(ci.low), "high": float(ci.high)}


def _spread(slopes: list[float], true: int) -> dict:
    """Mean slope, bias (bytes/repetition) and relative bias (share of `true`; None on the control),
    CV (std/mean, ddof 1; None for one slope or a mean
    <= 0), min and max. All None without slopes."""
    if not slopes:
        return {
            "mean": None,
            "bias": None,
            "relative_bias": None,
            "cv": None,
            "min": None,
            "max": None,
        }
    y = np.asarray(slopes, dtype=float)
    mean = float(y.mean())
    cv = float(y.std(ddof=1) / mean) if len(y) > 1 and mean > 0 else None
    return {
        "mean": mean,
        "bias": mean - true,
        "relative_bias": (mean - true) / true if true else None,
        "cv": cv,
        "min": float(y.min()),
        "max": float(y.max()),
    }


def summarize(observations: list[dict]) -> list[dict]:
    """One row per (holder, bytes_per_rep), grouped by shape (_order): shape and leaks (shape_of),
    control (the size is 0 or the design a control shape), runs, measured (runs with an RSS slope),
    verdict counts, leak (the verdict's rate over measured runs), caught (the same, on a designed
    leak's sizes; None on a control), false_alarms (runs CONTROL does not accept, a rate over all
    runs; None but on a control), per signal detected / trend_only (rates), reach (per run) and
    slope (_spread), and asv_peakmem (_asv)."""
    rows = []
    cases = {(*shape_of(o), o["holder"], o["bytes_per_rep"]) for o in observations}
    for shape, leaks, holder, size in sorted(cases, key=lambda c: _order((c[0], *c[2:]))):
        done = [
            o
            for o in observations
            if (o["holder"], o["bytes_per_rep"]) == (holder, size) and shape_of(o) == (shape, leaks)
        ]
        measured = [o for o in done if o["rss_slope"] is not None]
        control = is_control({"leaks": leaks, "bytes_per_rep": size})
        leak = _rate(sum(o["verdict"] == "leak" for o in measured), len(measured))
        row = {
            "holder": holder,
            "shape": shape,
            "leaks": leaks,
            "control": control,
            "bytes_per_rep": size,
            "runs": len(done),
            "measured": len(measured),
            "verdicts": {
                v: sum(o["verdict"] == v for o in done)
                for v in sorted({o["verdict"] for o in done})
            },
            "leak": leak,
            "caught": None if control else leak,
            "false_alarms": _rate(sum(not CONTROL.accepts(o) for o in done), len(done))
            if control
            else None,
        }
        for name in SIGNALS:
            with_signal = [o for o in measured if o[f"{name}_slope"] is not None]
            row[name] = {
                "detected": _rate(sum(o[f"{name}_moved"] for o in with_signal), len(with_signal)),
                "reach": [o.get(f"{name}_reach") for o in with_signal],
                "trend_only": _rate(
                    sum(o[f"{name}_trend_only"] for o in with_signal), len(with_signal)
                ),
                "slope": _spread([o[f"{name}_slope"] for o in with_signal], size),
            }
        row["asv_peakmem"] = _asv(observations, holder, size)
        rows.append(row)
    return rows


def _asv(observations: list[dict], holder: str, size: int) -> dict:
    """asv's peakmem_ judgement: runs whose peak RSS passed ASV_FACTOR × the median peak of the
    holder's control (a control run against the other control runs), and the median peak (bytes)."""
    control = [
        o
        for o in observations
        if o["holder"] == holder and o["bytes_per_rep"] == 0 and o["peak_rss_bytes"]
    ]
    runs = [
        o
        for o in observations
        if o["holder"] == holder and o["bytes_per_rep"] == size and o["peak_rss_bytes"]
    ]
    flagged = 0
    for o in runs:
        others = [c["peak_rss_bytes"] for c in control if c is not o]
        if others and o["peak_rss_bytes"] > ASV_FACTOR * float(np.median(others)):
            flagged += 1
    peaks = [o["peak_rss_bytes"] for o in runs]
    return {
        "detected": _rate(flagged, len(runs) if len(control) > (size == 0) else 0),
        "median_peak_bytes": float(np.median(peaks)) if peaks else None,
    }


def summarize_peers(found: list[dict]) -> list[dict]:
    """Per (peer, holder, bytes_per_rep), from peers.run_peer's results: runs, detected (leak rate
    over the runs with status ok), failed (count per other status), median wall_seconds."""
    rows = []
    for peer, holder, size in sorted({(p["peer"], p["holder"], p["bytes_per_rep"]) for p in found}):
        runs = [
            p for p in found if (p["peer"], p["holder"], p["bytes_per_rep"]) == (peer, holder, size)
        ]
        ok = [p for p in runs if p["status"] == "ok" and p["leak"] is not None]
        rows.append(
            {
                "peer": peer,
                "holder": holder,
                "bytes_per_rep": size,
                "runs": len(runs),
                "detected": _rate(sum(p["leak"] for p in ok), len(ok)),
                "failed": {
                    p["status"]: sum(q["status"] == p["status"] for q in runs)
                    for p in runs
                    if p["status"] != "ok"
                },
                "wall_seconds": float(np.median([p["wall_seconds"] for p in runs])),
            }
        )
    return rows


def under_the_bars(result: dict) -> list[dict]:
    """Why a designed leak under every deciding bar is missed: one entry per such size (bytes per
    repetition) at which some leak design is caught in fewer than all its runs.

    Each entry: size, missed (the designs' names), and per deciding signal of SIGNALS (held
    memory, memray heap) its bar (the registry's threshold, bytes/repetition) and what a bar at
    `size` would call a leak: `controls`, the largest reach (stats.reach, bytes/repetition) among
    the control runs at 0 and at `size` with the run that sets it, and `fixes`, the committed
    records' noise floor (calibration.add_context's noise_floor: the controls at 0 and the
    committed fixes that read as expected). Either is None where not measured. A reach at or above
    `size` is a false alarm a bar at `size` would give: the measured floor that forbids it.
    """
    deciding = {name: m for name, m in SIGNALS.items() if not m.fallback and m.threshold}
    lowest = min(float(m.threshold or 0) for m in deciding.values())
    missed: dict[int, list[str]] = {}
    for r in result["summary"]:
        caught = r.get("caught") or r["leak"]
        size = r["bytes_per_rep"]
        if not is_control(r) and size < lowest and caught["n"] and caught["k"] < caught["n"]:
            missed.setdefault(size, []).append(r["holder"])
    floors = result.get("noise_floor") or {}
    out = []
    for size, designs in sorted(missed.items()):
        signals = {}
        for name, m in deciding.items():
            runs = [
                (
                    f"{o['holder']} at {format_bytes(o['bytes_per_rep'], whole=True)}, "
                    f"run {o['run']}",
                    o.get(f"{name}_reach"),
                )
                for o in result["observations"]
                if is_control(o) and o["bytes_per_rep"] in (0, size)
            ]
            seen = [(w, r) for w, r in runs if r is not None]
            worst = max(seen, key=lambda x: x[1], default=None)
            floor = floors.get(name)
            signals[name] = {
                "bar": m.threshold,
                "controls": None if worst is None else {"reach": worst[1], "set_by": worst[0]},
                "fixes": None
                if not floor or floor["set_by"] is None
                else {"reach": floor["floor"], "set_by": floor["set_by"]},
            }
        out.append({"size": size, "missed": designs, "signals": signals})
    return out
