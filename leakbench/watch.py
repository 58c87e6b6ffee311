"""Watch a running job for leaks, inside its own process: the engine's verdict, online.

    from leakbench.watch import watch

    with watch(every=100) as w:           # one sample every 100 steps
        for batch in dataset:
            train_step(batch)
            w.step()
    print(w.result().text())

The Keras callback (leakbench.keras.LeakWatch) is a thin adapter over the same Watch; what a
sample reads is leakbench.online's, how the samples are judged analysis.judge.sequential's, what
a watch found (WatchResult) leakbench.online's.
The first `warmup` boundaries (settings.Settings.warmup, 3; a boundary is `every` units of work)
are timed, not sampled; then rounds of the sequential rule (sequential.Judge: it stops as soon
as the evidence decides, either way) follow one another: a round that ends in no-leak starts
the next, a leak is final and sampling stops.

Cost: the bytes series and the thread and file counts are read at every boundary (about
0.1 ms); a full sample adds a full garbage collection, which walks every object the collector
tracks (126 ms with TensorFlow 2.21 and a small Keras model imported, on a 2-core VM: see
docs/watch.md), pymalloc's bytes and the object count. The cheap reads are taken at every
boundary, whatever the budget: the judge's bars are per sample, so a sample must stay one
boundary's work (`every` units: result().sample says what it is). Sampling every k-th boundary
would hold a creep of the bar / k per unit to the bar: a fixed Keras fit that keeps 5 KiB an
epoch read leak in 3 of 3 runs where the budget had widened a sample to 2-4 epochs
(results/online/). The `budget` (1 % of the work between two boundaries, timed over the
warm-up) sets how often a sample is full: one every m samples, from the first sample's cost
(the Python-object and allocated-bytes series have a value every m-th sample). A leak that a
cheap sample would decide is read again from a full one taken at once (sequential.Judge.add's
collect): cyclic garbage the collector has not reached yet grows held memory, and is not a leak.
"""

from __future__ import annotations

import functools
import logging
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import psutil

from leakbench.analysis.judge.sequential import FULL_ONLY, SAMPLED, Judge, Round
from leakbench.engine import probes
from leakbench.online import WatchResult, sample
from leakbench.settings import Settings

LOG = logging.getLogger("leakbench.watch")
BUDGET = 0.01  # the share of the watched time sampling may take (seconds per second)


def name_causes(found: WatchResult) -> tuple[list | None, str | None]:
    """The known causes nearest a leak, by leakbench.check.causes.name_causes where that module
    is there (its evidence here: the verdict and the signals), else (None, why not)."""
    try:
        from leakbench.check import causes
    except ImportError:
        return None, "leakbench.check.causes is not there"
    evidence = {"verdict": found.verdict, "signals": found.signals, "decision": found.decision}
    try:
        return list(causes.name_causes(evidence)), None
    except Exception as err:  # a lookup must never stop the user's job
        return None, f"{type(err).__name__}: {err}"


class Watch:
    """The online watcher: call `step()` once per unit of work; it samples every `every` units.

    every: units per sample (steps, epochs: `unit` names them), at least 1. warmup, reps: as
    settings.Settings (the engine's defaults: 3 and 12; reps: the samples before the judge's
    first look), checked by it. budget: the share of the watched time full samples may cost
    (BUDGET, 1 %: `_full_every`; None: every sample full). The cheap reads are taken at every
    boundary (about 0.1 ms): where a unit of work is shorter than that, pass `every`. objects:
    count Python objects (len(gc.get_objects())) in full samples. on_leak: called with the
    WatchResult once a leak is decided. causes: look the known causes up on a leak
    (name_causes). span: the fewest samples a leak is read from (sequential.Judge: 24 where
    None; a sawtooth whose teeth last up to 3/4 of it never reads leak), ValueError under 2 ×
    reps.
    """

    def __init__(
        self,
        every: int = 1,
        *,
        unit: str = "step",
        warmup: int | None = None,
        reps: int | None = None,
        budget: float | None = BUDGET,
        objects: bool = True,
        on_leak: Callable[[WatchResult], Any] | None = None,
        causes: bool = True,
        span: int | None = None,
    ):
        if not isinstance(every, int) or isinstance(every, bool) or every < 1:
            raise ValueError(f"every: {every!r} is not a whole number of {unit}s, at least 1")
        if budget is not None and not (isinstance(budget, (int, float)) and 0 < budget <= 1):
            raise ValueError(f"budget: {budget!r} is not a share from 0 to 1 (0.01 is 1 %)")
        defaults = Settings()
        settings = Settings(
            warmup=defaults.warmup if warmup is None else warmup,
            reps=defaults.reps if reps is None else reps,
        )  # SettingsError, one line, as every face refuses them
        self.every, self.unit, self.budget, self.objects = every, unit, budget, objects
        self.warmup, self.reps = settings.warmup, settings.reps
        self.on_leak, self.causes = on_leak, causes
        self.full_every = 1  # one sample in this many is full (collected, objects counted)
        self._process = psutil.Process()
        self._judge = Judge(self.reps, probes.malloc_heap_unavailable(), span=span)
        self._series: dict[str, list] = {name: [] for name in SAMPLED}
        self._costs: list[float] = []
        self._works: list[float] = []  # wall time between samples, less their cost (seconds)
        self._rounds: list[Round] = []
        self._count = 0
        self._warmed = 0  # warm-up boundaries gone by
        self._started: float | None = None
        self._last = 0.0
        self._leak: WatchResult | None = None

    # --- the loop's side ---
    def start(self) -> Watch:
        """Start the clock (the first `step` does, where this is not called)."""
        if self._started is None:
            self._started = self._last = time.perf_counter()
        return self

    def step(self, n: int = 1) -> Round | None:
        """n units of work done; where `every` units have gone by, a boundary: timed only in the
        warm-up, else sampled. Returns the round the sample decided, else None."""
        self.start()
        if self._leak is not None:
            return None  # a leak is final: nothing more to pay for
        self._count += n
        if self._count < self.every:
            return None
        self._count = 0
        if self._warmed < self.warmup:  # a warm-up: timed (the budget's work), not sampled
            now = time.perf_counter()
            self._warmed += 1
            self._works.append(now - self._last)
            self._last = now
            return None
        return self.sample()

    def sample(self) -> Round | None:
        """Take one sample now, and judge it (see the module docstring). The first sample, a full
        one, also sets how often a sample is full (`_full_every`)."""
        self.start()
        began = time.perf_counter()
        first = not self._costs
        full = first or len(self._costs) % self.full_every == 0
        found = sample(self._process, self.objects, full=full)
        if first:
            self._full_every(time.perf_counter() - began, began - self._last)
        collected: dict = {}

        def collect() -> dict:  # a leak read from a cheap sample is read again from a full one
            collected.update(sample(self._process, self.objects, full=True))
            return collected

        done = self._judge.add(found, None if full else collect)
        if collected:  # what the judge kept in the cheap sample's place
            found = found | {k: v for k, v in collected.items() if k not in FULL_ONLY}
        for name in SAMPLED:
            self._series[name].append(found[name])
        self._last = time.perf_counter()
        self._costs.append(self._last - began)  # the judging included: it is the watch's cost
        if done is not None:
            self._rounds.append(done)
            if done.verdict == "leak":
                self._decided_leak()
        return done

    def _full_every(self, full: float, work: float) -> None:
        """One sample in m full, from a full sample's cost and the work of one boundary (seconds:
        the warm-up's median, else the work before the first sample): m = ceil(full / (budget ×
        work)), so full samples cost `budget` of the work."""
        work = statistics.median(self._works) if self._works else work
        if self.budget is None or work <= 0:
            return
        self.full_every = max(1, math.ceil(full / (self.budget * work)))
        LOG.info(
            "leakbench watch: a full sample costs %.3f s, of %s; one in %d full",
            full,
            self._unit_words(self.every),
            self.full_every,
        )

    def _decided_leak(self) -> None:
        self._leak = self.result()
        if self.causes:
            found, why = name_causes(self._leak)
            self._leak = replace(self._leak, causes=found, causes_error=why)
        LOG.warning("%s", self._leak.text())
        if self.on_leak is not None:
            self.on_leak(self._leak)

    # --- the result ---
    def _unit_words(self, n: int) -> str:
        return f"{n} {self.unit}" + ("" if n == 1 else "s")

    def result(self) -> WatchResult:
        """What the watch found so far (WatchResult); once a leak is decided, that leak's,
        with the cost as it stands now."""
        now = time.perf_counter()
        cost = sum(self._costs)
        watched = now - self._started if self._started is not None else 0.0
        if self._leak is not None:
            return replace(
                self._leak,
                cost_seconds=cost,
                watched_seconds=watched,
                cost_per_sample_seconds=cost / len(self._costs),
            )
        last = next((r for r in reversed(self._rounds) if r.verdict == "leak"), None)
        last = last or (self._rounds[-1] if self._rounds else None)
        taken = len(self._costs)
        return WatchResult(
            verdict=last.verdict if last else None,
            signals=last.signals if last else [],
            decision=last.decision if last else None,
            why=last.why if last else None,
            sample=self._unit_words(self.every),
            samples=taken,
            warmup=self._warmed,
            rounds=len(self._rounds),
            left=self._judge.left(),
            pending=self._judge.pending,
            cost_seconds=cost,
            cost_per_sample_seconds=cost / taken if taken else None,
            watched_seconds=watched,
            series={k: list(v) for k, v in self._series.items()},
        )

    # --- as a context manager and a decorator ---
    def __enter__(self) -> Watch:
        return self.start()

    def __exit__(self, *exc) -> None:
        LOG.info("%s", self.result().text())

    def __call__(self, function: Callable) -> Callable:
        """Decorate a function that does one unit of work: each call steps the watch."""

        @functools.wraps(function)
        def watched(*args, **kwargs):
            out = function(*args, **kwargs)
            self.step()
            return out

        watched.watch = self  # type: ignore[attr-defined]
        return watched


def watch(every: int = 1, **options) -> Watch:
    """A Watch sampling every `every` steps (see Watch for the options): a context manager
    (`with watch(every=100) as w: ... w.step()`) and a decorator (`@watch(every=10)`)."""
    return Watch(every, **options)
