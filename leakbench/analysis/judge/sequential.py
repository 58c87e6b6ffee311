"""The online judge: a sequential rule over a stream of samples taken in a running job
(leakbench.online's), one sample standing for one repetition.

How it decides (`Judge`): one sample stands for one repetition; every bar is the registry's
(leakbench.metrics), per sample. From the `reps`-th sample of a round on (settings.Settings.reps,
12), every sample is a look:
- a count signal (threads, open files, Python objects) decides a leak by the verdict's own rule
  (analysis.verdict.moved_signals) once its series holds `reps` values, as the engine's first
  run does: counts are exact;
- each bytes signal (held memory, and the bytes handed out: malloc's and pymalloc's where the
  samples read both, else malloc's alone (HANDED_OUT), with held memory's bar as analysis.looks
  reads them; RSS and its bar where glibc's counters are n/a) gets
  a Theil–Sen slope with a two-sided interval at confidence 1 - alpha_k, where look k of the
  whole watch spends alpha_k = ALPHA × 6 / (π² k²) (`look_alpha`; the sum over every look is at
  most ALPHA). Leak, from `span` samples (24 by default): an interval's lower end is over the
  bar and the series' lower envelope rose in each window (`steady`: estimate.envelope_rises, by
  STEADY_RISE_SHARE of the bar per sample), over the trailing WINDOW samples (not the round:
  a sawtooth's drop there undoes its teeth's rise) and again over their later half
  (looks.later_half), so that one step, a sawtooth or a cache that fills early does not read
  as a leak; from `span` samples (Judge). No-leak (over the round): no signal's estimate is at
  the bar or over it (held memory falls where new allocations reuse pages it held: a custom loop's
  tf.data buffers), and held memory's (the basis's) interval lies under it, or, where held
  memory has no Mann–Kendall trend, allocated bytes' do (verdict.settled_by's rule; malloc's
  counter alone misses pymalloc, and settles nothing); from 2 × reps samples the same is read
  again over the round's later half, so that a one-off rise early in the round does not hold
  the round open after the growth stopped. Otherwise: sample on.
A leak on bytes read at a cheap sample (no garbage collection first) is read again with a full
sample in its place (`add`'s collect), and stands only if it still reads: cyclic garbage that
the collector has not reached yet is not a leak.
A round that decides no-leak starts the next, its look count and the window going on; a leak
is final.

Error rates, nominal (the interval's model: independent wander about a straight line): a job
whose bytes grow at or under the bar reads leak with probability at most ALPHA (1 %) over the
whole watch, however long (each look: alpha_k / 2 per signal, two signals); a job growing at or
over the bar reads no-leak by held memory's interval with probability at most ALPHA (each
look: alpha_k / 2 over the round and again over its later half).
Memory series wander in steps and are not independent, so the rates are measured on the
committed records' series by scripts/online-rule (results/online/vm-rule.md, docs/watch.md).
`fragmentation` is not read online (it needs a malloc_trim and the process before setup):
growth that malloc keeps free reads no-leak.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from leakbench import metrics as registry
from leakbench.analysis import estimate
from leakbench.analysis.judge import decision, looks, verdict
from leakbench.analysis.judge.interval import Read, read, series_metrics

# The series a sample reads: each the name of a registry series (leakbench.metrics.SERIES).
SAMPLED = (
    "held_bytes",
    "rss_bytes",
    "malloc_used_bytes",
    "pymalloc_used_bytes",
    "allocated_bytes",
    "threads",
    "open_files",
    "python_objects",
)
ALPHA = 0.01  # the false-alarm probability over a whole watch, nominal (module docstring)
SOURCE = "online"  # a decision's source: the watch's own samples, no longer look
COUNTS = (registry.THREADS, registry.OPEN_FILES, registry.OBJECTS)
# The bytes handed out, read beside held memory: the first whose series is readable (_metrics)
HANDED_OUT = (registry.ALLOCATED, registry.MALLOC)
# What only a full sample reads (leakbench.online.sample: None in a cheap one)
FULL_ONLY = ("pymalloc_used_bytes", "allocated_bytes", "python_objects")
LEAK_ROUNDS = 2  # a leak is read from this many times `reps` samples (its later half: `reps`)
MAX_WINDOWS = 4  # the envelope's windows: one per `reps` samples, 2 to this many
# The trailing samples a leak is read over (all since the watch began, up to this many): a
# sawtooth whose drop they hold reads no leak where its teeth last up to 3/4 of it (the drop then
# falls after the envelope's first window); a leak that starts late is read once it fills about
# 3/4 of it. It also bounds a look's cost and the samples kept.
WINDOW = 300


def look_alpha(k: int, alpha: float = ALPHA) -> float:
    """The error look k (1, 2, ...) may spend: alpha × 6 / (π² k²); over k = 1, 2, ... these sum
    to alpha (Σ 1/k² = π²/6). ValueError for k < 1."""
    if k < 1:
        raise ValueError(f"look {k}: looks count from 1")
    return alpha * 6 / (math.pi**2 * k**2)


@dataclass(frozen=True)
class Round:
    """One decided round: its verdict, the signals kept, the decision (analysis.decision's dict,
    its numbers per sample, its source SOURCE), why in one sentence, and its samples."""

    verdict: str
    signals: list[str]
    decision: dict
    why: str | None
    samples: int


class Judge:
    """The sequential rule over a stream of samples (see the module docstring).

    reps: the samples of a round before its first look (the engine's repetitions, 12); unavailable:
    why glibc's counters do not describe the heap (probes.malloc_heap_unavailable), None where
    they do; alpha: the false-alarm probability over the whole watch (ALPHA); span: the fewest
    samples of history a leak is read from (LEAK_ROUNDS × reps, 24, where None; at least that):
    a sawtooth whose teeth last up to 3/4 of it never reads leak, nor, once a drop is in the
    history judged, one whose teeth last up to 3/4 of WINDOW. ValueError for a span under
    LEAK_ROUNDS × reps.
    """

    def __init__(
        self,
        reps: int,
        unavailable: str | None = None,
        alpha: float = ALPHA,
        span: int | None = None,
    ):
        least = LEAK_ROUNDS * reps
        if span is not None and (not isinstance(span, int) or span < least):
            raise ValueError(f"span: {span!r} is not a whole number of samples, at least {least}")
        self.reps, self.unavailable, self.alpha = reps, unavailable, alpha
        self.span = span or least
        self.window = max(WINDOW, self.span)  # the history kept and judged for a leak
        self.looks = 0  # looks at bytes over the whole watch: the alpha spent goes on
        self.pending: str | None = None  # what the last look lacked, in words
        self.history: dict[str, list] = {name: [] for name in SAMPLED}
        self.taken = 0  # samples in this round so far

    def left(self) -> int:
        """Samples still to take before the next look (1 once looks are every sample)."""
        return max(self.reps - self.taken, 1)

    def add(self, taken: dict, collect: Callable[[], dict] | None = None) -> Round | None:
        """Take one sample (as `sample` returns); a Round where it decided one, else None.

        collect: where `taken` is a cheap sample, a call that takes a full one (the garbage
        collector run first). A leak on bytes read at this sample is read again with collect()'s
        sample in its place, and stands only if it still reads: between full samples, cyclic
        garbage the collector has not reached grows held memory (a fixed Keras `fit` under load,
        about 5-16 KiB an epoch until a full sample's collection dropped it: read `leak` at
        sample 98 of 500)."""
        for name in SAMPLED:
            kept = self.history[name]
            kept.append(taken.get(name))
            if len(kept) > self.window:
                del kept[0]  # the trailing window alone is judged
        self.taken += 1
        if self.taken < self.reps:
            return None
        counts = self._count_signals()
        if counts:
            return self._done("leak", counts, None, "an exact count grew at its bar or over")
        if not self._readable(self.basis(), self.round()):
            self.pending = "no bytes series to read"
            return None
        self.looks += 1
        over = self._leaks()
        if over and collect is not None:
            collected = collect()
            for name in SAMPLED:
                if name not in FULL_ONLY:  # a full-only series keeps its spacing (_spaced_trend)
                    self.history[name][-1] = collected.get(name)
            over = self._leaks()
        return self._judge(over)

    def round(self) -> dict[str, list]:
        """This round's samples (the last `taken`, at most the window), by series name."""
        size = min(self.taken, self.window)
        return {name: values[-size:] for name, values in self.history.items()}

    def _count_signals(self) -> list[str]:
        """The count signals that moved (verdict.moved_signals) over this round, each over `reps`
        values or more."""
        series = {}
        for metric in COUNTS:
            values = self.round()[metric.series or ""]
            if sum(v is not None for v in values) >= self.reps:
                series[metric.series] = values
        if not series:
            return []
        return verdict.moved_signals(series_metrics(series, self.unavailable))

    def basis(self) -> registry.Metric:
        """Held memory where its series is whole over the window and glibc's counters are
        there, else RSS."""
        held = self.history[registry.HELD.series or ""]
        whole = held and all(v is not None for v in held)
        return registry.HELD if self.unavailable is None and whole else registry.RSS

    def _metrics(self, series: dict) -> list[registry.Metric]:
        """The bytes signals read over `series`: the basis, and beside held memory the bytes handed
        out: allocated bytes (malloc's and pymalloc's) where `series` holds enough of them, else
        malloc's bytes in use. A cheap sample leaves pymalloc unread (leakbench.online.sample), so
        between full samples only malloc's counter sees an allocation that reuses pages held
        memory already counts (HANDED_OUT)."""
        basis = self.basis()
        if basis is not registry.HELD:
            return [basis]
        handed = next((m for m in HANDED_OUT if self._readable(m, series)), None)
        return [basis, handed] if handed else [basis]

    def _readable(self, metric: registry.Metric, series: dict) -> bool:
        values = series[metric.series or ""]
        return sum(v is not None for v in values) >= max(self.reps, MAX_WINDOWS + estimate.NET_EDGE)

    def _reads(self, series: dict, alpha: float) -> list[Read]:
        """Each bytes signal read over `series` (by name) at confidence 1 - alpha."""
        basis = self.basis()
        assert basis.threshold is not None  # the basis decides: it has a bar
        out = []
        for metric in self._metrics(series):
            if self._readable(metric, series):
                values = series[metric.series or ""]
                windows = min(MAX_WINDOWS, max(2, len(values) // self.reps))
                out.append(read(values, metric, basis.threshold, alpha, windows))
        return out

    def _over(self, found: Read) -> bool:
        """A leak on this signal, read over the window (the trailing WINDOW samples, or all since
        the watch began): its interval over the bar and its lows rising in every window, over the
        window and again over its later half (looks.later_half: a cache that fills or a creep
        that levels spends its growth early), from `span` samples. The lows are each sample's
        least value from it to the last: a tooth of a sawtooth whose drop the window holds lifts
        them in the windows after the drop only, so that the rise it made is undone."""
        values = self.history[found.metric.series or ""]
        if found.low <= found.bar or not found.steady or len(values) < self.span:
            return False
        later = looks.later_half(values)
        if sum(v is not None for v in later) < 2 + estimate.NET_EDGE:
            return False
        again = read(later, found.metric, found.bar, look_alpha(self.looks, self.alpha), 2)
        return again.low > found.bar and again.steady

    def _leaks(self) -> list[Read]:
        """The bytes signals this look reads a leak on (_over), over the window."""
        alpha = look_alpha(self.looks, self.alpha)
        return [r for r in self._reads(self.history, alpha) if self._over(r)]

    def _judge(self, over: list[Read]) -> Round | None:
        """This look's Round, given the bytes signals that read a leak (_leaks), else None."""
        alpha = look_alpha(self.looks, self.alpha)
        basis_metric = self.basis()
        assert basis_metric.signal is not None  # held memory or RSS: each a signal
        if over:
            why = f"{over[0].span()} over the bar, its lows rising in every window"
            return self._done("leak", [basis_metric.signal], over[0], why, whole=True)
        reads = self._reads(self.round(), alpha)
        found = self._settled(reads)
        if found is not None:
            return self._done("no-leak", [], found, f"{found.span()} under the bar")
        later = self._later_half(alpha)
        if later is not None:
            whole = next((r.span() for r in reads if r.metric is later.metric), "")
            half = self.taken - self.taken // 2
            why = f"{later.span()} under the bar over the round's later {half} of {self.taken}"
            why += f" samples; over the whole round {whole}"
            return self._done("no-leak", [], later, why)
        basis = next(r for r in reads if r.metric is basis_metric)
        bar = basis.metric.display(basis.bar)
        spans = "; ".join(r.span() for r in reads)
        word = "is at or over" if any(r.slope >= r.bar for r in reads) else "spans"
        self.pending = f"{spans}: {word} the bar of {bar} {basis.metric.shown}"
        return None

    def _settled(self, reads: list[Read]) -> Read | None:
        """The read that settles a no-leak, else None: no signal's slope at the bar or over it
        (held memory can fall while new allocations reuse pages it held), and the basis's
        interval under the bar, or, where the basis has no Mann–Kendall trend, allocated bytes'
        (malloc's counter alone misses pymalloc's small objects: it never settles one)."""
        basis = next((r for r in reads if r.metric is self.basis()), None)
        if basis is None or any(r.slope >= r.bar for r in reads):
            return None
        no_trend = basis.p >= registry.TREND_P_MAX
        settles = [r for r in reads if r is basis or (no_trend and r.metric is registry.ALLOCATED)]
        return next((r for r in settles if r.high < r.bar), None)

    def _later_half(self, alpha: float) -> Read | None:
        """A no-leak read over the round's later half (looks.later_half), from 2 × reps samples:
        a one-off rise early in the round (a +28 MiB step in a Keras predict loop) keeps the
        whole round's interval over the bar long after the growth stopped (206-258 samples)."""
        if self.taken < 2 * self.reps:
            return None
        half = {name: looks.later_half(values) for name, values in self.round().items()}
        return self._settled(self._reads(half, alpha))

    def _done(
        self, word: str, signals: list[str], found: Read | None, why: str, whole: bool = False
    ) -> Round:
        """The decided Round; `whole`: its metrics over the window (a leak read over it), else
        over the round. The next round starts afresh; the window goes on."""
        series = self.history if whole else self.round()
        metrics = series_metrics(series, self.unavailable)
        rec = {"verdict": word, "signals": signals, "metrics": metrics, "kind": "growth"}
        made = decision.decide(rec)
        looks = f"{self.taken} samples, look {self.looks}"
        if found is not None:
            made.update(label=found.metric.label, value=found.slope, unit=found.metric.unit)
            made.update(bar=found.bar, why=None)
            why = (
                f"{why} ({looks}, confidence 1 - {look_alpha(max(self.looks, 1), self.alpha):.0e})"
            )
        made.update(source=SOURCE)
        done = Round(word, list(signals), made, why, self.taken)
        self.pending = None
        self.taken = 0  # the next round starts afresh
        return done
