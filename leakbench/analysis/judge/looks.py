"""Longer looks: what the engine measures again before a verdict on bytes, and how it decides.

The rules (docs/verdicts.md, "Confirmation" and "Lumps and levelling"):
- a leak that rests on byte signals alone (needs_confirmation), and a no-leak whose held memory
  rose by its bar net of lumps (`unsettled`), are measured again in a fresh process with
  CONFIRM_REPS_FACTOR times the repetitions; the signal stays a leak if it grows steadily in the
  later half of that run (`confirm`): a leak grows for as long as one looks, a bounded pipeline's
  creep, a cache that fills and a one-off step level off;
- where that later half still rose, but in lumps, with a drop, or levelling without having
  finished, or grew on under the bar (`still_growing`), nothing is decided yet: an extension of
  EXTEND_REPS_FACTOR times the repetitions is measured, and the leak stands if a signal grows
  steadily in its later half or if the lower envelope of the bytes malloc and pymalloc have
  handed out rose in each of its EXTEND_WINDOWS windows (`extended`): a
  leak allocates in every window, lumps or not; a creep that touches pages of a block already
  allocated, a cache that filled, a sawtooth or a one-off step do not.
Each decision carries one sentence (`why`) a user can check against the record's series.
"""

from __future__ import annotations

from dataclasses import dataclass

from leakbench import metrics as registry
from leakbench.analysis.estimate import STEP_RISES
from leakbench.analysis.judge.verdict import (
    COUNT_SIGNALS,
    STEADY_RISE_SHARE,
    STEP_SHARE_MAX,
    memory_basis,
    moved,
    settled_by,
    steady_signals,
    undecided,
    unmoved_reading,
)
from leakbench.metrics import rate
from leakbench.units import KIB

CONFIRM_REPS_FACTOR = 3  # the confirmation's later half is then 1.5x a first run's series
# The extension, where a confirmation's later half rose without deciding: 6x a first run's
# repetitions (72 at the defaults), whose later half is read in EXTEND_WINDOWS windows (of 16:
# 36 values less estimate.NET_EDGE, halved):
# each must hold one of a lumpy leak's lumps (docs/verdicts.md, "Lumps and levelling").
EXTEND_REPS_FACTOR = 6
EXTEND_WINDOWS = 2
# The words of a no-leak after a longer look: "stopped" only where the basis levelled, that is
# rose less than the unit the rate is shown in (half a KiB/rep rounds to +0 KiB/rep): over the
# confirmation's later half, or in the extension's last window. Above it, the rate and the bar
# ("under the bar"), never "stopped" (tests/test_estimate.py).
LEVELLED = KIB / 2


def needs_confirmation(signals: list[str]) -> bool:
    """True if a leak (its signals: record["signals"]) rests only on byte signals (held memory,
    RSS, memray's heap, the GPU's), however far past their bars.

    A count signal (exact) or a peak that scales is evidence enough; bytes are measured again
    (leakbench.measure). Not even two byte signals far past their bars: a bounded cache of
    24 entries grows by its entry every repetition of a first run (15 calls) and of memray's
    pass, in held memory and in the heap alike, and fills only later (calibration, "bounded
    cache"). One byte signal alone is no better: a buffer AUTOTUNE widens now and then can pass
    it in both halves of one run, and not in the next (oversized_prefetch's fix).
    """
    exact = registry.PEAK_SIGNAL in signals or any(s in COUNT_SIGNALS for s in signals)
    return bool(signals) and not exact


def unsettled(metrics: dict, signals: list[str]) -> str | None:
    """The memory signal to measure again where nothing moved but the evidence did not decide,
    else None.

    Unsettled: no signal moved, yet the memory series the verdict rests on (memory_basis), or
    the bytes malloc and pymalloc have handed out, rose by the bar per repetition net of its shape
    (estimate.Trend.net_rate); or the basis had no trend while its slope's interval reached the
    bar, and the bytes handed out do not settle it (verdict.undecided, verdict.settled_by).
    Growth in lumps or rare steps leaves a half of 6 repetitions
    flat, so the rate (the least of the halves) reads nothing; and held memory can hide a step
    that the bytes handed out show, where malloc grew its heap's top past what is touched (a
    64 KiB block every 4 repetitions read +64, -44, +128 KiB in held memory, +64 each in malloc
    in use). `no-leak` would be a guess. A trend stored before net_rate was is settled.
    """
    if signals:
        return None
    basis = memory_basis(metrics).metric
    assert basis.threshold is not None  # the basis decides: it has a bar
    for metric in _rising(basis):
        trend = metrics.get(metric.key)
        if trend and trend.get("net_rate", 0.0) >= basis.threshold:
            return basis.signal
    if undecided(metrics) and settled_by(metrics) is None:
        return basis.signal
    return None


def envelope_metric(basis: registry.Metric) -> registry.Metric:
    """The metric whose series an extension's lower envelope reads (`extended`): the bytes malloc
    and pymalloc have handed out where held memory is the basis (glibc's counters are there),
    else the basis (RSS). Both allocators: malloc alone misses what CPython keeps in its own
    arenas (python-dict's int keys rise there steadily, its table in malloc in rare lumps)."""
    return registry.ALLOCATED if basis is registry.HELD else basis


def _rising(basis: registry.Metric) -> tuple[registry.Metric, ...]:
    """The series whose net rise asks for a longer look: the basis, and envelope_metric's."""
    return tuple(dict.fromkeys((basis, envelope_metric(basis))))


def confirmation_reps(reps: int) -> int:
    """Measured repetitions of a confirmation run, for a first run of `reps`."""
    return reps * CONFIRM_REPS_FACTOR


def extension_reps(reps: int) -> int:
    """Measured repetitions of an extension run, for a first run of `reps`."""
    return reps * EXTEND_REPS_FACTOR


def later_half(values: list) -> list:
    """The part of a confirmation run's series (one value per repetition) its verdict reads: the
    later half. A creep that levels off (a buffer AUTOTUNE widens, a cache that fills) has spent
    its growth before it; a leak goes on at its rate (docs/verdicts.md, "Longer looks")."""
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


def kept_signals(first: list[str], again: list[str]) -> list[str]:
    """The first run's signals a longer look keeps: those that grew steadily again, and memray's
    heap beside them where it moved in the first run (the looks run no heap pass: it never
    decides alone, moved_signals)."""
    kept = [s for s in first if s in again]
    heap = registry.HEAP.signal
    return [s for s in first if s in kept or (s == heap and kept)]


def per_rep(metric: registry.Metric, value: float) -> str:
    return f"{metric.display(value, sign=True)} {metric.shown}"


def unmeasured(status: str, later: dict | None, reps: int, first: list[str]) -> Decision | None:
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
    metrics of the confirmation run's later half (protocol.later_metrics), None if its
    measurement never came. reps: the confirmation's measured repetitions (for `why`).

    A signal is kept if it grows steadily in the later half (steady_signals): leak. A run cut
    short by the cap confirms the leak (it grew until killed); one that hung or failed before
    its measurement came gives its status. Otherwise, if the later half still rose by the bar
    net of its shape, in held memory (or the basis in its place) or in the bytes malloc and
    pymalloc handed out (lumps, a drop, a levelling not finished), or grew on under the bar
    (`still_growing`), the evidence has not decided: extend. Otherwise
    the growth stopped, and the first run reads as if nothing had moved: fragmentation by its
    rule, else no-leak (shuffle_fragmentation, whose RSS is malloc's free bytes, still reads
    fragmentation after a step in held memory is turned away).
    """
    done = unmeasured(status, later, reps, first)
    if done:
        return done
    assert later is not None
    again = steady_signals(later)
    kept = kept_signals(first, again)
    basis = memory_basis(later).metric
    trend = later.get(basis.key) or {}
    if kept:
        why = f"{', '.join(kept)} grew steadily in the later half of {reps} more repetitions"
        if basis.signal in kept:
            median = per_rep(basis, trend["median_rise"])
            why += f": {per_rep(basis, rate(trend))}, median rise {median}"
        return Decision("leak", kept, again, why)
    assert basis.threshold is not None
    rises = {m: later[m.key].get("net_rate", 0.0) for m in _rising(basis) if later.get(m.key)}
    shape = _shape(trend, basis)
    if any(value >= basis.threshold for value in rises.values()):
        rose = ", ".join(f"{m.label} {per_rep(m, v)}" for m, v in rises.items())
        return Decision(
            "leak",
            first,
            again,
            f"the later half of {reps} more repetitions rose ({rose}) {shape}",
            extend=True,
        )
    growing = still_growing(later, basis)
    if growing:
        return Decision(
            "leak",
            first,
            again,
            f"the later half of {reps} more repetitions still grew, under the bar: {growing}",
            extend=True,
        )
    word, signals = unmoved_reading(metrics)
    bar = per_rep(basis, basis.threshold)
    net = rises.get(basis, 0.0)
    how = "stopped growing" if net < LEVELLED else "grew under the bar"
    why = (
        f"{basis.label} {how}: {per_rep(basis, net)} net over the "
        f"later half of {reps} more repetitions, under the bar of {bar}"
    )
    return Decision(word, signals, again, why)


def still_growing(later: dict, basis: registry.Metric) -> str | None:
    """Where a confirmation's later half (metrics: later) grew under the bar, yet still grew:
    the series that did, in words ("held memory +8 KiB/rep, p = 2e-16"), else None.

    Still growing: the basis, or envelope_metric's series, moved (a Mann–Kendall trend, and a
    rate, the least of the slope and its halves) at STEADY_RISE_SHARE of the bar. A first run
    that passed the bar and a later half that grows on at half of it leave the question open:
    a dict that doubles its table grows steadily (its int keys) between lumps rarer than the
    later half (python-dict at 16 KiB: +9 KiB/rep, then its next table). A cache that filled,
    a creep that levelled, a sawtooth or a one-off step have a flat later half; a creep that
    goes on under the bar is measured longer and turned away by the extension's bar
    (`extended`: over both windows, at least the bar).
    """
    assert basis.threshold is not None
    for metric in _rising(basis):
        trend = later.get(metric.key)
        if trend and moved(trend, STEADY_RISE_SHARE * basis.threshold):
            p = trend["p_increasing"]
            return f"{metric.label} {per_rep(metric, rate(trend))}, p = {p:.0e}"
    return None


def _shape(trend: dict, basis: registry.Metric) -> str:
    """Why a rise did not decide, in words: lumps, or a half that did not rise."""
    if not trend:
        return "without a trend"
    if trend.get("top_rises_share", 0.0) >= STEP_SHARE_MAX:
        share = trend["top_rises_share"]
        return f"in lumps (its {STEP_RISES} largest rises carry {share:.0%} of it)"
    slower = min(trend["first_half"], trend["second_half"])
    return f"unevenly (its slower half {per_rep(basis, slower)})"
