"""Verdicts: turn measured trends and peaks into one word of a closed set (VERDICTS).

The rules, with the measurements behind every number, are written out once
in docs/verdicts.md; every bar they name is the registry's (leakbench.metrics),
re-exported here. In short:
- a growth signal moves when its rate (`rate`, the registry's: the least of the Theil–Sen
  slope of the whole series and of each half, so that a single step does not
  count) reaches its threshold and the one-sided Mann–Kendall test gives
  p < TREND_P_MAX; held memory decides, RSS only where held memory is n/a;
- a peak pair leaks when k in peak ∝ size^k reaches PEAK_EXPONENT_MIN and the
  peak rose by PEAK_RISE_MIN between the smallest and the largest size;
- memray's heap never calls a leak alone: its pass is short, and a bounded cache
  that turns over more slowly than it reads as growth (moved_signals);
- a leak that rests on byte signals alone, and a no-leak whose held memory
  rose by its bar net of lumps, are measured again, longer, before any
  verdict (leakbench.analysis.judge.looks);
- fragmentation: nothing that holds memory moved, and malloc_trim gave back
  most of what RSS gained or malloc keeps most of it as free bytes
  (`fragmented`, TRIM_SHARE_MIN, TRIM_HELD_MIN and FREE_HELD_MIN).
What each variant should read is leakbench.expectation's.
"""

from __future__ import annotations

from dataclasses import dataclass

from leakbench import metrics as registry

# re-exported: every bar is the registry's (leakbench.metrics, with why each has its value); the
# rules below, the other modules and the tests read them here too (verdict.HEAP_SLOPE_MIN)
from leakbench.metrics import COUNT_SLOPE_MIN as COUNT_SLOPE_MIN
from leakbench.metrics import FREE_HELD_MIN as FREE_HELD_MIN
from leakbench.metrics import GPU_SLOPE_MIN as GPU_SLOPE_MIN
from leakbench.metrics import HEAP_SLOPE_MIN as HEAP_SLOPE_MIN
from leakbench.metrics import HELD_SLOPE_MIN as HELD_SLOPE_MIN
from leakbench.metrics import OBJECT_SLOPE_MIN as OBJECT_SLOPE_MIN
from leakbench.metrics import PEAK_EXPONENT_MIN as PEAK_EXPONENT_MIN
from leakbench.metrics import PEAK_RISE_MIN, rate
from leakbench.metrics import RSS_SLOPE_MIN as RSS_SLOPE_MIN
from leakbench.metrics import STEADY_RISE_SHARE as STEADY_RISE_SHARE
from leakbench.metrics import STEP_SHARE_MAX as STEP_SHARE_MAX
from leakbench.metrics import TREND_P_MAX as TREND_P_MAX
from leakbench.metrics import TRIM_HELD_MIN as TRIM_HELD_MIN
from leakbench.metrics import TRIM_SHARE_MIN as TRIM_SHARE_MIN

# The closed set of verdicts, each with what it means: the one text every view shows.
VERDICTS = {
    "leak": "a signal grew with every repetition, or the peak grew with the data",
    "no-leak": "every signal stayed within its threshold",
    "fragmentation": (
        "RSS grew but nothing was held (held memory, memray's heap, threads, open files and "
        "Python objects stayed flat) and malloc_trim gave the memory back: freed memory the "
        "allocator kept, not a leak"
    ),
    "over-cap": "killed past the memory cap",
    "hang": "killed after going its timeout without progress",
    "error": "the scenario raised or its process crashed",
    "skipped": (
        "not measured: the scenario needs a device (REQUIRES) or a library (ENV's LD_PRELOAD) "
        "this machine lacks"
    ),
}

# metric key -> (signal name, threshold in the metric's unit), from the registry
# (leakbench.metrics). These decide; with glibc's
# counters n/a, RSS_FALLBACK takes held memory's place.
GROWTH_SIGNALS = {
    m.key: (m.signal, m.threshold) for m in registry.METRICS if m.signal and not m.fallback
}
RSS_FALLBACK = {m.key: (m.signal, m.threshold) for m in registry.METRICS if m.fallback}
# n/a where held memory does not decide
_MALLINFO2 = {m.key for m in registry.METRICS if m.mallinfo2}
# Signals counted in objects (exact): a move of theirs is never marginal.
COUNT_SIGNALS = tuple(m.signal for m in registry.METRICS if m.signal and m.counts)
# The memory signals memray's heap needs beside it (moved_signals).
_MEMORY_SIGNALS = (registry.HELD.signal, registry.RSS.signal, registry.GPU.signal)


# The memory metrics a verdict may rest on (memory_basis): held memory, else RSS.
MEMORY_METRICS = (registry.HELD, registry.RSS)


@dataclass(frozen=True)
class Basis:
    """The memory metric a verdict rests on, and why held memory does not decide (None: it does)."""

    metric: registry.Metric
    why: str | None = None

    @property
    def words(self) -> str:
        """The record's growth_basis: "held", or e.g. "rss
        (held memory n/a: libjemalloc is loaded: ...)"."""
        signal = self.metric.signal
        assert signal is not None  # the basis is held memory or RSS: both decide, by a signal
        return signal if self.why is None else f"{signal} ({registry.HELD.label} {self.why})"


def memory_basis(metrics: dict) -> Basis:
    """The one answer to which memory series decided: held memory, or RSS where glibc's counters
    are n/a (another allocator) or held memory has no trend (glibc without mallinfo2, records made
    before it). The verdict's rules, the record's growth_basis and every view read it."""
    if metrics.get("malloc_heap_unavailable"):
        return Basis(registry.RSS, f"n/a: {metrics['malloc_heap_unavailable']}")
    if not metrics.get(registry.HELD.key):
        return Basis(registry.RSS, "not measured")
    return Basis(registry.HELD)


def undecided(metrics: dict) -> bool:
    """True where the first run's memory basis (memory_basis) had no trend (Mann–Kendall p of
    TREND_P_MAX or more) yet its slope's 95 % interval (Theil–Sen) reaches its bar: the
    repetitions could not tell a wandering series from growth at the bar, so a no-leak would be
    a guess. fit_per_batch's leaky side on 2.21.0 read held memory +14 KiB/rep, interval -29 to
    +35, p = 0.37: its held memory drops and rises by MiB between repetitions. A trend stored
    without its interval is decided."""
    basis = memory_basis(metrics).metric
    trend = metrics.get(basis.key)
    if not trend or "high" not in trend or basis.threshold is None:
        return False
    return trend["p_increasing"] >= TREND_P_MAX and trend["high"] >= basis.threshold


def settled_by(metrics: dict) -> registry.Metric | None:
    """Where the basis is `undecided`: the bytes malloc and pymalloc handed out
    (registry.ALLOCATED), if their slope's whole 95 % interval lies under held memory's bar, else
    None. A leak in held memory is memory an allocator handed out and kept, and these counters
    do not wander with pages as held memory does (fit_per_batch: +10 KiB/rep, 9.8 to 10.9). Only
    where held memory is the basis: under another allocator they are n/a."""
    basis = memory_basis(metrics).metric
    trend = metrics.get(registry.ALLOCATED.key)
    if basis is not registry.HELD or not trend or "high" not in trend:
        return None
    assert basis.threshold is not None
    return registry.ALLOCATED if trend["high"] < basis.threshold else None


def memory_rate(metrics: dict) -> float | None:
    """The rate (bytes/repetition, `rate`) of the memory
    metric the verdict rests on, None without one."""
    trend = metrics.get(memory_basis(metrics).metric.key)
    return rate(trend) if trend else None


def deciding_signals(metrics: dict) -> dict:
    """The growth signals that decide for these metrics: GROWTH_SIGNALS, with RSS
    (RSS_FALLBACK) in place of held memory where it does not decide (memory_basis)."""
    if memory_basis(metrics).metric is registry.HELD:
        return GROWTH_SIGNALS
    return {**RSS_FALLBACK, **{k: v for k, v in GROWTH_SIGNALS.items() if k not in _MALLINFO2}}


def by_signal(metrics: dict) -> dict[str, tuple[str, float]]:
    """deciding_signals turned around: signal name -> (metric key, threshold)."""
    return {name: (key, threshold) for key, (name, threshold) in deciding_signals(metrics).items()}


def moved(trend: dict | None, threshold: float) -> bool:
    """True if a trend (as in estimate.Trend.as_dict)
    passes both its rate threshold and its test."""
    if not trend:
        return False
    return rate(trend) >= threshold and trend["p_increasing"] < TREND_P_MAX


def steady(trend: dict, threshold: float) -> bool:
    """True if a trend's growth is spread over its repetitions, as a leak's is.

    trend: as in estimate.Trend.as_dict; threshold: its signal's bar (its unit per repetition).
    Steady: its median rise from one repetition to the next reaches STEADY_RISE_SHARE of the bar,
    or its estimate.STEP_RISES largest rises carry less than STEP_SHARE_MAX of its net rise. A
    trend stored before these numbers were (no median_rise) counts as steady: its verdict stands.
    """
    if "median_rise" not in trend:
        return True
    return (
        trend["median_rise"] >= STEADY_RISE_SHARE * threshold
        or trend["top_rises_share"] < STEP_SHARE_MAX
    )


def steady_signals(metrics: dict) -> list[str]:
    """The deciding signals that moved (moved_signals) and grew steadily (`steady`): what a
    confirmation's later half must show for a leak to stand (confirm)."""
    table = by_signal(metrics)
    return [
        s
        for s in moved_signals(metrics)
        if s not in table or steady(metrics[table[s][0]], table[s][1])
    ]


def peak_scales(exponent: float | None, peaks: list) -> bool:
    """True if the peak above baseline (bytes, one per size) scales with the size parameter."""
    known = [p for p in peaks if p is not None]
    if exponent is None or len(known) < 2:
        return False
    return exponent >= PEAK_EXPONENT_MIN and known[-1] - known[0] >= PEAK_RISE_MIN


def moved_signals(metrics: dict) -> list[str]:
    """Names of the deciding signals that moved, and the peak's (PEAK_SIGNAL) if the peak scaled.

    memray's heap counts only beside another memory signal that moved (held memory, or RSS in its
    place, or the GPU's): its pass is a few repetitions, and a bounded cache whose turnover
    outlasts it reads there as growth, since the entries it evicts were allocated before the
    tracking began (docs/verdicts.md, "memray's heap")."""
    signals = [
        name
        for key, (name, threshold) in deciding_signals(metrics).items()
        if moved(metrics.get(key), threshold)
    ]
    if registry.HEAP.signal in signals and not any(s in _MEMORY_SIGNALS for s in signals):
        signals.remove(registry.HEAP.signal)
    scaling = metrics.get("peak_scaling")
    if scaling and peak_scales(scaling["exponent"], scaling["peaks_bytes"]):
        signals.append(registry.PEAK_SIGNAL)
    return signals


def decide(statuses: list[str], metrics: dict) -> tuple[str, list[str]]:
    """Verdict and the signals that moved, from run statuses and computed metrics.

    statuses: status of each child run in order ("ok", "over-cap", "hang", "error").
    metrics: as built by leakbench.analysis.record; trends under GROWTH_SIGNALS' keys,
    "peak_scaling" with "exponent" and "peaks_bytes".

    The verdict is the first status that is not "ok" (over-cap, hang, error,
    skipped), else leak, fragmentation or no-leak. A fragmentation's signals
    are ["rss"] when RSS grew by its rule (what grew, though nothing held).
    Signals are given whenever metrics are, so a run that hung in teardown
    after its measurement still says what moved.
    """
    signals = moved_signals(metrics)
    failed = next((status for status in statuses if status != "ok"), None)
    if failed:
        return failed, signals
    if signals:
        return "leak", signals
    return unmoved_reading(metrics)


def unmoved_reading(metrics: dict) -> tuple[str, list[str]]:
    """The verdict where no deciding signal moved: fragmentation by its rule, else no-leak."""
    word, signals, _form = unmoved(metrics)
    return word, signals


def unmoved(metrics: dict) -> tuple[str, list[str], str | None]:
    """The verdict where no deciding signal moved, its signals, and the fragmentation form that
    decided it (fragmentation_form; None for no-leak)."""
    rss = registry.RSS
    # RSS decides in held memory's place: it has a signal and a threshold
    assert rss.signal is not None and rss.threshold is not None
    rss_grew = memory_basis(metrics).metric is not rss and moved(
        metrics.get(rss.key), rss.threshold
    )
    form = fragmentation_form(metrics, grew=rss_grew)
    if form:
        return "fragmentation", [rss.signal] if rss_grew else [], form
    return "no-leak", [], None


# The forms fragmentation takes (fragmentation_form), each with the metric that shows it.
GROWTH_FORM, TRIM_FORM, FREE_FORM = "growth", "trim", "free bytes"


def fragmented(metrics: dict, grew: bool = True) -> bool:
    """True if RSS held is memory malloc freed and keeps (fragmentation_form names how)."""
    return fragmentation_form(metrics, grew) is not None


def fragmentation_form(metrics: dict, grew: bool = True) -> str | None:
    """How RSS is shown to be memory malloc freed and keeps, on glibc, or None.

    GROWTH_FORM (grew: RSS moved as a growth signal): the trim gave back TRIM_SHARE_MIN of the
    growth over the measured repetitions, malloc's free bytes (mallinfo2 fordblks) rose by
    TRIM_SHARE_MIN of it too, and the growth reached TRIM_HELD_MIN: a creep of a few MiB comes
    and goes between runs of the same fix. TRIM_FORM: the trim gave back TRIM_SHARE_MIN of the
    RSS held above the process before setup, and at least TRIM_HELD_MIN. FREE_FORM: malloc's
    free bytes above that process (malloc_free_held_bytes) reach TRIM_SHARE_MIN of that RSS and
    FREE_HELD_MIN: freed chunks stranded between chunks in use, which no trim can give back.
    The two level forms (TRIM_FORM, FREE_FORM) read a growth pair only: a peak pair's level
    after its run is its own peak, freed, which its verdict reads by the peak rule (an
    unbounded_interleave fix whose AUTOTUNE buffers grew under load left 96 MiB free and read
    fragmentation in one of two runs at --jobs 2). docs/fragmentation.md says why
    each bound has its value.
    """
    returned = metrics.get(registry.TRIM.key)
    if metrics.get("malloc_heap_unavailable") or returned is None:
        return None
    grown, held = metrics.get("rss_growth_bytes"), metrics.get("rss_held_bytes")
    freed = metrics.get("malloc_free_growth_bytes")
    if (
        grew
        and grown
        and grown >= TRIM_HELD_MIN
        and freed is not None
        and min(returned, freed) >= TRIM_SHARE_MIN * grown
    ):
        return GROWTH_FORM
    if metrics.get("peak_scaling"):
        return None
    if held and returned >= TRIM_HELD_MIN and returned >= TRIM_SHARE_MIN * held:
        return TRIM_FORM
    free = metrics.get("malloc_free_held_bytes")
    if held and free is not None and free >= FREE_HELD_MIN and free >= TRIM_SHARE_MIN * held:
        return FREE_FORM
    return None
