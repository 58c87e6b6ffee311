"""Verdicts: turn measured trends and peaks into one word of a closed set (VERDICTS).

The rules, with the measurements behind every number, are written out once
in docs/verdicts.md; the thresholds of the growth signals are the registry's
(leakbench.metrics). In short:
- a growth signal moves when its rate (`rate`, the registry's: the least of the Theil–Sen
  slope of the whole series and of each half, so that a single step does not
  count) reaches its threshold and the one-sided Mann–Kendall test gives
  p < TREND_P_MAX; held memory decides, RSS only where held memory is n/a;
- a peak pair leaks when k in peak ∝ size^k reaches PEAK_EXPONENT_MIN and the
  peak rose by PEAK_RISE_MIN between the smallest and the largest size;
- memray's heap never calls a leak alone: its pass is short, and a bounded cache
  that turns over more slowly than it reads as growth (moved_signals);
- a leak that rests on byte signals alone is measured again, longer
  (needs_confirmation, CONFIRM_REPS_FACTOR times the repetitions), and so is a
  no-leak whose held memory rose by its bar net of lumps (`unsettled`); it
  stays a leak only if the signal grows steadily in the later half of that
  longer series (`confirm`). Where that later half still rose but in lumps,
  a drop or a levelling that may not have finished, it is measured longer
  again (EXTEND_REPS_FACTOR) and decided on the lower envelope of malloc's
  bytes in use (`extended`): a leak allocates in every window, a creep or a
  cache that filled does not;
- fragmentation: nothing that holds memory moved, and malloc_trim gave back
  most of what RSS gained or malloc keeps most of it as free bytes
  (`fragmented`, TRIM_SHARE_MIN, TRIM_HELD_MIN and FREE_HELD_MIN).
What each variant should read is leakbench.expectation's.
"""

from __future__ import annotations

from dataclasses import dataclass

from leakbench import metrics as registry
from leakbench.analysis.estimate import STEP_RISES

# re-exported: the tests read the thresholds here (verdict.HEAP_SLOPE_MIN)
from leakbench.metrics import COUNT_SLOPE_MIN as COUNT_SLOPE_MIN
from leakbench.metrics import GPU_SLOPE_MIN as GPU_SLOPE_MIN
from leakbench.metrics import HEAP_SLOPE_MIN as HEAP_SLOPE_MIN
from leakbench.metrics import HELD_SLOPE_MIN as HELD_SLOPE_MIN
from leakbench.metrics import OBJECT_SLOPE_MIN as OBJECT_SLOPE_MIN
from leakbench.metrics import PEAK_RISE_MIN, rate
from leakbench.metrics import RSS_SLOPE_MIN as RSS_SLOPE_MIN
from leakbench.units import KIB, MIB

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

TREND_P_MAX = 0.01
PEAK_EXPONENT_MIN = 0.5
TRIM_SHARE_MIN = 0.5
TRIM_HELD_MIN = 32 * MIB
# free bytes above the process before setup (docs/verdicts.md, "Fragmentation")
FREE_HELD_MIN = 96 * MIB
# A leak spreads its growth over the repetitions; a creep in a few steps (a block malloc mapped
# whole and touched deeper later, a buffer AUTOTUNE widens) puts it in a few rises. `steady`
# reads both numbers (docs/verdicts.md, "Steady growth").
STEADY_RISE_SHARE = 0.5
STEP_SHARE_MAX = 0.9
CONFIRM_REPS_FACTOR = 3  # the confirmation's later half is then 1.5x a first run's series
# The extension, where a confirmation's later half rose without deciding: 6x a first run's
# repetitions (72 at the defaults), whose later half is read in EXTEND_WINDOWS windows (of 18):
# each must hold one of a lumpy leak's lumps (docs/verdicts.md, "Lumps and levelling").
EXTEND_REPS_FACTOR = 6
EXTEND_WINDOWS = 2

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
    return _unmoved(metrics)


def _unmoved(metrics: dict) -> tuple[str, list[str]]:
    """The verdict where no deciding signal moved: fragmentation by its rule, else no-leak."""
    rss = registry.RSS
    # RSS decides in held memory's place: it has a signal and a threshold
    assert rss.signal is not None and rss.threshold is not None
    rss_grew = memory_basis(metrics).metric is not rss and moved(
        metrics.get(rss.key), rss.threshold
    )
    if fragmented(metrics, grew=rss_grew):
        return "fragmentation", [rss.signal] if rss_grew else []
    return "no-leak", []


def needs_confirmation(metrics: dict, signals: list[str]) -> bool:
    """True if a leak rests only on byte signals (held memory, RSS, memray's heap, the GPU's).

    A count signal (exact) or a peak that scales is evidence enough; bytes are measured again
    (leakbench.measure). Not even two byte signals far past their bars: a bounded cache of
    24 entries grows by its entry every repetition of a first run (15 calls) and of memray's
    pass, in held memory and in the heap alike, and fills only later (calibration, "bounded
    cache"). One byte signal alone is no better: a buffer AUTOTUNE widens now and then can pass
    it in both halves of one run, and not in the next (oversized_prefetch's fix).
    """
    if not signals or registry.PEAK_SIGNAL in signals or any(s in COUNT_SIGNALS for s in signals):
        return False
    return True


def unsettled(metrics: dict, signals: list[str]) -> str | None:
    """The memory signal to measure again where nothing moved but the evidence did not decide,
    else None.

    Unsettled: no signal moved, yet the memory series the verdict rests on (memory_basis) rose
    by its bar per repetition net of its shape (estimate.Trend.net_rate): growth in lumps or rare
    steps leaves a half of 6 repetitions flat, so the rate (the least of the halves) reads
    nothing, and `no-leak` would be a guess. A trend stored before net_rate was is settled.
    """
    if signals:
        return None
    metric = memory_basis(metrics).metric
    trend = metrics.get(metric.key)
    assert metric.threshold is not None  # the basis decides: it has a bar
    if trend and trend.get("net_rate", 0.0) >= metric.threshold:
        return metric.signal
    return None


def confirmation_reps(reps: int) -> int:
    """Measured repetitions of a confirmation run, for a first run of `reps`."""
    return reps * CONFIRM_REPS_FACTOR


def extension_reps(reps: int) -> int:
    """Measured repetitions of an extension run, for a first run of `reps`."""
    return reps * EXTEND_REPS_FACTOR


def later_half(values: list) -> list:
    """The part of a confirmation run's series (one value per repetition) its verdict reads: the
    later half. A creep that levels off (a buffer AUTOTUNE widens, a cache that fills) has spent
    its growth before it; a leak goes on at its rate (docs/verdicts.md, "Confirmation")."""
    return values[len(values) // 2 :]


@dataclass(frozen=True)
class Decision:
    """What a longer look (a confirmation, an extension) decided.

    verdict and signals: the record's. again: the signals that grew steadily in the look's later
    half (steady_signals). why: one sentence a user can check against the record's series.
    extend: the look rose without deciding; measure longer (extended) before any verdict.
    """

    verdict: str
    signals: list[str]
    again: list[str]
    why: str
    extend: bool = False


def _kept(first: list[str], again: list[str]) -> list[str]:
    """The first run's signals a longer look keeps: those that grew steadily again, and memray's
    heap beside them where it moved in the first run (the looks run no heap pass: it never
    decides alone, moved_signals)."""
    kept = [s for s in first if s in again]
    heap = registry.HEAP.signal
    return [s for s in first if s in kept or (s == heap and kept)]


def _per_rep(metric: registry.Metric, value: float) -> str:
    return f"{metric.display(value, sign=True)} {metric.shown}"


def _looked(status: str, later: dict | None, reps: int, first: list[str]) -> Decision | None:
    """The decision of a look whose run did not end with a measurement to read, else None."""
    if status == "over-cap":
        return Decision("leak", first, [], f"the {reps} more repetitions went over the memory cap")
    if later is None:
        word = status if status != "ok" else "error"
        return Decision(word, first, [], f"the {reps} more repetitions ended ({word}) unmeasured")
    return None


def confirm(
    first: list[str], status: str, later: dict | None, metrics: dict, reps: int = 0
) -> Decision:
    """Decision on a leak that needed confirmation (or an unsettled no-leak), from its
    confirmation run.

    first: the signals that moved in the first run (for an unsettled one: `unsettled`'s);
    metrics: the first run's (as for decide). status: the confirmation run's status. later:
    metrics of the confirmation run's later half (record.confirmation_metrics), None if its
    measurement never came. reps: the confirmation's measured repetitions (for `why`).

    A signal is kept if it grows steadily in the later half (steady_signals): leak. A run cut
    short by the cap confirms the leak (it grew until killed); one that hung or failed before
    its measurement came gives its status. Otherwise, if the later half still rose by the bar
    net of its shape, in held memory (or the basis in its place) or in malloc's bytes in use
    (lumps, a drop, a levelling not finished), the evidence has not decided: extend. Otherwise
    the growth stopped, and the first run reads as if nothing had moved: fragmentation by its
    rule, else no-leak (shuffle_fragmentation, whose RSS is malloc's free bytes, still reads
    fragmentation after a step in held memory is turned away).
    """
    done = _looked(status, later, reps, first)
    if done:
        return done
    assert later is not None
    again = steady_signals(later)
    kept = _kept(first, again)
    basis = memory_basis(later).metric
    trend = later.get(basis.key) or {}
    if kept:
        why = f"{', '.join(kept)} grew steadily in the later half of {reps} more repetitions"
        if basis.signal in kept:
            median = _per_rep(basis, trend["median_rise"])
            why += f": {_per_rep(basis, rate(trend))}, median rise {median}"
        return Decision("leak", kept, again, why)
    assert basis.threshold is not None
    rises = {
        m: (later.get(m.key) or {}).get("net_rate", 0.0)
        for m in (basis, registry.BY_KEY["malloc_heap_growth"])
        if later.get(m.key)
    }
    shape = _shape(trend, basis)
    if any(value >= basis.threshold for value in rises.values()):
        rose = ", ".join(f"{m.label} {_per_rep(m, v)}" for m, v in rises.items())
        return Decision(
            "leak",
            first,
            again,
            f"the later half of {reps} more repetitions rose ({rose}) {shape}",
            extend=True,
        )
    word, signals = _unmoved(metrics)
    bar = _per_rep(basis, basis.threshold)
    why = (
        f"{basis.label} stopped growing: {_per_rep(basis, rises.get(basis, 0.0))} net over the "
        f"later half of {reps} more repetitions, under the bar of {bar}"
    )
    return Decision(word, signals, again, why)


def _shape(trend: dict, basis: registry.Metric) -> str:
    """Why a rise did not decide, in words: lumps, or a half that did not rise."""
    if not trend:
        return "without a trend"
    if trend.get("top_rises_share", 0.0) >= STEP_SHARE_MAX:
        share = trend["top_rises_share"]
        return f"in lumps (its {STEP_RISES} largest rises carry {share:.0%} of it)"
    slower = min(trend["first_half"], trend["second_half"])
    return f"unevenly (its slower half {_per_rep(basis, slower)})"


def extended(
    first: list[str],
    status: str,
    later: dict | None,
    envelope: dict | None,
    metrics: dict,
    reps: int,
) -> Decision:
    """Decision on a leak whose confirmation rose without deciding, from its extension run.

    first: the candidate signals; metrics: the first run's. later: metrics of the extension's
    later half; envelope: {"series": the series read, "rises": estimate.envelope_rises of its
    later half in EXTEND_WINDOWS windows, "window": repetitions per window}, None without a
    measurement. reps: the extension's measured repetitions.

    Kept if a signal grows steadily in the later half (as in confirm), or if the lower envelope
    of malloc's bytes in use (the basis series where glibc's counters are n/a) rose in every
    window by STEADY_RISE_SHARE of the bar per repetition and over them all by the bar: a leak
    allocates in every window, lumps or not; a creep that touches pages of a block already
    allocated, a cache that filled, a sawtooth or a one-off step do not.
    """
    done = _looked(status, later, reps, first)
    if done:
        return done
    assert later is not None and envelope is not None
    again = steady_signals(later)
    kept = _kept(first, again)
    basis = memory_basis(later).metric
    assert basis.threshold is not None
    series = registry.SERIES_BY_NAME[envelope["series"]]
    rises, window = envelope["rises"], envelope["window"]
    shown = " and ".join(format(r / KIB, ",.0f") for r in rises)
    total = sum(rises) / (window * len(rises))
    lows = (
        f"the lows of {series.label} rose {shown} KiB in its {len(rises)} windows of {window} "
        f"repetitions ({_per_rep(basis, total)})"
    )
    if kept:
        return Decision(
            "leak",
            kept,
            again,
            f"{', '.join(kept)} grew steadily in the later half of {reps} more repetitions; {lows}",
        )
    if min(rises) >= STEADY_RISE_SHARE * basis.threshold * window and total >= basis.threshold:
        signal = basis.signal if basis.signal in first else first[0]
        found = _kept(first, [signal])
        return Decision("leak", found, again, f"measured {reps} more: {lows}, in every window")
    word, signals = _unmoved(metrics)
    return Decision(word, signals, again, f"measured {reps} more: {lows}: the growth stopped")


def fragmented(metrics: dict, grew: bool = True) -> bool:
    """True if malloc_trim gave back most of what RSS gained (bytes), on glibc.

    grew: RSS moved as a growth signal; then the trim must give back
    TRIM_SHARE_MIN of the growth over the measured repetitions, malloc's
    free bytes (mallinfo2 fordblks) must have risen by TRIM_SHARE_MIN of it
    too, and the growth must reach TRIM_HELD_MIN: a creep of a few MiB comes
    and goes between runs of the same fix. Either way, giving back TRIM_SHARE_MIN of the RSS held
    above the process before setup, and at least TRIM_HELD_MIN, counts; so do malloc's free bytes
    above that process (malloc_free_held_bytes) when they reach TRIM_SHARE_MIN of that RSS and
    FREE_HELD_MIN: freed chunks stranded between chunks in use, which no trim can give back
    (docs/verdicts.md, "Fragmentation", says why each bound has its value).
    """
    returned = metrics.get(registry.TRIM.key)
    if metrics.get("malloc_heap_unavailable") or returned is None:
        return False
    grown, held = metrics.get("rss_growth_bytes"), metrics.get("rss_held_bytes")
    freed = metrics.get("malloc_free_growth_bytes")
    if (
        grew
        and grown
        and grown >= TRIM_HELD_MIN
        and freed is not None
        and min(returned, freed) >= TRIM_SHARE_MIN * grown
    ):
        return True
    if held and returned >= TRIM_HELD_MIN and returned >= TRIM_SHARE_MIN * held:
        return True
    free = metrics.get("malloc_free_held_bytes")
    return bool(
        held and free is not None and free >= FREE_HELD_MIN and free >= TRIM_SHARE_MIN * held
    )
