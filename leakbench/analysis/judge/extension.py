"""The extension: what decides a leak whose confirmation rose without deciding (looks.confirm's
"extend"), from a run of EXTEND_REPS_FACTOR times the repetitions (docs/verdicts.md, "Lumps and
levelling"). The leak stands if a signal grows steadily in that run's later half, or if the
lower envelope of the bytes malloc and pymalloc have handed out rose in each of its
EXTEND_WINDOWS windows: a leak allocates in every window, lumps or not; a creep that touches
pages of a block already allocated, a cache that filled, a sawtooth or a one-off step do not.
"""

from __future__ import annotations

from leakbench import metrics as registry
from leakbench.analysis.judge.looks import LEVELLED, Decision, kept_signals, per_rep, unmeasured
from leakbench.analysis.judge.verdict import memory_basis, steady_signals, unmoved_reading
from leakbench.units import KIB


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
    of the bytes malloc and pymalloc have handed out (envelope_metric; the basis series where
    glibc's counters are n/a) rose in every window by STEADY_RISE_SHARE of the bar per
    repetition and over them all by the bar (`_rose`):
    a leak allocates in every window, lumps or not; a creep that touches pages of a block already
    allocated, a cache that filled, a sawtooth or a one-off step do not. Held memory's own lows
    (envelope["basis_rises"]) are kept in the record as evidence, not read: a rule on them
    read fit_per_batch's creep of about the bar as a leak in 1 of 12 runs (docs/verdicts.md).
    """
    done = unmeasured(status, later, reps, first)
    if done:
        return done
    assert later is not None and envelope is not None
    again = steady_signals(later)
    kept = kept_signals(first, again)
    basis = memory_basis(later).metric
    assert basis.threshold is not None
    series = registry.SERIES_BY_NAME[envelope["series"]]
    rises, window = envelope["rises"], envelope["window"]
    shown = " and ".join(format(r / KIB, ",.0f") for r in rises)
    total = sum(rises) / (window * len(rises))
    lows = (
        f"the lows of {series.label} rose {shown} KiB in its {len(rises)} windows of {window} "
        f"repetitions ({per_rep(basis, total)})"
    )
    if kept:
        return Decision(
            "leak",
            kept,
            again,
            f"{', '.join(kept)} grew steadily in the later half of {reps} more repetitions; {lows}",
        )
    signal = basis.signal if basis.signal in first else first[0]
    if _rose(rises, window, basis.threshold):
        found = kept_signals(first, [signal])
        return Decision("leak", found, again, f"measured {reps} more: {lows}, in every window")
    word, signals = unmoved_reading(metrics)
    bar = per_rep(basis, basis.threshold)
    # stopped: its last window did not rise (by the unit a rate is shown in); else still rising
    said = "the growth stopped" if rises[-1] < LEVELLED * window else f"under the bar of {bar}"
    return Decision(word, signals, again, f"measured {reps} more: {lows}: {said}")


def _rose(rises: list[float], window: int, bar: float) -> bool:
    """True if a lower envelope rose in every window by registry.STEADY_RISE_SHARE of the bar per
    repetition, and over them all by the bar per repetition (rises: bytes per window)."""
    total = sum(rises) / (window * len(rises))
    return min(rises) >= registry.STEADY_RISE_SHARE * bar * window and total >= bar
