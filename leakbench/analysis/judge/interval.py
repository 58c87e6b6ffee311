"""A bytes signal at one look of the online judge (analysis.judge.sequential): Theil–Sen's
slope with its interval at a given confidence, the Mann–Kendall p, and whether the series'
lower envelope rose in every window. Computed from one set of pairs over at most THIN values,
so a look costs a few ms however long the watch. And a decided round's metrics (series_metrics).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from leakbench import metrics as registry
from leakbench.analysis import estimate

THIN = 150  # Theil–Sen's points at most per look (every k-th sample of the window)


@dataclass(frozen=True)
class Read:
    """One bytes signal at one look: its metric, bar, Theil–Sen slope and interval (bytes per
    sample), Mann–Kendall p (increasing), and whether its lower envelope rose in every window."""

    metric: registry.Metric
    bar: float
    slope: float
    low: float
    high: float
    p: float
    steady: bool

    def span(self) -> str:
        m = self.metric
        low, high = m.display(self.low, sign=True), m.display(self.high, sign=True)
        return f"{m.label} {m.display(self.slope, sign=True)} {m.shown} ({low} to {high})"


def steady(values, bar: float, windows: int) -> bool:
    """True if the lower envelope of `values` (estimate.envelope_rises) rose in each of
    `windows` windows by STEADY_RISE_SHARE of the bar per sample: a leak allocates in every
    window; one step lifts one window, a sawtooth none."""
    rises = estimate.envelope_rises(values, windows)
    length = (len(values) - estimate.NET_EDGE) / windows
    return min(rises) >= registry.STEADY_RISE_SHARE * bar * length


def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Theil–Sen's pairs i < j of n points, made at each look and freed after it. Not cached: the
    watch's process is the one measured, and a cache of the last 64 sizes kept 16 bytes a pair of
    each, n(n-1)/2 pairs: its held memory then rose about n KiB a sample as the watch went on,
    and a fixed Keras fit read `leak` (scripts/watch-table)."""
    return np.triu_indices(n, 1)


def thinned(count: int, most: int = THIN) -> np.ndarray:
    """Indexes into `count` points: every k-th, the last included, at most `most` of them
    (k = ceil(count / most)): Theil–Sen's pairs grow as the square of its points."""
    stride = max(1, math.ceil(count / most))
    return np.arange(count - 1, -1, -stride)[::-1]


def read(values: list, metric: registry.Metric, bar: float, alpha: float, windows: int) -> Read:
    """A bytes signal at one look (values: one per sample, or every m-th sample with None
    between, read per sample): Theil–Sen's slope and its interval at confidence 1 - alpha
    (two-sided; Sen's rank bounds from Kendall's S variance n(n-1)(2n+5)/18, as
    scipy.stats.theilslopes, computed here from one set of pairs over at most THIN of the values,
    every k-th: a look costs a few ms however long the watch), and the one-sided Mann–Kendall p
    (normal approximation, no tie correction) over the same points. The lower envelope (`steady`)
    reads every value."""
    every = np.array([i for i, v in enumerate(values) if v is not None], dtype=float)
    whole = np.asarray([v for v in values if v is not None], dtype=float)
    kept = thinned(len(whole))
    at, y = every[kept], whole[kept]
    n = len(y)
    i, j = _pairs(n)
    rise = y[j] - y[i]
    slopes = np.sort(rise / (at[j] - at[i]))
    sigma = math.sqrt(n * (n - 1) * (2 * n + 5) / 18)
    z = NormalDist().inv_cdf(1 - alpha / 2) * sigma
    low = slopes[max(int(round((len(slopes) - z) / 2)), 0)]
    high = slopes[min(int(round((len(slopes) + z) / 2)) - 1, len(slopes) - 1)]
    s = float(np.sign(rise).sum())
    p = 1.0 - NormalDist().cdf((s - 1) / sigma) if s > 0 else 1.0
    spacing = (every[-1] - every[0]) / (len(whole) - 1)
    rose = steady(whole, bar * spacing, windows)
    return Read(metric, bar, float(np.median(slopes)), float(low), float(high), p, rose)


def series_metrics(series: dict, unavailable: str | None) -> dict:
    """The metrics the verdict reads, from series of samples (one value per sample): the trend
    (estimate.trend, its unit per sample) of every registry metric whose series was sampled; a
    series taken every m-th sample only (None between) is read over its values, per sample."""
    out: dict[str, Any] = {}
    for metric in registry.METRICS:
        values = series.get(metric.series) if metric.series else None
        found = _spaced_trend(values) if values else None
        out[metric.key] = {**found, "unit": metric.unit} if found else None
    out["malloc_heap_unavailable"] = unavailable
    return out


_PER_STEP = ("slope", "low", "high", "first_half", "second_half", "median_rise", "net_rate")


def _spaced_trend(values: list) -> dict | None:
    """estimate.trend of the values taken (None skipped), per sample: each rate divided by the
    mean spacing of the values taken; None for fewer than 3."""
    at = [i for i, v in enumerate(values) if v is not None]
    found = estimate.trend([values[i] for i in at]) if len(at) >= 3 else None
    if found is None:
        return None
    spacing = (at[-1] - at[0]) / (len(at) - 1)
    return {k: v / spacing if k in _PER_STEP else v for k, v in found.as_dict().items()}
