"""The estimator (leakbench.analysis.estimate) and the verdict rules (analysis.judge.verdict)
on synthetic series: no subprocess, no TensorFlow."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from leakbench.analysis import estimate
from leakbench.analysis.judge import decision, extension, in_words, looks, protocol, verdict
from leakbench.analysis.judge.verdict import (
    COUNT_SLOPE_MIN,
    HEAP_SLOPE_MIN,
    HELD_SLOPE_MIN,
    OBJECT_SLOPE_MIN,
    PEAK_EXPONENT_MIN,
    PEAK_RISE_MIN,
    RSS_SLOPE_MIN,
)
from leakbench.history import store

KIB, MIB = 1 << 10, 1 << 20
N = 12  # the default number of measured repetitions (Settings.reps)
BASE = 300 * MIB  # a plausible RSS of a process that imported TensorFlow


def line(slope: float, n: int = N, base: float = BASE) -> np.ndarray:
    return base + slope * np.arange(n, dtype=float)


def noisy(series: np.ndarray, sd: float, seed: int) -> np.ndarray:
    return series + np.random.default_rng(seed).normal(0.0, sd, size=len(series))


def moved_rss(values) -> bool:
    found = estimate.trend(values)
    return verdict.moved(found and found.as_dict(), RSS_SLOPE_MIN)


# --- trend: slopes ---------------------------------------------------------


@pytest.mark.parametrize("slope", [0.0, 1.0, 64 * KIB, 256 * KIB, 1 * MIB, 7.5 * MIB, -512 * KIB])
def test_exact_linear_slope_is_recovered(slope):
    found = estimate.trend(line(slope))
    assert found.slope == pytest.approx(slope, abs=1e-6)
    assert found.low <= found.slope <= found.high


@pytest.mark.parametrize(
    "slope, sd, seed",
    [
        (1 * MIB, 128 * KIB, 0),
        (1 * MIB, 512 * KIB, 1),
        (512 * KIB, 64 * KIB, 2),
        (3 * MIB, 1 * MIB, 3),
    ],
)
def test_noisy_linear_slope_is_recovered(slope, sd, seed):
    found = estimate.trend(noisy(line(slope), sd, seed))
    # Gaussian noise of sd bytes on 12 points: the slope's standard error is
    # sd / sqrt(sum((x - mean x)^2)) = sd / 12, so 0.5 sd leaves room for > 5 errors.
    assert found.slope == pytest.approx(slope, abs=0.5 * sd)
    assert found.low <= slope <= found.high  # the 95 % interval covers the truth
    assert found.low < found.slope < found.high  # ... and is an interval, not a point
    assert found.p_increasing < verdict.TREND_P_MAX
    assert moved_rss(noisy(line(slope), sd, seed))


def test_linear_leak_at_the_rss_threshold_moves_and_just_below_does_not():
    assert moved_rss(line(1.05 * RSS_SLOPE_MIN))
    assert not moved_rss(line(0.95 * RSS_SLOPE_MIN))


def test_flat_noisy_series_has_no_trend():
    values = noisy(line(0.0), 64 * KIB, seed=12)
    found = estimate.trend(values)
    assert found.p_increasing > 0.1
    assert abs(found.slope) < 64 * KIB
    assert found.low < 0 < found.high
    assert not moved_rss(values)


def test_trend_test_is_calibrated_on_white_noise():
    """Mann–Kendall at TREND_P_MAX should flag about that share of pure-noise
    series (a two-sided or wrong-way test would flag more or none)."""
    flagged = sum(
        estimate.trend(noisy(line(0.0), 1 * MIB, seed)).p_increasing < verdict.TREND_P_MAX
        for seed in range(400)
    )
    assert 1 <= flagged <= 12  # expected 4 of 400 at p < 0.01 (these seeds give exactly 4)


def test_trend_test_is_one_sided():
    falling = estimate.trend(line(-1 * MIB))
    assert falling.slope == pytest.approx(-1 * MIB)
    assert falling.p_increasing > 0.99
    assert not moved_rss(line(-1 * MIB))


def test_constant_series_has_p_one():
    found = estimate.trend([BASE] * N)
    assert found.slope == 0.0
    assert found.p_increasing == 1.0
    assert not verdict.moved(found.as_dict(), 0.0)  # not even at a zero slope threshold


@pytest.mark.parametrize("values", [None, [], [1.0], [1.0, 2.0], [1.0, None, 3.0, 4.0]])
def test_too_few_or_missing_points_give_no_trend(values):
    assert estimate.trend(values) is None


def test_trend_is_plain_data():
    found = estimate.trend(noisy(line(1 * MIB), 1 * KIB, seed=5)).as_dict()
    assert {"slope", "low", "high", "p_increasing"} <= set(found)
    assert all(isinstance(v, float) and math.isfinite(v) for v in found.values())


def test_five_points_is_the_fewest_that_can_move():
    """Mann–Kendall's smallest one-sided p for n points is 1/n!: 1/24 for n = 4,
    above TREND_P_MAX, so a perfect leak over 4 repetitions cannot move."""
    assert estimate.trend(line(1 * MIB, n=4)).p_increasing == pytest.approx(1 / 24)
    assert not moved_rss(line(1 * MIB, n=4))
    assert estimate.trend(line(1 * MIB, n=5)).p_increasing == pytest.approx(1 / 120)
    assert moved_rss(line(1 * MIB, n=5))


# --- trend: what must not read as a leak -----------------------------------


def step(size: float, at: int, n: int = N) -> np.ndarray:
    values = np.full(n, float(BASE))
    values[at:] += size
    return values


def test_single_step_is_not_a_leak():
    """The robustness claim of estimate.py: a 2 MiB jump at repetition 7 of 12
    moves an OLS slope a lot and the Theil–Sen slope much less."""
    values = step(2 * MIB, at=7)
    ols = np.polyfit(np.arange(N), values, 1)[0]
    found = estimate.trend(values)
    assert ols > 240 * KIB  # least squares reads the step as ~250 KiB/repetition
    assert found.slope < 0.85 * ols
    assert found.slope < RSS_SLOPE_MIN
    assert not moved_rss(values)


@pytest.mark.parametrize("at", range(1, N))
@pytest.mark.parametrize("size", [2 * MIB, 4 * MIB, 64 * MIB])
def test_single_step_of_any_size_anywhere_is_not_a_leak(size, at):
    """A buffer allocated once, or a thread pool created lazily, lifts the
    series once. A step near the middle straddles more than half of all pairs
    of points, so Theil–Sen alone reads it as a slope of size/10 per repetition
    and Mann–Kendall finds it significant; the verdict must still say no."""
    assert not moved_rss(step(size, at))


def test_plateau_is_not_a_leak():
    """Grows for the first half (a cache filling), then flat."""
    values = np.concatenate([line(1 * MIB, n=N // 2), np.full(N // 2, BASE + (N // 2) * MIB)])
    found = estimate.trend(values)
    assert found.p_increasing < verdict.TREND_P_MAX  # the test alone would call it growth
    assert found.slope >= RSS_SLOPE_MIN  # and so would the slope alone
    assert not moved_rss(values)


def test_leak_in_both_halves_with_a_step_still_moves():
    """A steady leak plus a one-off jump is still a leak."""
    assert moved_rss(line(1 * MIB) + step(8 * MIB, at=5) - BASE)


# --- scaling exponent ------------------------------------------------------

SIZES = [24 * MIB, 48 * MIB, 96 * MIB]


def test_proportional_peaks_scale_with_exponent_one():
    assert estimate.scaling_exponent(SIZES, SIZES) == pytest.approx(1.0, abs=1e-9)
    assert estimate.scaling_exponent([10, 20, 40], [3 * MIB, 6 * MIB, 12 * MIB]) == pytest.approx(
        1.0, abs=1e-9
    )


def test_middle_of_three_log_spaced_sizes_does_not_move_the_exponent():
    """Why Settings.scales is (1, 4): at sizes 1, 2, 4
    the least-squares slope is the end points' slope."""
    ends = estimate.scaling_exponent([1, 4], [30 * MIB, 90 * MIB])
    for middle in (31 * MIB, 60 * MIB, 89 * MIB):
        assert estimate.scaling_exponent([1, 2, 4], [30 * MIB, middle, 90 * MIB]) == pytest.approx(
            ends, abs=1e-12
        )


def test_quadratic_peaks_scale_with_exponent_two():
    assert estimate.scaling_exponent([1, 2, 4], [4 * MIB, 16 * MIB, 64 * MIB]) == pytest.approx(
        2.0, abs=1e-9
    )


def test_constant_peaks_scale_with_exponent_zero():
    assert estimate.scaling_exponent(SIZES, [40 * MIB] * 3) == pytest.approx(0.0, abs=1e-9)


def test_tiny_peaks_are_floored_not_blown_up():
    """Peaks of 1 KiB, 0 and 10 KiB are noise under the 1 MiB floor: exponent 0."""
    assert estimate.scaling_exponent(SIZES, [1 * KIB, 0, 10 * KIB]) == pytest.approx(0.0, abs=1e-9)


def test_noisy_proportional_peaks_scale_near_one():
    peaks = [s * f for s, f in zip(SIZES, (1.05, 0.97, 1.02))]
    assert estimate.scaling_exponent(SIZES, peaks) == pytest.approx(1.0, abs=0.05)


@pytest.mark.parametrize(
    "sizes, peaks",
    [
        ([24 * MIB], [24 * MIB]),
        ([24 * MIB, 24 * MIB], [24 * MIB, 48 * MIB]),
        ([24 * MIB, 48 * MIB], [24 * MIB, None]),
        ([], []),
    ],
)
def test_fewer_than_two_sizes_give_no_exponent(sizes, peaks):
    assert estimate.scaling_exponent(sizes, peaks) is None


def test_missing_peak_is_skipped():
    assert estimate.scaling_exponent(SIZES, [24 * MIB, None, 96 * MIB]) == pytest.approx(
        1.0, abs=1e-9
    )


# --- verdict.decide --------------------------------------------------------


def trend_dict(values, unit="bytes/repetition") -> dict:
    return {**estimate.trend(values).as_dict(), "unit": unit}


def flat_metrics() -> dict:
    """Metrics of a bounded run, as leakbench.analysis.record builds them."""
    return {
        # TF's creep: 1.4-14 KiB/rep here
        "held_growth": trend_dict(noisy(line(2 * KIB), 4 * KIB, seed=6)),
        "rss_growth": trend_dict(noisy(line(0.0), 32 * KIB, seed=7)),
        "retained_heap": trend_dict(noisy(line(0.0, n=6, base=MIB), 4 * KIB, seed=8)),
        "threads_growth": trend_dict([9] * N, "threads/repetition"),
        "open_files_growth": trend_dict([12] * N, "file descriptors/repetition"),
        "python_objects_growth": trend_dict([40_000] * N, "objects/repetition"),
    }


def test_decide_bounded_is_no_leak():
    assert verdict.decide(["ok"], flat_metrics()) == ("no-leak", [])


def test_decide_leak_via_held_memory():
    metrics = {
        **flat_metrics(),
        "held_growth": trend_dict(noisy(line(2 * HELD_SLOPE_MIN), 8 * KIB, seed=9)),
    }
    assert verdict.decide(["ok"], metrics) == ("leak", ["held"])


def test_held_memory_at_its_threshold_moves_and_just_below_does_not():
    assert verdict.moved(trend_dict(line(1.05 * HELD_SLOPE_MIN)), HELD_SLOPE_MIN)
    assert not verdict.moved(trend_dict(line(0.95 * HELD_SLOPE_MIN)), HELD_SLOPE_MIN)


def test_steady_creep_of_bounded_pipelines_is_below_the_held_threshold():
    """retracing's fix keeps 8-10 KiB/repetition in a series of 48 (TF 2.21), steadily
    (p ~ 1e-9): the trend test passes, the size threshold must not."""
    creep = trend_dict(line(10 * KIB))
    assert creep["p_increasing"] < verdict.TREND_P_MAX
    assert verdict.decide(["ok"], {**flat_metrics(), "held_growth": creep}) == ("no-leak", [])


def test_rss_growth_alone_is_context_not_a_leak_where_held_memory_is_measured():
    """RSS of a fix wanders by MiBs with malloc's free bytes; held memory decides."""
    metrics = {**flat_metrics(), "rss_growth": trend_dict(noisy(line(1 * MIB), 64 * KIB, seed=9))}
    assert verdict.decide(["ok"], metrics) == ("no-leak", [])


def test_rss_decides_where_malloc_counters_are_na():
    metrics = {
        **flat_metrics(),
        "held_growth": None,
        "malloc_heap_unavailable": "libjemalloc is loaded",
        "rss_growth": trend_dict(noisy(line(1 * MIB), 64 * KIB, seed=9)),
    }
    assert verdict.decide(["ok"], metrics) == ("leak", ["rss"])
    assert verdict.memory_basis(metrics).words.startswith("rss (held memory n/a: libjemalloc")
    assert verdict.memory_basis(flat_metrics()).words == "held"
    quiet = {**metrics, "rss_growth": trend_dict(line(0.5 * RSS_SLOPE_MIN))}
    assert verdict.decide(["ok"], quiet) == ("no-leak", [])


def test_a_record_without_held_memory_has_one_memory_basis():
    """glibc's counters are there but held memory has no trend (glibc before mallinfo2, a record
    made before held memory): RSS is the one answer, for the verdict's rules, the record's words,
    and the rate every view shows. (verdict.memory_metric said RSS here and growth_basis "held",
    while the rules let neither decide.)"""
    rss = trend_dict(noisy(line(1 * MIB), 64 * KIB, seed=9))
    metrics = {**flat_metrics(), "rss_growth": rss}
    del metrics["held_growth"]
    basis = verdict.memory_basis(metrics)
    assert basis.metric.key == "rss_growth" and basis.words == "rss (held memory not measured)"
    assert verdict.memory_basis({**metrics, "held_growth": None}) == basis
    assert verdict.memory_rate(metrics) == verdict.rate(rss)
    assert "rss_growth" in verdict.deciding_signals(
        metrics
    ) and "held_growth" not in verdict.deciding_signals(metrics)
    assert verdict.decide(["ok"], metrics) == ("leak", ["rss"])
    assert verdict.memory_basis(flat_metrics()).metric.key == "held_growth"


def test_memray_heap_never_calls_a_leak_alone():
    """A bounded cache whose turnover outlasts the heap pass reads there as growth: the entries
    it evicts were allocated before tracking began (issue: an lru_cache of 512 KiB entries)."""
    heap_only = {
        **flat_metrics(),
        "retained_heap": trend_dict(line(8 * HEAP_SLOPE_MIN, n=6, base=MIB)),
    }
    assert verdict.decide(["ok"], heap_only) == ("no-leak", [])
    both = {**heap_only, "held_growth": trend_dict(line(8 * HELD_SLOPE_MIN))}
    assert verdict.decide(["ok"], both) == ("leak", ["held", "heap"])


def test_decide_leak_via_threads():
    # about 4 threads per live tf.data iterator, one iterator kept per repetition
    metrics = {
        **flat_metrics(),
        "threads_growth": trend_dict(9 + 4 * np.arange(N), "threads/repetition"),
    }
    assert verdict.decide(["ok"], metrics) == ("leak", ["threads"])


def test_decide_threads_one_every_two_repetitions_is_a_leak():
    threads = [9 + i // 2 for i in range(N)]
    assert estimate.trend(threads).slope == pytest.approx(COUNT_SLOPE_MIN)
    metrics = {**flat_metrics(), "threads_growth": trend_dict(threads, "threads/repetition")}
    assert verdict.decide(["ok"], metrics) == ("leak", ["threads"])


def test_decide_leak_via_open_files():
    metrics = {
        **flat_metrics(),
        "open_files_growth": trend_dict(12 + np.arange(N), "file descriptors/repetition"),
    }
    assert verdict.decide(["ok"], metrics) == ("leak", ["open files"])


def test_decide_leak_via_python_objects_alone():
    """tensorflow/tensorflow#37653: objects climb by
    hundreds per repetition while memory barely moves."""
    objects = trend_dict(40_000 + 300 * np.arange(N), "objects/repetition")
    metrics = {**flat_metrics(), "python_objects_growth": objects}
    assert verdict.decide(["ok"], metrics) == ("leak", ["python objects"])


@pytest.mark.parametrize("per_rep, leaks", [(OBJECT_SLOPE_MIN, True), (2, False), (0, False)])
def test_python_objects_threshold(per_rep, leaks):
    """Fixes and controls read 0 objects/repetition; py_function_map on TF 2.21 reads 2."""
    objects = trend_dict(40_000 + per_rep * np.arange(N), "objects/repetition")
    assert (
        verdict.decide(["ok"], {**flat_metrics(), "python_objects_growth": objects})[0] == "leak"
    ) is leaks


def test_python_objects_that_plateau_are_not_a_leak():
    """A cache filled in the first repetitions (a step), then flat: not sustained."""
    objects = [40_000 + min(i, 3) * 500 for i in range(N)]
    assert verdict.decide(
        ["ok"], {**flat_metrics(), "python_objects_growth": trend_dict(objects)}
    ) == ("no-leak", [])


def test_decide_uss_does_not_vote():
    """Only the deciding signals decide; other series are reported, not judged."""
    metrics = {
        **flat_metrics(),
        "uss_growth": trend_dict(line(1 * MIB)),
        "malloc_heap_growth": trend_dict(line(1 * MIB)),
    }
    assert verdict.decide(["ok"], metrics) == ("no-leak", [])


# --- confirmation of marginal leaks ----------------------------------------


def test_every_leak_on_bytes_alone_needs_confirmation_however_clear():
    """A bounded cache of 24 entries grows by one entry every repetition of a first run and of
    the heap pass: two byte signals far past their bars are no better evidence than one."""
    for signals in (["held"], ["held", "heap"], ["rss"]):
        assert looks.needs_confirmation(signals)  # the bars' multiples are not read


# fit_per_batch's leaky side on TensorFlow 2.21.0 (a clean clone's make run), KiB per sample:
# held memory drops 1.3 MiB at its 8th sample; the bytes handed out rise about 10 KiB a sample
WANDERING_HELD = [239241, 239480, 239564, 239606, 239615, 239662]
WANDERING_HELD += [239673, 238357, 239400, 239417, 239466, 239486]
STEADY_ALLOCATED = [218960, 218974, 218988, 218998, 219006, 219020]
STEADY_ALLOCATED += [219027, 219037, 219047, 219055, 219063, 219078]


def test_held_memory_that_wanders_past_the_bar_is_undecided_and_allocated_bytes_settle_it():
    held = trend_dict(np.array(WANDERING_HELD, dtype=float) * KIB)
    allocated = trend_dict(np.array(STEADY_ALLOCATED, dtype=float) * KIB)
    wandering = {**flat_metrics(), "held_growth": held, "allocated_growth": allocated}
    assert verdict.decide(["ok"], wandering) == ("no-leak", [])
    assert held["p_increasing"] >= 0.01 and held["high"] >= HELD_SLOPE_MIN  # could be either
    assert verdict.undecided(wandering) and not verdict.undecided(flat_metrics())
    assert looks.unsettled(wandering, []) is None  # settled by the bytes handed out: no look
    found = decision.decide({"verdict": "no-leak", "signals": [], "metrics": wandering})
    shown = (found["label"], found["signal"], found["source"])
    assert shown == ("allocated bytes", "held", decision.FIRST)
    assert 9 * KIB < found["value"] < found["bar"] == HELD_SLOPE_MIN
    assert found["why"].startswith("held memory had no trend (Mann–Kendall p = 0.")
    assert in_words.words(found) == "no-leak · allocated bytes +10 KiB/rep"
    # the bytes handed out could be growing at the bar too: measure longer
    fast = trend_dict(noisy(line(12 * KIB), 4 * KIB, seed=4))
    assert fast["high"] >= HELD_SLOPE_MIN
    assert looks.unsettled({**wandering, "allocated_growth": fast}, []) == "held"
    # a record from before the bytes handed out were sampled: measure longer
    assert looks.unsettled({**wandering, "allocated_growth": None}, []) == "held"
    # a trend stored without its interval is decided
    bare = {k: v for k, v in held.items() if k != "high"}
    assert not verdict.undecided({**wandering, "held_growth": bare})


def test_a_no_leak_whose_held_memory_rose_in_steps_is_unsettled():
    """One 128 KiB block every 8 repetitions (16 KiB/rep on average): a half of 6 stays flat, so
    the rate reads 0, but the net rise is the leak's."""
    rare = {**flat_metrics(), "held_growth": trend_dict(stepped({4: 128 * KIB}, n=12))}
    assert verdict.decide(["ok"], rare) == ("no-leak", [])
    assert looks.unsettled(rare, []) == "held"
    assert looks.unsettled(flat_metrics(), []) is None
    assert looks.unsettled(rare, ["held"]) is None  # moved: needs_confirmation's
    old = {k: v for k, v in rare["held_growth"].items() if k != "net_rate"}
    assert looks.unsettled({**rare, "held_growth": old}, []) is None  # stored before net_rate


def test_count_signals_and_peaks_never_need_confirmation():
    assert not looks.needs_confirmation(["held", "python objects"])
    assert not looks.needs_confirmation(["held", "threads"])
    assert not looks.needs_confirmation(["peak"])
    assert not looks.needs_confirmation([])


def held_run(values) -> dict:
    """A confirmation run as record.run_entry stores it,
    its held memory `values` (bytes), the rest flat."""
    n = len(values)
    series = {
        name: [0] * n
        for name in (
            "rss_bytes",
            "rss_anon_bytes",
            "uss_bytes",
            "heap_used_bytes",
            "mmap_used_bytes",
            "malloc_used_bytes",
            "pymalloc_used_bytes",
            "allocated_bytes",
            "heap_free_bytes",
            "threads",
            "open_files",
            "python_objects",
        )
    }
    series.update(held_bytes=list(values), gpu_current_bytes=[None] * n)
    return {
        "series": series,
        "malloc_heap_unavailable": None,
        "trim": None,
        "baseline": None,
        "import_baseline": None,
        "heap": None,
        "peak_above_baseline_bytes": None,
        "seconds": {},
    }


def growth_scenario():
    return type("Scenario", (), {"kind": "growth"})()


def decided(decision: looks.Decision) -> tuple:
    return decision.verdict, decision.signals, decision.again


def test_confirmation_reads_the_later_half_of_a_longer_run():
    n = looks.confirmation_reps(12)
    assert n == 36
    steady = noisy(line(1.5 * HELD_SLOPE_MIN, n=n), KIB, seed=1)
    # a creep that levels off: 3 x the bar per repetition for 12 repetitions, then flat
    levelled = np.minimum(line(3 * HELD_SLOPE_MIN, n=n), 3 * HELD_SLOPE_MIN * 12 + BASE)
    assert verdict.moved(trend_dict(levelled[:12]), HELD_SLOPE_MIN)  # a first run of 12 reads leak
    later = protocol.later_metrics(held_run(noisy(levelled, KIB, seed=2)))
    found = looks.confirm(["held"], "ok", later, flat_metrics(), n)
    assert decided(found)[:2] == ("no-leak", []) and not found.extend
    assert "stopped growing" in found.why
    later = protocol.later_metrics(held_run(steady))
    assert len(looks.later_half(list(steady))) == 18
    found = looks.confirm(["held"], "ok", later, flat_metrics(), n)
    assert decided(found) == ("leak", ["held"], ["held"]) and "grew steadily" in found.why


def test_confirmation_keeps_only_signals_that_moved_twice_and_says_why_it_could_not():
    held_only = {**flat_metrics(), "held_growth": trend_dict(line(3 * HELD_SLOPE_MIN, n=18))}
    first = flat_metrics()
    found = looks.confirm(["held", "heap"], "ok", held_only, first)
    assert decided(found) == ("leak", ["held", "heap"], ["held"])  # the heap beside held memory
    found = looks.confirm(["held", "heap"], "ok", flat_metrics(), first)
    assert decided(found)[:2] == ("no-leak", [])  # never the heap alone
    # grew until killed
    assert decided(looks.confirm(["held"], "over-cap", None, first))[:2] == ("leak", ["held"])
    assert looks.confirm(["held"], "hang", None, first).verdict == "hang"  # never a no-leak
    assert looks.confirm(["held"], "error", None, first).verdict == "error"


def stepped(steps: dict, n: int = 18, sd: float = KIB, seed: int = 3) -> np.ndarray:
    """A flat, noisy held series of n repetitions that rises by steps[i] bytes at repetition i."""
    rise = np.zeros(n)
    for at, size in steps.items():
        rise[at:] += size
    return noisy(line(0.0, n=n), sd, seed) + rise


def test_rises_are_measured_per_repetition():
    found = estimate.trend(line(16 * KIB, n=18))
    assert found.median_rise == pytest.approx(16 * KIB)
    assert found.top_rises_share == pytest.approx(estimate.STEP_RISES / 17)
    assert estimate.trend(line(0.0)).top_rises_share == 1.0  # no rise: nothing spread
    assert estimate.trend(line(-KIB)).top_rises_share == 1.0


def extension_run(malloc: np.ndarray, held: np.ndarray | None = None, pymalloc=None):
    """An extension run's later-half metrics and envelope (protocol.take), from its series:
    malloc's bytes in use, held memory (default: malloc's), pymalloc's (default: flat)."""
    run = held_run(held if held is not None else malloc)
    small = np.zeros(len(malloc)) if pymalloc is None else np.asarray(pymalloc)
    run["series"]["malloc_used_bytes"] = list(malloc)
    run["series"]["pymalloc_used_bytes"] = list(small)
    run["series"]["allocated_bytes"] = list(np.asarray(malloc) + small)
    later = protocol.later_metrics(run)
    return later, protocol.envelope_of(run, later)


EXTENDED = looks.extension_reps(12)


def test_a_creep_in_a_few_steps_is_measured_longer_and_turned_away():
    """oversized_prefetch's fix in a quiet CI run: held memory rose in three steps in its
    confirmation (+2,049, +4,097 and +2,304 KiB), a block malloc mapped whole touched deeper, with
    malloc's bytes in use flat; the steps passed the bar in both halves (docs/flaky.md). It rose
    without deciding: measured longer, malloc's lows stay level."""
    later = trend_dict(stepped({4: 2049 * KIB, 9: 4097 * KIB, 14: 2304 * KIB}))
    assert verdict.moved(later, HELD_SLOPE_MIN)  # the bar alone reads leak
    assert later["median_rise"] < KIB and later["top_rises_share"] > 0.99
    assert not verdict.steady(later, HELD_SLOPE_MIN)
    metrics = {**flat_metrics(), "held_growth": later}
    assert verdict.steady_signals(metrics) == []
    found = looks.confirm(["held"], "ok", metrics, flat_metrics(), 36)
    assert found.extend and "in lumps" in found.why
    # the extension: held memory goes on stepping now and then, malloc in use stays flat
    held = stepped({10: 2 * MIB, 30: 4 * MIB, 50: 2 * MIB, 65: 2 * MIB}, n=EXTENDED)
    later, envelope = extension_run(noisy(line(0.0, n=EXTENDED), KIB, seed=9), held)
    found = extension.extended(["held"], "ok", later, envelope, flat_metrics(), EXTENDED)
    assert decided(found) == ("no-leak", [], []) and "the growth stopped" in found.why


def lumpy(rate: float, growth: float = 1.125, n: int = EXTENDED) -> np.ndarray:
    """malloc's bytes in use of a container that grows by `rate` bytes per repetition and
    over-allocates by `growth` (CPython's list and bytearray: about 1/8)."""
    used, capacity, out = 0.0, 0.0, []
    for _ in range(n):
        used += rate
        if used > capacity:
            capacity = used * growth
        out.append(BASE + capacity)
    return np.asarray(out)


@pytest.mark.parametrize(
    "malloc",
    [
        # each run is a fresh process: the container is as old as the run (3 warm-ups before)
        lumpy(16 * KIB, n=EXTENDED + 3)[3:],  # lumps of up to 150 KiB
        lumpy(16 * KIB, growth=1.25, n=EXTENDED + 3)[3:],  # numpy grown by a quarter
        stepped({i: 128 * KIB for i in range(3, EXTENDED, 8)}, n=EXTENDED),  # rare steps
    ],
)
def test_a_leak_in_lumps_is_kept_by_its_extension(malloc):
    later, envelope = extension_run(malloc, stepped({}, n=EXTENDED))
    found = extension.extended(["held"], "ok", later, envelope, flat_metrics(), EXTENDED)
    assert decided(found)[:2] == ("leak", ["held"]) and "in every window" in found.why


def python_dict(n: int = EXTENDED) -> tuple[np.ndarray, np.ndarray]:
    """python-dict at 16 KiB/rep in a fresh process, as measured over 80 repetitions: pymalloc's
    bytes rise 8.25 KiB/rep (the int keys), malloc's only as the table doubles (+148 KiB at
    repetition 20, +288 KiB at 40: ever rarer lumps). Returns (malloc, pymalloc), bytes."""
    malloc = stepped({20: 148 * KIB, 40: 288 * KIB}, n=n, sd=64)
    return malloc, BASE / 4 + 8.25 * KIB * np.arange(n)


def test_a_leak_in_cpythons_arenas_and_in_lumps_is_kept_by_its_extension():
    """python-dict at 16 KiB: the lows of malloc and pymalloc together rise in both windows
    (the ints) and by the bar over both (the table); malloc's alone would rise once."""
    malloc, pymalloc = python_dict(EXTENDED + 3)
    later, envelope = extension_run(malloc[3:], pymalloc=pymalloc[3:])
    assert envelope["series"] == "allocated_bytes"
    assert verdict.steady_signals(later) == []  # under the bar in its rate: not moved
    found = extension.extended(["held"], "ok", later, envelope, flat_metrics(), EXTENDED)
    assert decided(found)[:2] == ("leak", ["held"]) and "in every window" in found.why
    later, envelope = extension_run(malloc[3:])  # the ints unseen: a lump in one window only
    found = extension.extended(["held"], "ok", later, envelope, flat_metrics(), EXTENDED)
    assert decided(found)[:2] == ("no-leak", []) and "the growth stopped" in found.why


def test_a_later_half_that_grows_on_under_the_bar_is_measured_longer():
    """python-dict's confirmation: its later half rose +8 KiB/rep steadily (p = 2e-16), under
    the bar, between the table's lumps: measured longer. A creep at a quarter of the bar, or a
    flat later half, stopped growing."""
    n = looks.confirmation_reps(12)
    for rate, extend in ((8.25 * KIB, True), (HELD_SLOPE_MIN / 4, False), (0.0, False)):
        held = noisy(line(rate, n=n), KIB / 4, seed=6)
        later = protocol.later_metrics(held_run(held))
        found = looks.confirm(["held"], "ok", later, flat_metrics(), n)
        assert found.extend is extend, (rate, found.why)
        assert ("still grew, under the bar" in found.why) is extend


def test_a_creep_under_the_bar_is_turned_away_by_its_extension():
    """fit_per_batch's leaky side on 2.21.0, measured over 90 repetitions: the bytes malloc and
    pymalloc handed out rose about 6 KiB/rep, at half the bar in each window, never at the bar
    over both: no-leak, however long it is measured."""
    allocated = noisy(line(6.5 * KIB, n=EXTENDED), 2 * KIB, seed=8)
    later, envelope = extension_run(allocated, stepped({}, n=EXTENDED))
    found = extension.extended(["held"], "ok", later, envelope, flat_metrics(), EXTENDED)
    # it grew, under the bar: the words say so, with the rate and the bar, never "stopped"
    assert decided(found)[:2] == ("no-leak", [])
    assert "under the bar of +13 KiB/rep" in found.why and "stopped" not in found.why
    assert "(+6 KiB/rep)" in found.why or "(+7 KiB/rep)" in found.why


@pytest.mark.parametrize(
    "malloc",
    [
        np.minimum(line(512 * KIB, n=EXTENDED), BASE + 21 * 512 * KIB),  # a cache of 24 filled
        BASE + 64 * KIB * (np.arange(EXTENDED) % 8),  # a sawtooth, cleared every 8
        stepped({40: 4 * MIB}, n=EXTENDED),  # a one-off jump in the later half
    ],
)
def test_a_cache_a_sawtooth_or_a_jump_is_turned_away_by_its_extension(malloc):
    later, envelope = extension_run(malloc, stepped({}, n=EXTENDED))
    found = extension.extended(["held"], "ok", later, envelope, flat_metrics(), EXTENDED)
    assert decided(found)[:2] == ("no-leak", [])


@pytest.mark.parametrize(
    "series",
    [
        noisy(line(16 * KIB, n=18), 4 * KIB, seed=4),  # steady: median rise 16 KiB
        stepped({i: 64 * KIB for i in range(2, 18, 4)}),  # 64 KiB every 4th: 4 steps
        stepped({i: 32 * KIB for i in range(1, 18, 2)}),  # 32 KiB every 2nd repetition
    ],
)
def test_a_leak_spread_over_its_repetitions_is_kept(series):
    later = {**flat_metrics(), "held_growth": trend_dict(series)}
    assert verdict.moved(later["held_growth"], HELD_SLOPE_MIN)
    found = looks.confirm(["held"], "ok", later, flat_metrics(), 36)
    assert decided(found) == ("leak", ["held"], ["held"])


def test_a_leak_in_three_steps_or_fewer_is_measured_longer():
    """A leak of one 256 KiB block every 6 repetitions rises 3 times in the later half of 18,
    like a creep: not steady, so it is measured longer instead of read as a no-leak."""
    later = trend_dict(stepped({i: 256 * KIB for i in range(3, 18, 6)}))
    assert verdict.moved(later, HELD_SLOPE_MIN) and not verdict.steady(later, HELD_SLOPE_MIN)
    found = looks.confirm(["held"], "ok", {**flat_metrics(), "held_growth": later}, {}, 36)
    assert found.extend


def test_a_trend_stored_before_rises_were_measured_counts_as_steady():
    old = {k: v for k, v in trend_dict(stepped({9: 4 * MIB})).items() if "rise" not in k}
    assert verdict.steady(old, HELD_SLOPE_MIN)


def test_a_leak_turned_away_by_its_confirmation_can_still_read_fragmentation():
    """shuffle_fragmentation on TF 2.16.2: held memory rose 1 MiB once in the first run, which its
    confirmation turned away; malloc kept 342 of the 350 MiB held as free bytes, and the trim gave
    back 287: the first run reads as if nothing had moved."""
    first = {
        **flat_metrics(),
        "trim_returned_bytes": 287 * MIB,
        "rss_held_bytes": 350 * MIB,
        "rss_growth_bytes": -99 * MIB,
        "malloc_free_growth_bytes": -101 * MIB,
        "malloc_free_held_bytes": 342 * MIB,
        "malloc_heap_unavailable": None,
    }
    found = looks.confirm(["held"], "ok", flat_metrics(), first)
    assert decided(found) == ("fragmentation", [], [])


def test_decide_leak_via_peak_scaling():
    metrics = {
        **flat_metrics(),
        "peak_scaling": {
            "sizes": SIZES,
            "peaks_bytes": SIZES,
            "exponent": estimate.scaling_exponent(SIZES, SIZES),
        },
    }
    assert verdict.decide(["ok", "ok", "ok"], metrics) == ("leak", ["peak"])


def test_decide_bounded_peak_is_no_leak():
    peaks = [40 * MIB] * 3
    metrics = {
        **flat_metrics(),
        "peak_scaling": {
            "sizes": SIZES,
            "peaks_bytes": peaks,
            "exponent": estimate.scaling_exponent(SIZES, peaks),
        },
    }
    assert verdict.decide(["ok", "ok", "ok"], metrics) == ("no-leak", [])


def test_decide_reports_every_signal_that_moved_in_order():
    metrics = {
        "held_growth": trend_dict(line(1 * MIB)),
        "rss_growth": trend_dict(line(1 * MIB)),
        "retained_heap": trend_dict(line(1 * MIB, n=6)),
        "threads_growth": trend_dict(4 * np.arange(N), "threads/repetition"),
        "open_files_growth": trend_dict(np.arange(N), "file descriptors/repetition"),
        "python_objects_growth": trend_dict(100 * np.arange(N), "objects/repetition"),
        "peak_scaling": {"sizes": SIZES, "peaks_bytes": SIZES, "exponent": 1.0},
    }
    assert verdict.decide(["ok"] * 3, metrics) == (
        "leak",
        ["held", "heap", "threads", "open files", "python objects", "peak"],
    )


def test_decide_missing_metrics_are_no_signal():
    metrics = {
        "held_growth": None,
        "rss_growth": None,
        "retained_heap": None,
        "threads_growth": None,
    }
    assert verdict.decide(["ok"], metrics) == ("no-leak", [])


@pytest.mark.parametrize(
    "statuses, expected",
    [
        (["over-cap"], "over-cap"),
        (["hang"], "hang"),
        (["error"], "error"),
        (["ok", "over-cap"], "over-cap"),
        (["ok", "hang", "error"], "hang"),
    ],
)
def test_decide_returns_a_failed_status_as_is(statuses, expected):
    # The signals of a finished measurement are kept (a hang in teardown after a leak).
    leaking = {"held_growth": trend_dict(line(1 * MIB))}
    assert verdict.decide(statuses, leaking) == (expected, ["held"])
    assert verdict.decide(statuses, {}) == (expected, [])
    assert expected in verdict.VERDICTS


# --- verdict.peak_scales ---------------------------------------------------


def test_peak_scales_needs_both_exponent_and_rise():
    small = [4 * MIB, 8 * MIB, 16 * MIB]  # proportional, but rises by only 12 MiB
    assert estimate.scaling_exponent(SIZES, small) == pytest.approx(1.0)
    assert not verdict.peak_scales(1.0, small)
    big_flat = [200 * MIB, 220 * MIB, 240 * MIB]  # rises by 40 MiB, but barely scales
    assert estimate.scaling_exponent(SIZES, big_flat) < PEAK_EXPONENT_MIN
    assert not verdict.peak_scales(estimate.scaling_exponent(SIZES, big_flat), big_flat)
    assert verdict.peak_scales(1.0, SIZES)


def test_peak_scales_thresholds_are_inclusive():
    rise = [10 * MIB, 10 * MIB + PEAK_RISE_MIN]
    assert verdict.peak_scales(PEAK_EXPONENT_MIN, rise)
    assert not verdict.peak_scales(PEAK_EXPONENT_MIN - 1e-9, rise)
    assert not verdict.peak_scales(PEAK_EXPONENT_MIN, [10 * MIB, 10 * MIB + PEAK_RISE_MIN - 1])


def test_peak_scales_rise_is_smallest_to_largest_size():
    """The rise is from the first (smallest) size to the last, not max - min."""
    assert not verdict.peak_scales(1.0, [100 * MIB, 10 * MIB, 60 * MIB])


@pytest.mark.parametrize(
    "exponent, peaks",
    [
        (None, SIZES),
        (1.0, [24 * MIB]),
        (1.0, [None, None, 96 * MIB]),
        (1.0, []),
    ],
)
def test_peak_scales_without_enough_data_is_false(exponent, peaks):
    assert not verdict.peak_scales(exponent, peaks)


def test_peak_scales_skips_missing_peaks():
    assert verdict.peak_scales(1.0, [24 * MIB, None, 96 * MIB])


# --- verdict.rate: growth must hold in both halves -------------------------


def test_one_step_of_held_memory_is_not_a_leak():
    """Measured on stateful_map's fix (TF 2.21, two children at once): held memory crept
    2 KiB/repetition and stepped once by ~1 MiB; the whole series' slope read 110 KiB."""
    series = line(2 * KIB) + np.where(np.arange(N) >= 6, 1 * MIB, 0)
    found = trend_dict(series)
    assert found["slope"] > 2 * HELD_SLOPE_MIN and found["p_increasing"] < verdict.TREND_P_MAX
    assert verdict.rate(found) < HELD_SLOPE_MIN
    assert verdict.decide(["ok"], {**flat_metrics(), "held_growth": found}) == ("no-leak", [])


def test_growth_in_one_half_only_is_not_a_leak():
    """unbounded_interleave's fix under load: fast in the first half, slow in the second."""
    first = 151 * KIB * np.arange(6)
    series = BASE + np.concatenate([first, first[-1] + 8 * KIB * np.arange(1, 7)])
    found = trend_dict(series)
    assert found["second_half"] < HELD_SLOPE_MIN <= found["slope"]
    assert not verdict.moved(found, HELD_SLOPE_MIN)


def test_a_leak_at_twice_the_threshold_moves_in_every_half():
    found = trend_dict(noisy(line(2 * HELD_SLOPE_MIN), 4 * KIB, seed=11))
    assert verdict.rate(found) >= HELD_SLOPE_MIN and verdict.moved(found, HELD_SLOPE_MIN)


def test_the_number_beside_a_verdict_names_the_look_it_came_from():
    """record["decision"]["source"] is the longer look whose later half gave the number: an
    extension's number read "confirmation" before."""
    first = {"verdict": "leak", "kind": "growth", "signals": ["held"], "metrics": flat_metrics()}

    def look(reps: int, verdict_signals: list[str]) -> dict:
        steady = noisy(line(1.5 * HELD_SLOPE_MIN, n=reps), KIB, seed=1)
        return {"status": "ok", "signals": verdict_signals, "why": "-", "run": held_run(steady)}

    confirmed = {**first, "confirmation": look(looks.confirmation_reps(12), ["held"])}
    extended = {**confirmed, "extension": look(looks.extension_reps(12), ["held"])}
    for rec, source in ((first, "first run"), (confirmed, "confirmation"), (extended, "extension")):
        found = protocol.with_decision(rec)["decision"]
        assert (found["signal"], found["source"]) == ("held", source)
        assert found["source"] in decision.SOURCES
    # a no-leak's number (its memory basis) from the extension that turned the leak away
    turned = {**extended, "verdict": "no-leak", "signals": []}
    turned["extension"] = {**turned["extension"], "signals": []}
    assert protocol.with_decision(turned)["decision"]["source"] == "extension"


def test_committed_words_say_stopped_only_where_the_numbers_levelled(committed_results):
    """Every committed record's longer looks: "the growth stopped" only where the extension's
    last window rose by less than looks.LEVELLED per repetition, "stopped growing" only where
    the confirmation's later half rose by less (its rate reads +0 KiB/rep or below). The text
    shows whole KiB: half a KiB of rounding is allowed, no more."""
    rises = re.compile(r"rose ([\d,.\- and]+) KiB in its \d+ windows of (\d+) repetitions")
    net = re.compile(r"stopped growing: ([+-][\d,]+) KiB/rep")
    records = 0
    for machine in store.machines(committed_results):
        for path in store.available(committed_results, machine).values():
            for rec in store.read_records(path):
                records += 1
                for key in ("confirmation", "extension"):
                    why = (rec.get(key) or {}).get("why") or ""
                    if "the growth stopped" in why:
                        found = rises.search(why)
                        assert found, why
                        last = float(found.group(1).split(" and ")[-1].replace(",", ""))
                        assert last * KIB < looks.LEVELLED * int(found.group(2)) + KIB / 2, why
                    if "stopped growing" in why:
                        found = net.search(why)
                        assert found and int(found.group(1).replace(",", "")) <= 0, why
    assert records > 0, "no committed record read"
