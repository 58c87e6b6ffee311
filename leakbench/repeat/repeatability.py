"""Repeatability: every pair × variant measured RUNS times, each run a fresh child.

A run is one call of leakbench.measure.measure (a fresh, capped, timed child
per size) at the scenario's parameters and the caller's Settings (the
engine's defaults unless told otherwise). Runs go round-robin (run 1 of every
variant, then run 2, ...) so that a spell of load on the machine spreads over
all variants instead of one. `jobs` children run at once; they then share
the machine, so the default cap (memlimit.default_cap_bytes, read once per
call) is divided between them.

Kept per run (an observation, `observe`): pair, variant, run number, verdict,
signals, what the variant should read (leakbench.expectation, as a label)
and whether it did, the TensorFlow version the child imported, the
cap in bytes, wall seconds of its child runs, the slope, the rate and whether
it moved of every decisive metric (verdict.GROWTH_SIGNALS as the engine has it
when the run is measured, in the metric's unit per repetition; the rate,
verdict.rate, is what the verdict compares with the bar; rate and moved are
read from the record's decision, its per-signal rows), the peak's scaling
exponent for peak pairs, and the seconds of a confirmation re-run when the
record holds one.

Kept too: the record's decision (leakbench.analysis.judge.decision: the number
the verdict rests on), without its per-signal rows.

Per pair × variant (`summarize`): verdict counts; `agrees`, one verdict in
every run ("skipped" counts as agreeing); `as_expected`, every verdict as
expected; `decided`, the numbers the verdicts rest on (its median run's
decision and the range, per verdict and deciding metric); per decisive
metric the median, min, max and coefficient of variation (std / mean, ddof
1; None unless the mean is positive) of its rate over runs, and how many
runs it moved in.

The result JSON is replaced atomically after every run, so an interrupted
call keeps what it measured; a later call with the same settings resumes from
it and measures only the missing (pair, variant, run). A file made with other
settings (engine settings, jobs, machine, installed TensorFlow) or not a
repeatability file is never overwritten: RepeatError, one line.
Rendering is leakbench.reporters.repeatability's.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from leakbench import expectation
from leakbench.analysis.judge import decision, verdict
from leakbench.analysis.record_type import Record
from leakbench.catalog import VARIANT_DIRS, Target
from leakbench.history import pin, rounds
from leakbench.measure import measure
from leakbench.repeat import hog
from leakbench.settings import Settings

FORMAT = 2  # 2: each decisive metric keeps its rate (verdict.rate) beside its slope
FOLDER = "repeatability"  # under the results directory


class RepeatError(ValueError):
    """An output file that cannot be resumed (other settings, not ours, corrupt). One line."""


def default_out(results: Path, machine: str, jobs: int, cpu_hog: int = 0) -> Path:
    """results/repeatability/<machine>-tf-<installed version>[-jobs<N>][-hog<N>].json"""
    version = pin.installed_tf_version() or "none"
    return (
        Path(results)
        / FOLDER
        / (
            f"{machine}-tf-{version}{f'-jobs{jobs}' if jobs > 1 else ''}"
            f"{f'-hog{cpu_hog}' if cpu_hog else ''}.json"
        )
    )


def decisive(metrics: dict) -> dict[str, tuple[str, float]]:
    """metric key -> (signal name, slope threshold in the metric's unit): the growth signals that
    decide these metrics' verdict (verdict.deciding_signals: RSS in held memory's place where
    glibc's counters are n/a)."""
    return dict(verdict.deciding_signals(metrics))


def _signals(metrics: dict) -> list[tuple[str, str]]:
    """(metric key, signal name) of every decisive metric; none where nothing was measured."""
    return [(key, name) for key, (name, _) in decisive(metrics).items()] if metrics else []


def _seconds(confirmation: dict | None) -> float | None:
    """Seconds of a confirmation re-run (rec["confirmation"], leakbench.measure), or None."""
    return confirmation["seconds"] if confirmation else None


def observe(rec: Record, expected: expectation.Expectation, run: int) -> dict:
    """What repeat keeps of one record (leakbench.analysis.record): see the module docstring."""
    m = rec["metrics"] or {}
    decided = decision.of(rec)
    # the rate each deciding signal's bar was compared with, and whether it moved: the record's
    # decision holds them (a row per signal with a trend), so nothing is decided again here
    rows = {row["signal"]: row for row in decided["signals"]}
    slopes = {}
    for key, name in _signals(m):
        trend, row = m.get(key), rows.get(name)
        slopes[key] = {
            "signal": name,
            "slope": trend and trend["slope"],
            "rate": row and row["value"],
            "unit": trend and trend["unit"],
            "moved": bool(row and row["moved"]),
        }
    scaling = m.get("peak_scaling")
    reason = (rec["error"] or "").strip().splitlines()
    return {
        "pair": rec["pair"],
        "variant": rec["variant"],
        "run": run,
        "verdict": rec["verdict"],
        "signals": rec["signals"],
        "expected": expected.label,
        "expected_ok": expected.accepts(rec),
        "tensorflow": rec["environment"]["tensorflow"],
        "cap_bytes": rec["settings"]["cap_bytes"],
        "wall_seconds": rec["seconds"],
        "slopes": slopes,
        # the number the verdict rests on (record["decision"], its per-signal rows left out)
        "decision": {k: v for k, v in decided.items() if k != "signals"},
        "peak_exponent": scaling and scaling["exponent"],
        "confirmation_seconds": _seconds(rec.get("confirmation")),
        "load_average": os.getloadavg()[0],  # the machine's 1-minute load as the run ended
        "phase": rec["phase"],
        "error": reason[-1] if reason else None,
    }


def _spread(values: list) -> dict:
    """n, median, min, max and CV (std/mean, ddof 1) of the known values; None where none."""
    known = np.asarray([v for v in values if v is not None], dtype=float)
    if not known.size:
        return {"n": 0, "median": None, "min": None, "max": None, "cv": None}
    mean = float(known.mean())
    return {
        "n": int(known.size),
        "median": float(np.median(known)),
        "min": float(known.min()),
        "max": float(known.max()),
        "cv": float(known.std(ddof=1) / mean) if known.size > 1 and mean > 0 else None,
    }


def decided(observations: list[dict]) -> list[dict]:
    """The numbers the runs' verdicts rest on, one entry per verdict and metric that decided
    (first-seen order): its runs, the decision of its median run (the lower middle one, by
    value: a run's own decision, its why included), and the least and greatest value, in the
    decision's unit. Runs kept without a decision (repeat before it kept one) count nowhere."""
    groups: dict[tuple, list[dict]] = {}
    for o in observations:
        if o.get("decision"):
            groups.setdefault((o["verdict"], o["decision"].get("label")), []).append(o["decision"])
    found = []
    for runs in groups.values():
        known = sorted((d for d in runs if d.get("value") is not None), key=lambda d: d["value"])
        middle = known[(len(known) - 1) // 2] if known else runs[0]
        found.append(
            {
                "runs": len(runs),
                "median": middle,
                "min": known[0]["value"] if known else None,
                "max": known[-1]["value"] if known else None,
            }
        )
    return found


def _row_key(pair_variant: tuple) -> tuple:
    pair, variant = pair_variant
    return (
        pair,
        list(VARIANT_DIRS).index(variant) if variant in VARIANT_DIRS else len(VARIANT_DIRS),
        variant,
    )


def summarize(observations: list[dict]) -> dict:
    """Rows per pair × variant (sorted by pair, leaky before fixed) and the totals."""
    rows = []
    for pair, variant in sorted({(o["pair"], o["variant"]) for o in observations}, key=_row_key):
        done = [o for o in observations if (o["pair"], o["variant"]) == (pair, variant)]
        counts = Counter(o["verdict"] for o in done)
        slopes = {}
        for key in dict.fromkeys(k for o in done for k in o["slopes"]):  # first-seen order
            entries = [o["slopes"][key] for o in done if key in o["slopes"]]
            unit = next((e["unit"] for e in entries if e["unit"]), None)
            slopes[key] = {
                "signal": entries[-1]["signal"],
                "unit": unit,
                "moved": sum(e["moved"] for e in entries),
                **_spread([e["rate"] for e in entries]),
            }
        costs = [o["confirmation_seconds"] for o in done if o["confirmation_seconds"] is not None]
        rows.append(
            {
                "pair": pair,
                "variant": variant,
                "expected": done[-1]["expected"],
                "runs": len(done),
                "verdicts": dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
                "agrees": len(set(counts) - {"skipped"}) <= 1,
                "as_expected": all(o["expected_ok"] for o in done),
                "decided": decided(done),
                "slopes": slopes,
                "peak_exponent": _spread([o["peak_exponent"] for o in done]),
                "wall_seconds": sum(o["wall_seconds"] for o in done),
                "confirmation_seconds": sum(costs) if costs else None,
            }
        )
    return {
        "rows": rows,
        "variants": len(rows),
        "agree": sum(r["agrees"] for r in rows),
        "as_expected": sum(r["as_expected"] for r in rows),
        "runs": len(observations),
        "wall_seconds": sum(o["wall_seconds"] for o in observations),
        "confirmation_seconds": sum(o["confirmation_seconds"] or 0.0 for o in observations),
        "tensorflow": sorted({o["tensorflow"] for o in observations if o["tensorflow"]}),
        "load_average": _spread([o.get("load_average") for o in observations]),
        "cap_bytes": sorted({o["cap_bytes"] for o in observations}),
    }


def repeat(
    targets: list[Target],
    runs: int,
    settings: Settings,
    out: Path,
    jobs: int = 1,
    resume: bool = True,
    machine: str = "",
    on_run: Callable[[int, int, dict], None] | None = None,
    cpu_hog: int = 0,
) -> dict:
    """Measure every run (1 … runs) of every target not yet in `out`, round-robin
    (leakbench.history.rounds), `jobs` children at a time, writing `out` after each run; return
    the result (see the module docstring).

    settings: the engine's (cap_bytes 0: the default cap, divided by jobs). resume: keep the
    runs already in `out`; False starts anew and replaces it. on_run(i, total, observation)
    after each run. cpu_hog: busy processes kept running beside the runs (hog.cpu_hog; 0: none),
    a condition of the result like jobs. Raises RepeatError
    before measuring anything if `out` cannot be resumed.
    """
    made = {
        "machine": machine,
        "jobs": jobs,
        "cpu_hog": cpu_hog,
        "tensorflow": pin.installed_tf_version(),
        "settings": settings.stored(),
    }
    result = rounds.open_result(
        out,
        made,
        FORMAT,
        "repeat",
        "a repeatability result",
        RepeatError,
        resume,
        started=_now(),
        elapsed_seconds=0.0,
    )
    settings = rounds.shared_cap(settings, jobs)  # the default cap, shared by the children at once
    result["runs_requested"] = max(result.get("runs_requested", 0), runs)
    start, before = time.monotonic(), result["elapsed_seconds"]

    def keep(run: int, target: Target, rec: Record) -> dict:
        seen = observe(rec, target.expected, run)
        result["observations"].append(seen)
        return seen

    def told(i: int, total: int, run: int, target: Target, seen: dict) -> None:
        if on_run:
            on_run(i, total, seen)

    with hog.cpu_hog(cpu_hog):
        return rounds.measure_rounds(
            out,
            result,
            [(t, runs) for t in targets],
            key=lambda run, t: (t.scenario.name, t.variant, run),
            done=lambda result: {
                (o["pair"], o["variant"], o["run"]) for o in result["observations"]
            },
            run_one=lambda run, t: measure(t, dict(t.scenario.params), settings),
            keep=keep,
            finish=lambda result: _finish(result, before + time.monotonic() - start),
            jobs=jobs,
            on_run=told,
        )


def _finish(result: dict, elapsed: float) -> dict:
    order = {
        key: i
        for i, key in enumerate(
            sorted({(o["pair"], o["variant"]) for o in result["observations"]}, key=_row_key)
        )
    }
    result["observations"].sort(key=lambda o: (o["run"], order[(o["pair"], o["variant"])]))
    result.update(
        updated=_now(), elapsed_seconds=elapsed, summary=summarize(result["observations"])
    )
    return result


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
