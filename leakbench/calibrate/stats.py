"""Calibration's statistics: from the observations leakbench.calibrate.run keeps
to the summary, the cost and the targets. Pure functions: nothing is measured
or read here (what committed records add is leakbench.calibrate.committed's).

An observation (run.observe) is one engine run of one case: holder,
bytes_per_rep (true bytes kept per repetition; 0 is the control), run, verdict,
signals, phase, wall_seconds, the child's per-phase seconds, peak_rss_bytes
(VmHWM), and per signal of SIGNALS `<signal>_slope` (bytes/repetition),
`_moved`, `_reach`, `_trend_only`. Rates come with a 95 % Wilson interval
(scipy.stats.binomtest), spreads from numpy. How to read the figures:
docs/calibration.md, "How to read its tables"; what they were on this machine:
docs/measurements.md, "Held memory".
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from leakbench import expectation
from leakbench import metrics as registry
from leakbench.analysis import verdict
from leakbench.measure import Settings
from leakbench.units import KIB, format_bytes

# The signals calibration reads (the registry's CALIBRATION view), by their record["signals"] name,
# each with its threshold: held memory and memray's heap
# decide, RSS is read beside them at its fallback threshold.
SIGNALS = {m.signal: m for m in registry.metrics_in(registry.CALIBRATION) if m.signal is not None}
HELD, HEAP = registry.HELD.signal, registry.HEAP.signal  # the signals the targets name
# what a control (bytes_per_rep 0) should read: any other verdict is a false alarm
CONTROL = expectation.NO_LEAK
ASV_FACTOR = 1.1  # asv continuous / compare: a change past 10 % is reported
# the child's phases (seconds) a cost's floor is made of
TIMED = ("import", "setup", "warm-up", "repetitions")


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
    """One row per (holder, bytes_per_rep), sorted: runs, measured (runs with an RSS slope), verdict
    counts, leak (the verdict's rate over measured runs), false_alarms (runs CONTROL does not
    accept, a rate over all runs; None but on the control), per signal detected / trend_only
    (rates), reach (per run) and slope (_spread), and asv_peakmem (_asv)."""
    rows = []
    for holder, size in sorted({(o["holder"], o["bytes_per_rep"]) for o in observations}):
        done = [o for o in observations if (o["holder"], o["bytes_per_rep"]) == (holder, size)]
        measured = [o for o in done if o["rss_slope"] is not None]
        row = {
            "holder": holder,
            "bytes_per_rep": size,
            "runs": len(done),
            "measured": len(measured),
            "verdicts": {
                v: sum(o["verdict"] == v for o in done)
                for v in sorted({o["verdict"] for o in done})
            },
            "leak": _rate(sum(o["verdict"] == "leak" for o in measured), len(measured)),
            "false_alarms": None
            if size
            else _rate(sum(not CONTROL.accepts(o) for o in done), len(done)),
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


def cost(observations: list[dict], settings: Settings) -> dict:
    """holder -> its cost ({} if no run has every phase's seconds): runs, wall_seconds and
    floor_seconds (sums; the floor is import + setup + the work of warm-up and measured repetitions
    at the warm-up's seconds per repetition, which samples nothing), wall_over_floor, and medians
    per repetition: work, plain pass, memray pass (the tracked repetitions: heap_seconds_per_rep,
    heap_over_plain), and the memray pass's fixed cost per run beside it (heap_tracker_seconds:
    memray's start and stop; heap_analysis_seconds: reading the capture back) with the whole pass
    per repetition (heap_total_seconds_per_rep, heap_total_over_plain). Memray figures are None
    without a memray pass; from a child older than the split (seconds["heap"] the whole pass), only
    the totals are given."""
    return {
        holder: _cost([o for o in observations if o["holder"] == holder], settings)
        for holder in sorted({o["holder"] for o in observations})
    }


# the child's per-pass seconds beside seconds["heap"] (engine.heap)
HEAP_FIXED = ("heap_tracker", "heap_analysis")


def _cost(observations: list[dict], settings: Settings) -> dict:
    walls, floors, plain, heap, work, total = [], [], [], [], [], []
    fixed: dict[str, list[float]] = {k: [] for k in HEAP_FIXED}
    for o in observations:
        s = o["seconds"]
        if not all(k in s for k in TIMED) or not settings.warmup:
            continue
        per_rep = s["warm-up"] / settings.warmup
        walls.append(o["wall_seconds"])
        floors.append(s["import"] + s["setup"] + per_rep * (settings.warmup + settings.reps))
        work.append(per_rep)
        plain.append(s["repetitions"] / settings.reps)
        if "heap" in s and settings.heap_reps:
            total.append(sum(s.get(k, 0.0) for k in ("heap", *HEAP_FIXED)) / settings.heap_reps)
            if all(k in s for k in HEAP_FIXED):
                heap.append(s["heap"] / settings.heap_reps)
                for k in HEAP_FIXED:
                    fixed[k].append(s[k])
    if not walls:
        return {}
    base = float(np.median(plain))  # walls: so plain has a value per run too

    def median(xs: list[float]) -> float | None:
        return float(np.median(xs)) if xs else None

    def over(xs: list[float]) -> float | None:
        return float(np.median(xs)) / base if xs else None

    return {
        "runs": len(walls),
        "wall_seconds": sum(walls),
        "floor_seconds": sum(floors),
        "wall_over_floor": sum(walls) / sum(floors),
        "work_seconds_per_rep": median(work),
        "plain_seconds_per_rep": median(plain),
        "heap_seconds_per_rep": median(heap),
        "heap_over_plain": over(heap),
        **{f"{k}_seconds": median(v) for k, v in fixed.items()},
        "heap_total_seconds_per_rep": median(total),
        "heap_total_over_plain": over(total),
    }


def smallest_caught(rows: list[dict]) -> int | None:
    """The smallest designed leak (bytes/repetition) whose verdict read leak in every run (10 runs
    or more) for every holder in `rows` (summarize's), every larger size caught as well; None if
    none is. What "no-leak" means: growth below it may go unseen."""
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
    None if not measured)}, from summarize's rows, cost's figures and committed.suite_cost's."""

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
        cvs = [
            (r["bytes_per_rep"], r[HELD]["slope"]["cv"])
            for r in rows
            if r["holder"] == holder and r["bytes_per_rep"] and r[HELD]["detected"]["k"]
        ]
        worst = max((cv for _, cv in cvs if cv is not None), default=None)
        out.append(
            {
                "target": f"{holder}: {HELD} slope CV <= 10 % where it detects",
                "measured": worst is not None
                and ", ".join(
                    f"{format_bytes(s, whole=True)} {cv:.0%}" for s, cv in cvs if cv is not None
                ),
                "met": None if worst is None else worst <= 0.10,
            }
        )
        c = costs.get(holder) or {}
        ratio, whole = c.get("heap_over_plain"), c.get("heap_total_over_plain")
        # Judged on the whole pass (memray's start, stop and read-back included): the plain pass
        # samples after every repetition and the tracked
        # repetitions do not, so theirs alone flatters.
        out.append(
            {
                "target": (
                    f"{holder}: memray pass <= 1.5x the plain pass (per repetition, whole pass)"
                ),
                "measured": None
                if whole is None
                else f"{whole:.2f}x"
                if ratio is None
                else f"{whole:.2f}x (its tracked repetitions alone {ratio:.2f}x)",
                "met": None if whole is None else whole <= 1.5,
            }
        )
    ratio = (suite or {}).get("wall_over_floor")
    out.append(
        {
            "target": "suite <= 1.5x its floor",
            "measured": ratio and f"{ratio:.2f}x",
            "met": None if not ratio else ratio <= 1.5,
        }
    )
    return out


def _target(name: str, detected: dict | None, ok) -> dict:
    if not detected or not detected["n"]:
        return {"target": name, "measured": None, "met": None}
    return {"target": name, "measured": f"{detected['k']}/{detected['n']}", "met": ok(detected)}
