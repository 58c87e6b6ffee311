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
A leak that rests on one byte signal alone, or on marginal ones, is measured
once more, longer, in a fresh process before it is called
(looks.needs_confirmation, looks.confirm).

This module joins the two halves below it (docs/layout.md): the engine, whose
child runs come back as Outcomes, and the analysis, which turns them into a
record and its verdict. Neither of them imports it.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from leakbench.analysis import looks, record
from leakbench.analysis.schema import Record
from leakbench.catalog import Target
from leakbench.contract_rules import MIN_SERIES
from leakbench.engine import heap, memlimit, preload, runner, supervise
from leakbench.units import GIB, MAX_BYTES, MAX_BYTES_TEXT

# The cap where a measurement must not depend on the machine's RAM (Settings.cap_bytes 0: half
# of it): committed records (scripts/record-version), asv, `leakbench calibrate` and the pytest
# plugin. Several times the largest peak of a pair (docs/measurements.md, "Committed results");
# the timeout is Settings.timeout_seconds.
FIXED_CAP_BYTES = 4 * GIB


# The bounds of a measurement's repetitions. A trend needs MIN_SERIES points at least
# (Mann–Kendall's smallest p for n points is 1/n!: leakbench.contract_rules); past MAX_REPS,
# a typo.
MIN_REPS = MIN_SERIES
MAX_REPS = 10_000
MIN_SECONDS = 1.0  # the least timeout: a child takes longer than that to start


class SettingsError(ValueError):
    """Settings that cannot measure: `setting` (a Settings field) and its `problem`, one line.

    Every face refuses with it, and names a setting its own way (the CLI `--heap-reps`, the
    pytest plugin `heap_reps`, its ini file `leakbench_heap_reps`): line(names) is the one message
    in a face's names (a field's own name where `names` has none), and str() is line(names).
    A problem that names another setting writes it {field}; line() names it too.
    """

    def __init__(self, setting: str, problem: str, names: Mapping[str, str] | None = None):
        self.setting = setting
        self.problem = problem
        super().__init__(self.line(names or {}))

    def line(self, names: Mapping[str, str]) -> str:
        problem = self.problem
        for field in fields(Settings):
            problem = problem.replace(f"{{{field.name}}}", names.get(field.name, field.name))
        return f"{names.get(self.setting, self.setting)}: {problem}"


@dataclass(frozen=True)
class Settings:
    """How to measure. Repetition counts are per child run; bytes and seconds as named.

    Every rule of a measurement's settings is here (check, run as one is made): the CLI, the
    pytest plugin, calibrate and bisect build a Settings and show its SettingsError, so each
    refuses a setting alike.
    """

    warmup: int = 3
    reps: int = 12
    heap_reps: int = 6
    cap_bytes: int = 0  # 0: memlimit.default_cap_bytes()
    # per step: the most a child may go without progress (runner.ChildRun)
    timeout_seconds: float = 300.0
    scales: tuple = (1, 4)  # see the module docstring
    # after the result is in: see runner.ChildRun
    teardown_timeout_seconds: float = runner.TEARDOWN_TIMEOUT_SECONDS
    flamegraph_dir: str | None = None  # write memray's flame graph of retained allocations here

    def __post_init__(self):
        self.check()

    def check(self) -> None:
        """Raise SettingsError (one line) for the first setting that cannot measure."""
        for name, rule in _RULES:
            problem = rule(self)
            if problem:
                raise SettingsError(name, problem)

    def stored(self) -> dict:
        """These settings as records and result files keep them: JSON types (a tuple reads back
        as a list), without flamegraph_dir (where a graph
        goes is not how the pipeline was measured)."""
        return json.loads(
            json.dumps({k: v for k, v in asdict(self).items() if k != "flamegraph_dir"})
        )

    def resolved(self) -> Settings:
        cap = self.cap_bytes or memlimit.default_cap_bytes()
        return replace(self, cap_bytes=cap, scales=tuple(self.scales))

    def child_run(
        self, env: dict | None = None, child_options: dict | None = None
    ) -> runner.ChildRun:
        """One child run at these settings (runner.ChildRun; cap_bytes as they are: resolve first),
        with the heap pass; env and child_options as runner.ChildRun takes them."""
        return runner.ChildRun(
            warmup=self.warmup,
            reps=self.reps,
            heap_reps=self.heap_reps,
            cap_bytes=self.cap_bytes,
            timeout_seconds=self.timeout_seconds,
            teardown_timeout_seconds=self.teardown_timeout_seconds,
            env=env,
            child_options=child_options,
        )


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _whole(value, least: int, most: int) -> str | None:
    """What is wrong with a repetition count, or None."""
    if not _is_int(value):
        return f"{_shown(value)} is not a whole number"
    if not least <= value <= most:
        return f"{value} is not from {least} to {most}"
    return None


def _reps(s: Settings) -> str | None:
    if _is_int(s.reps) and 0 <= s.reps < MIN_REPS:
        return f"{s.reps} is too few for a trend; use at least {MIN_REPS}"
    return _whole(s.reps, MIN_REPS, MAX_REPS)


def _heap_reps(s: Settings) -> str | None:
    if _is_int(s.heap_reps) and 0 < s.heap_reps < MIN_REPS:
        return (
            f"{s.heap_reps} is too few for a heap trend; "
            f"use 0 to skip the pass, or at least {MIN_REPS}"
        )
    return _whole(s.heap_reps, 0, MAX_REPS)


def _cap(s: Settings) -> str | None:
    if not _is_int(s.cap_bytes) or s.cap_bytes < 0:
        return f"{_shown(s.cap_bytes)} is not a whole number of bytes (0: the machine's default)"
    if s.cap_bytes > MAX_BYTES:
        return f"{s.cap_bytes} is more than {MAX_BYTES_TEXT}"
    return None


def _seconds(value) -> str | None:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return f"{_shown(value)} is not a number of seconds"
    if not math.isfinite(value):  # nan passes every comparison; inf is a deadline that never comes
        return f"{value} is not a finite number of seconds"
    if value < MIN_SECONDS:
        return f"{value:g} s is less than {MIN_SECONDS:g} s"
    return None


def _scales(s: Settings) -> str | None:
    try:
        scales = tuple(s.scales)
        shown = ",".join(f"{x:g}" for x in scales)
    except (TypeError, ValueError):
        return f"{_shown(s.scales)} is not a list of numbers"
    # nan passes every comparison below; inf overflows sizes
    if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in scales):
        return f"{shown} holds a number that is not finite"
    if (
        len(scales) < 2
        or any(x <= 0 for x in scales)
        or any(b <= a for a, b in zip(scales, scales[1:]))
    ):
        # a peak pair compares its smallest and largest size: out of order, it reads no-leak
        return f"{shown} is not two or more positive multiples in increasing order, e.g. 1,4"
    return None


def _flamegraph_dir(s: Settings) -> str | None:
    if s.flamegraph_dir is not None and s.heap_reps == 0:
        return "the flame graph is drawn from the heap pass; {heap_reps} 0 skips it"
    return None


def _shown(value) -> str:
    """A value for a message: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


# Settings.check's rules, in the fields' order: (field, rule), each None or the problem.
_RULES: tuple[tuple[str, Callable[[Settings], str | None]], ...] = (
    ("warmup", lambda s: _whole(s.warmup, 0, MAX_REPS)),
    ("reps", _reps),
    ("heap_reps", _heap_reps),
    ("cap_bytes", _cap),
    ("timeout_seconds", lambda s: _seconds(s.timeout_seconds)),
    ("scales", _scales),
    ("teardown_timeout_seconds", lambda s: _seconds(s.teardown_timeout_seconds)),
    ("flamegraph_dir", _flamegraph_dir),
)


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
    # the allocator the verdict's signals need (supervise.allocator), under the scenario's own
    env = {**supervise.allocator(target.scenario.kind), **target.scenario.env, **(env or {})}
    lacking = preload.missing(env)
    if lacking:  # the loader would only warn, and the run would measure glibc's malloc instead
        skip = runner.Outcome("skipped", "import", params, 0.0, skipped=lacking)
        return record.build(
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
    rec = record.build(
        target.scenario,
        target.variant,
        params,
        settings.stored(),
        outcomes,
        pair=target.pair,
        flamegraph=flamegraph,
    )
    candidates = rec["signals"] if rec["verdict"] == "leak" else []
    if candidates and not looks.needs_confirmation(candidates):
        return rec
    if rec["verdict"] == "no-leak":
        found = looks.unsettled(rec["metrics"], rec["signals"])
        candidates = [found] if found else []
    if candidates:
        rec = _confirm(rec, target, params, child, on_message, candidates)
    return rec


def _confirm(
    rec: Record,
    target: Target,
    params: dict,
    child: runner.ChildRun,
    on_message,
    candidates: list[str],
) -> Record:
    """Measure a leak that needs it (looks.needs_confirmation), or a no-leak that did not
    settle (looks.unsettled), again in a fresh process, longer (looks.confirmation_reps),
    and return the record looks.confirm makes of the later half of that run
    (record.confirmed). Where that later half rose without deciding, measure once more, longer
    again (looks.extension_reps; record.extended). Neither look runs memray's heap pass: the
    heap never decides alone (verdict.moved_signals). child: the first size's run settings.
    """
    reps = looks.confirmation_reps(child.reps)
    # no heap pass (the heap never decides alone) and no evidence readings (the first run's stand)
    options = {**(child.child_options or {}), "evidence": False}
    look = replace(child, reps=reps, heap_reps=0, child_options=options)
    outcome = runner.run_child(target.scenario.path, params, look, on_message)
    rec = record.confirmed(rec, target.scenario, reps, outcome, candidates)
    if rec["confirmation"]["extend"]:
        reps = looks.extension_reps(child.reps)
        outcome = runner.run_child(
            target.scenario.path, params, replace(look, reps=reps), on_message
        )
        rec = record.extended(rec, target.scenario, reps, outcome)
    return rec


def _flamegraph(capture: Path, outcome, folder: Path, target: Target) -> dict:
    """{"file": name in folder} once memray drew it, else
    {"error": why}: the heap pass must have finished."""
    if not (outcome.result or {}).get("heap"):
        return {"error": f"no finished heap pass to draw ({outcome.status})"}
    name = f"{target.scenario.name}-{target.variant}.html"
    problem = heap.render_flamegraph(capture, folder / name)
    return {"error": problem} if problem else {"file": name}
