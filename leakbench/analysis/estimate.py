"""Estimators: a robust slope with a trend test, and how a peak scales with size.

Slope: Theil–Sen (Sen 1968, "Estimates of the regression coefficient based on
Kendall's tau"), the median of pairwise slopes, via scipy.stats.theilslopes. It
resists outliers, but not a single step near the middle of a flat series: a
2 MiB jump at repetition 7 of 12 reads 205 KiB/repetition (least squares: 251),
because most pairs of points straddle the step. Hence the half-series slopes
in Trend, which the verdict uses to ask whether growth is sustained.

Trend test: Mann–Kendall, i.e. Kendall's tau between repetition index and
value, one-sided (increasing), via scipy.stats.kendalltau. It asks whether the
series tends to rise, not by how much; the slope threshold asks how much.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from leakbench.units import MIB

STEP_RISES = 3  # the rises top_rises_share counts: verdict.steady says why 3
NET_EDGE = 3  # net_rate compares the medians of this many values at each end


@dataclass(frozen=True)
class Trend:
    """Slope of a series per repetition, its 95 % interval, and the trend test.

    slope, low, high: units of the series per repetition.
    p_increasing: one-sided Mann–Kendall p-value for "the series increases".
    first_half, second_half: Theil–Sen slopes of each half of the series.
    A leak keeps growing, so both halves rise; a single step or a plateau
    rises in one half only (Theil–Sen alone is fooled by a step near the
    middle: more than half of all pairs of points straddle it).
    median_rise: the median of the rises from one repetition to the next (units of the series);
    a leak of r per repetition has about r, a series that grows in a few steps has about 0.
    top_rises_share: the share of the net rise (last value − first) that the STEP_RISES largest
    of those rises carry; 1.0 where the series did not rise. Steps put most of the growth in a
    few rises, a leak spreads it over all of them (verdict.steady reads both).
    net_rate: the series' net rise per repetition, lumps and all: the median of its last NET_EDGE
    values less the median of its first NET_EDGE, over the repetitions between them. A leak that
    grows in lumps or rare steps keeps its average rate here where each half's slope may read 0;
    so does a one-off step or a cache that fills, which is why it only asks for a longer look
    (looks.unsettled), never decides.
    """

    slope: float
    low: float
    high: float
    p_increasing: float
    first_half: float
    second_half: float
    median_rise: float
    top_rises_share: float
    net_rate: float

    def as_dict(self) -> dict:
        return asdict(self)


def warm_up() -> None:
    """Import scipy.stats now (about 1 s on the reference machine): leakbench.measure calls this in
    a thread while its first child imports TensorFlow, so the verdict does not wait for it."""
    import scipy.stats  # noqa: F401


def trend(values) -> Trend | None:
    """Trend of `values` (one per repetition, shape (n,)); None if n < 3 or a value is missing."""
    from scipy import stats  # on first use, or warm_up's: no import of the CLI waits for it

    if values is None or len(values) < 3 or any(v is None for v in values):
        return None
    y = np.asarray(values, dtype=float)
    x = np.arange(len(y), dtype=float)
    slope, _intercept, low, high = stats.theilslopes(y, x, alpha=0.95)
    half = len(y) // 2
    first = stats.theilslopes(y[: len(y) - half], x[: len(y) - half]).slope
    second = stats.theilslopes(y[-half:], x[-half:]).slope if half >= 2 else slope
    if np.ptp(y) == 0:
        p = 1.0  # a constant series has no trend; kendalltau would return nan
    else:
        p = float(stats.kendalltau(x, y, alternative="greater").pvalue)
    rises = np.diff(y)
    net = y[-1] - y[0]
    top = np.sort(rises)[-STEP_RISES:].sum()
    edge = min(NET_EDGE, len(y) // 3)
    net_rate = (np.median(y[-edge:]) - np.median(y[:edge])) / (len(y) - edge)
    return Trend(
        float(slope),
        float(low),
        float(high),
        p if math.isfinite(p) else 1.0,
        float(first),
        float(second),
        float(np.median(rises)),
        float(top / net) if net > 0 else 1.0,
        float(net_rate),
    )


def envelope_rises(values, windows: int) -> list[float]:
    """Rises of a series' lower envelope over `windows` contiguous equal windows: shape (windows,),
    in the series' unit.

    The lower envelope at repetition i is the least value from i on (min(values[i:])); the
    windows run from the first value to the NET_EDGE-th from the end (where the envelope is the
    least of the last NET_EDGE values, so that one high last sample cannot lift it). The envelope
    of a leak rises in every window long enough to hold one of its lumps; a spike upward or a
    buffer cleared now and then (a sawtooth) leaves it level, and a creep or a cache that filled
    lifts it in the windows where it grew only. Raises ValueError for fewer values than
    windows + NET_EDGE."""
    y = np.asarray(values, dtype=float)
    if len(y) < windows + NET_EDGE:
        raise ValueError(f"{len(y)} values cannot make {windows} windows")
    low = np.minimum.accumulate(y[::-1])[::-1]
    edges = np.linspace(0, len(y) - NET_EDGE, windows + 1).round().astype(int)
    return [float(low[b] - low[a]) for a, b in zip(edges, edges[1:])]


def scaling_exponent(sizes, peaks, floor: float = MIB) -> float | None:
    """Log–log slope of peak against size: ~1 when the peak is proportional, ~0 when bounded.

    sizes: values of the size parameter, shape (k,), k >= 2.
    peaks: peak bytes above baseline at those sizes, shape (k,); values below
    `floor` bytes are raised to it so that a near-zero peak does not blow up the log.
    Returns None when fewer than two distinct sizes were measured.
    """
    pairs = [(s, p) for s, p in zip(sizes, peaks) if s and p is not None]
    if len({s for s, _ in pairs}) < 2:
        return None
    x = np.log([s for s, _ in pairs])
    y = np.log([max(p, floor) for _, p in pairs])
    return float(np.polyfit(x, y, 1)[0])
