"""The one registry of what leakbench measures: the series sampled after every repetition, the
metrics a record computes from them, and every bar the verdict compares with.

Every other module reads it: the probes sample SERIES, the record computes the trend of each METRICS
entry that names a series, the verdict takes its deciding signals and bars from it, and the views
(run table, `check`, compare and matrix, the site, calibration, asv's track_ benchmarks) take from
it which metrics they show and in which order, their labels, short names, units and help texts, and
which need glibc's counters. Adding a signal is one entry here. The bars are leakbench.bars (why
each has its value: docs/verdicts.md), the type of an entry leakbench.metric_type.Metric.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Every bar, re-exported: the verdict and the online judge read them here with the metrics
from leakbench.bars import (  # noqa: F401
    COUNT_SLOPE_MIN,
    FREE_HELD_MIN,
    GPU_SLOPE_MIN,
    HEAP_SLOPE_MIN,
    HELD_COMPARE_FLOOR,
    HELD_SLOPE_MIN,
    OBJECT_SLOPE_MIN,
    PEAK_EXPONENT_MIN,
    PEAK_RISE_MIN,
    RSS_SLOPE_MIN,
    STEADY_RISE_SHARE,
    STEP_SHARE_MAX,
    TREND_P_MAX,
    TRIM_FLOOR,
    TRIM_HELD_MIN,
    TRIM_SHARE_MIN,
)
from leakbench.metric_type import Metric

# The series and the views (leakbench.series), re-exported: every module reads the registry here
from leakbench.series import (  # noqa: F401
    CALIBRATION,
    COUNTS,
    LESSON,
    MATRIX,
    MEMORY,
    SERIES,
    SERIES_BY_NAME,
    SERIES_UNITS,
    TABLE,
    WIDE,
    Series,
)
from leakbench.units import KIB, MIB


def rate(trend: dict) -> float:
    """A trend's sustained rate of growth, in its unit per repetition: the least of the slope of
    the whole series and of each half (a step lifts one half only). Every slope bar
    (leakbench.bars) is compared with it (leakbench.analysis.judge.verdict.moved, which
    re-exports it as verdict.rate). It lives in this base module so that the measured child
    counts Python types by the same rule (leakbench.engine.pytypes.type_rate) without importing
    the analysis (docs/layout.md)."""
    return min(trend["slope"], trend["first_half"], trend["second_half"])


METRICS = (
    Metric(
        "held_growth",
        "held memory",
        "bytes/repetition",
        "KiB/rep",
        KIB,
        0,
        "held memory (RSS less malloc's free bytes) grows: something keeps what it allocates",
        series="held_bytes",
        signal="held",
        threshold=HELD_SLOPE_MIN,
        compare_floor=HELD_COMPARE_FLOOR,
        asv="held_growth",
        check=True,
        mallinfo2=True,
        views={WIDE: 1, LESSON: 2, CALIBRATION: 1},
    ),
    Metric(
        "rss_growth",
        "RSS",
        "bytes/repetition",
        "KiB/rep",
        KIB,
        0,
        "resident memory (RSS) grows with every repetition",
        series="rss_bytes",
        signal="rss",
        threshold=RSS_SLOPE_MIN,
        fallback=True,
        compare_floor=RSS_SLOPE_MIN / 2,
        asv="rss_growth",
        check=True,
        views={WIDE: 2, LESSON: 3, CALIBRATION: 2},
    ),
    Metric(
        "uss_growth",
        "USS",
        "bytes/repetition",
        "KiB/rep",
        KIB,
        0,
        "memory unique to the process grows",
        series="uss_bytes",
        check=True,
    ),
    Metric(
        "malloc_heap_growth",
        "malloc in use",
        "bytes/repetition",
        "KiB/rep",
        KIB,
        0,
        "the bytes glibc malloc has in use grow: memory is allocated and still referenced",
        series="malloc_used_bytes",
        compare_floor=RSS_SLOPE_MIN / 2,
        asv="malloc_heap_growth",
        short="malloc",
        mallinfo2=True,
        views={WIDE: 3, LESSON: 4, MATRIX: 1},
    ),
    Metric(
        "allocated_growth",
        "allocated bytes",
        "bytes/repetition",
        "KiB/rep",
        KIB,
        0,
        "the bytes malloc and CPython's small-object allocator have handed out grow",
        series="allocated_bytes",
        mallinfo2=True,
    ),
    Metric(
        "heap_used_growth",
        "malloc heap in use",
        "bytes/repetition",
        "KiB/rep",
        KIB,
        0,
        "the bytes in use in malloc's heap grow",
        series="heap_used_bytes",
        check=True,
        mallinfo2=True,
    ),
    Metric(
        "retained_heap",
        "memray heap",
        "bytes/repetition",
        "KiB/rep",
        KIB,
        0,
        "memray's retained heap grows: allocations stay alive",
        signal="heap",
        threshold=HEAP_SLOPE_MIN,
        compare_floor=HEAP_SLOPE_MIN / 2,
        asv="retained_heap",
        check=True,
        short="heap",
        views={WIDE: 5, LESSON: 5, MEMORY: 5, CALIBRATION: 3},
    ),
    Metric(
        "threads_growth",
        "threads",
        "threads/repetition",
        "/rep",
        1.0,
        1,
        "the thread count grows: live iterators (each holds its own threads) are never freed",
        series="threads",
        signal="threads",
        threshold=COUNT_SLOPE_MIN,
        compare_floor=COUNT_SLOPE_MIN / 2,
        asv="threads",
        check=True,
        views={WIDE: 6, LESSON: 6},
    ),
    Metric(
        "open_files_growth",
        "open files",
        "file descriptors/repetition",
        "/rep",
        1.0,
        1,
        "open file descriptors grow: readers are never closed",
        series="open_files",
        signal="open files",
        threshold=COUNT_SLOPE_MIN,
        check=True,
    ),
    Metric(
        "python_objects_growth",
        "Python objects",
        "objects/repetition",
        "/rep",
        1.0,
        0,
        "Python objects grow: references are kept across repetitions",
        series="python_objects",
        signal="python objects",
        threshold=OBJECT_SLOPE_MIN,
        compare_floor=OBJECT_SLOPE_MIN / 2,
        asv="python_objects",
        check=True,
        views={WIDE: 7},
    ),
    Metric(
        "gpu_memory_growth",
        "GPU allocator in use",
        "bytes/repetition",
        "KiB/rep",
        KIB,
        0,
        "the GPU allocator's bytes in use grow: device tensors are kept across repetitions",
        series="gpu_current_bytes",
        signal="gpu",
        threshold=GPU_SLOPE_MIN,
        check=True,
    ),
    Metric(
        "peak_above_baseline_bytes",
        "peak above baseline",
        "bytes",
        "MiB",
        MIB,
        1,
        "the peak RSS (VmHWM) above the process before setup",
        compare_floor=PEAK_RISE_MIN / 2,
        asv="peak_above_baseline",
        short="peak",
        views={TABLE: 1, LESSON: 1},
    ),
    Metric(
        "trim_returned_bytes",
        "returned by malloc_trim",
        "bytes",
        "MiB",
        MIB,
        1,
        "RSS malloc_trim gave back after the measured repetitions: freed memory glibc had kept",
        compare_floor=TRIM_FLOOR,
        asv="trim_returned",
        short="trim",
        views={WIDE: 4, MATRIX: 2},
    ),
    Metric(
        "seconds_per_repetition",
        "seconds",
        "seconds/repetition",
        "s/rep",
        1.0,
        2,
        "wall time of one measured repetition",
        compare_floor=0.05,
        asv="seconds_per_repetition",
    ),
)
BY_KEY = {m.key: m for m in METRICS}
BY_SIGNAL = {m.signal: m for m in METRICS if m.signal}
# The other numbers of record["metrics"] (leakbench.analysis.record computes them), in bytes or
# None, that no view shows: key -> what it is. The first four are verdict.fragmented's inputs.
LEVELS = {
    "rss_growth_bytes": "RSS at the last sample less the baseline's",
    "malloc_free_growth_bytes": "malloc's free bytes at the last sample less the baseline's",
    "rss_held_bytes": "RSS just before malloc_trim less the import baseline's",
    "malloc_free_held_bytes": "malloc's free bytes at the last sample less the import baseline's",
    "heap_high_water_mark_bytes": "memray's peak over the heap pass",
    "gpu_peak_bytes": "the GPU allocator's peak over the measured repetitions",
}
# The metrics a rule or view names on its own: held memory and RSS, the memory a verdict rests on
# (analysis.judge.verdict.memory_basis); memray's heap; the peak; what malloc_trim gave back
# (fragmentation); and the signals `leakbench check` reads evidence for (leakbench.check.diagnosis).
HELD = BY_KEY["held_growth"]
RSS = BY_KEY["rss_growth"]
MALLOC = BY_KEY["malloc_heap_growth"]
ALLOCATED = BY_KEY["allocated_growth"]  # what an extension reads (leakbench.analysis.judge.looks)
HEAP = BY_KEY["retained_heap"]
PEAK = BY_KEY["peak_above_baseline_bytes"]
TRIM = BY_KEY["trim_returned_bytes"]
THREADS = BY_KEY["threads_growth"]
OPEN_FILES = BY_KEY["open_files_growth"]
OBJECTS = BY_KEY["python_objects_growth"]
GPU = BY_KEY["gpu_memory_growth"]


def series_in(view: str) -> tuple[Series, ...]:
    """The sample series a view shows (TABLE and the others above), in its order."""
    return tuple(sorted((s for s in SERIES if view in s.views), key=lambda s: s.views[view]))


def metrics_in(view: str) -> tuple[Metric, ...]:
    """The metrics a view shows (TABLE and the others above), in its order."""
    return tuple(sorted((m for m in METRICS if view in m.views), key=lambda m: m.views[view]))


# The one signal that is no trend: the peak above baseline scaling with the size parameter.
PEAK_SIGNAL = "peak"
PEAK_HELP = (
    "the peak above baseline scales with the size parameter: memory is bounded per run "
    "but proportional to the data, so a larger dataset runs out of memory"
)


def signal_help(signal: str) -> str:
    """What a signal name of record["signals"] means in your own pipeline ("" if unknown)."""
    found = BY_SIGNAL.get(signal)
    return PEAK_HELP if signal == PEAK_SIGNAL else found.help if found else ""


def value(rec: Mapping[str, Any] | None, key: str) -> float | None:
    """A metric of a record as a number (a trend's Theil–Sen slope), None if absent."""
    found = ((rec or {}).get("metrics") or {}).get(key)
    found = found.get("slope") if isinstance(found, dict) else found
    return None if found is None else float(found)
