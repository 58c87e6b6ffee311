"""Measure one scenario variant: one child run per size, then the record.

A "growth" scenario is run once at its parameters. A "peak" scenario is run
at SIZE_PARAM × each of `scales` (default 1 and 4), every size in a fresh
process, so the record can say how the peak above baseline scales with size.
Two sizes, not three: with sizes equally spaced on a log scale (1, 2, 4) the
least-squares exponent (estimate.scaling_exponent) is the slope between the
end points, and the rise verdict.peak_scales asks for is too, so a middle
size changes no verdict and only costs time (docs/measurements.md, "Run time").
Every size runs the whole protocol: its peak is VmHWM through the measured
repetitions, not after warm-up alone, because glibc's slack in VmHWM settles
over more epochs and a peak read early put a real leak's k under the bar
(docs/flaky.md).
The heap pass (memray) runs only at the first size: it is the costly pass.
With Settings.flamegraph_dir, its capture is kept until memray has drawn the
flame graph of the allocations still live at its end (heap.render_flamegraph):
DIR/<pair>-<variant>.html.
Then the judge (leakbench.analysis.judge.protocol) reads the first runs and names the longer
looks, if any, to measure before its verdict stands: each runs here, in a fresh process.

This module joins the two halves below it (docs/layout.md): the engine, whose
child runs come back as Outcomes, and the analysis, which turns them into a
record and its verdict. Neither of them imports it.
"""

from __future__ import annotations

import math
import tempfile
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from leakbench.analysis import estimate, record
from leakbench.analysis.judge import protocol
from leakbench.analysis.record_type import Record
from leakbench.catalog import Target
from leakbench.engine import heap, preload, runner, supervise
from leakbench.settings import Settings


def sizes(target: Target, params: dict, scales) -> list[dict]:
    """Parameter sets to run: one for growth scenarios, one per scale for peak scenarios.
    Raises ValueError for a size times a scale past what a float holds."""
    if target.scenario.kind != "peak":
        return [params]
    key = target.scenario.size_param
    kind = type(params[key])
    found = []
    for s in scales:
        try:
            size = params[key] * s
            if not math.isfinite(size):
                raise OverflowError
        except OverflowError:
            shown = (
                str(params[key])
                if len(str(params[key])) <= 20
                else f"of {len(str(params[key]))} digits"
            )
            raise ValueError(
                f"{key} {shown} times scale {s:g} is past what a float holds"
            ) from None
        found.append({**params, key: kind(size)})
    return found


def measure(
    target: Target,
    params: dict,
    settings: Settings,
    env: dict | None = None,
    on_message: Callable[[dict], None] | None = None,
    child_options: dict | None = None,
) -> Record:
    """Run `target` under `settings` and return its record (see leakbench.analysis.record).

    child_options: passed to every child run (runner.ChildRun); `leakbench check` uses it.

    Stops at the first size whose run is not ok (over-cap, hang, error): a
    larger size would only fail the same way, slower. Runs nothing where the
    dynamic loader would not find a library LD_PRELOAD names: the record reads
    `skipped`, naming it (leakbench.engine.preload). The record's `requires` is the
    scenario's own (REQUIRES, or its ENV's LD_PRELOAD), not `env`'s: a library only `env`
    preloads reads `skipped` where it is missing, but a leaky or fixed variant's expectation
    does not allow for that.
    """
    settings = settings.resolved()
    # the verdict's statistics are imported while the first child imports TensorFlow
    threading.Thread(target=estimate.warm_up, daemon=True).start()
    # the allocator the verdict's signals need (supervise.allocator), under the scenario's own
    env = {**supervise.allocator(target.scenario.kind), **target.scenario.env, **(env or {})}
    lacking = preload.missing(env)
    if lacking:  # the loader would only warn, and the run would measure glibc's malloc instead
        skip = runner.Outcome("skipped", "import", params, 0.0, skipped=lacking)
        return protocol.first(
            target.scenario, target.variant, params, settings.stored(), [skip], pair=target.pair
        )
    outcomes = []
    flamegraph = None
    drawn = Path(settings.flamegraph_dir) if settings.flamegraph_dir else None
    child = settings.child_run(env, child_options)
    with tempfile.TemporaryDirectory(prefix="leakbench-capture-") as keep:
        for i, run_params in enumerate(sizes(target, params, settings.scales)):
            capture = Path(keep) / "heap.bin" if drawn and i == 0 and settings.heap_reps else None
            outcome = runner.run_child(
                target.scenario.path,
                run_params,
                # the heap pass at the first size only
                replace(child, heap_reps=child.heap_reps if i == 0 else 0, heap_file=capture),
                on_message,
            )
            outcomes.append(outcome)
            if capture and drawn:
                flamegraph = _flamegraph(capture, outcome, drawn, target)
            if outcome.status != "ok" and not record.stalled_in_teardown(outcome):
                break
    rec = protocol.first(
        target.scenario,
        target.variant,
        params,
        settings.stored(),
        outcomes,
        pair=target.pair,
        flamegraph=flamegraph,
    )
    # the longer looks the judge asks for: in a fresh process each, without memray's heap pass
    # (the heap never decides alone: verdict.moved_signals) or evidence readings (the first
    # run's stand)
    options = {**(child.child_options or {}), "evidence": False}
    while (look := protocol.next_look(rec, child.reps)) is not None:
        run = replace(child, reps=look.reps, heap_reps=0, child_options=options)
        outcome = runner.run_child(target.scenario.path, params, run, on_message)
        rec = protocol.take(rec, look, outcome)
    return rec


def _flamegraph(capture: Path, outcome, folder: Path, target: Target) -> dict:
    """{"file": name in folder} once memray drew it, else
    {"error": why}: the heap pass must have finished."""
    if not (outcome.result or {}).get("heap"):
        return {"error": f"no finished heap pass to draw ({outcome.status})"}
    name = f"{target.scenario.name}-{target.variant}.html"
    problem = heap.render_flamegraph(capture, folder / name)
    return {"error": problem} if problem else {"file": name}
