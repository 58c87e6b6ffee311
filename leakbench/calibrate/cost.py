"""Calibration's cost: per holder, what the engine's runs took against their floor,
and the memray pass against the plain one. Pure functions: nothing is measured
or read here (the suite's cost, from committed records, is
leakbench.calibrate.committed's).

Read from each observation's wall_seconds and the child's per-phase seconds
(an observation: leakbench.calibrate.stats) at the engine's settings
(leakbench.settings.Settings: warm-up, measured and tracked repetitions);
medians from numpy. What they were on this machine: docs/limits.md, "memray's
cost"; docs/measurements.md, "memray".
"""

from __future__ import annotations

import numpy as np

from leakbench.settings import Settings

# the child's phases (seconds) a cost's floor is made of
TIMED = ("import", "setup", "warm-up", "repetitions")


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
