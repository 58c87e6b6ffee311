"""The one registry of what leakbench measures: the series sampled after every repetition, the
metrics a record computes from them, and every bar the verdict compares with.

Every other module reads it: the probes sample SERIES, the record computes the trend of each METRICS
entry that names a series, the verdict takes its deciding signals and bars from it, and the views
(run table, `check`, compare and matrix, the site, calibration, asv's track_ benchmarks) take from
it which metrics they show and in which order, their labels, short names, units and help texts, and
which need glibc's counters. Adding a signal is one entry here. Why each bar has its value:
docs/verdicts.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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

# Every bar of the verdict, a slope's per repetition (docs/verdicts.md says why each has its value)
HELD_SLOPE_MIN = 13 * KIB  # held memory: the memory signal the verdict rests on
RSS_SLOPE_MIN = 256 * KIB  # RSS: decides only where held memory is n/a (another allocator)
HEAP_SLOPE_MIN = 64 * KIB  # memray's heap: few repetitions in its pass
GPU_SLOPE_MIN = 64 * KIB  # the GPU allocator's bytes in use (untested: no GPU here)
COUNT_SLOPE_MIN = 0.5  # threads, open files: exact counts
OBJECT_SLOPE_MIN = 8  # Python objects: exact, but a bounded pipeline may keep a few
TREND_P_MAX = 0.01  # a slope counts only where the one-sided Mann–Kendall p is below this
PEAK_RISE_MIN = 32 * MIB  # the peak must rise this much between the smallest and largest size
PEAK_EXPONENT_MIN = 0.5  # ...and k in peak ∝ size^k reach this, for a peak pair to leak
TRIM_SHARE_MIN = 0.5  # fragmentation: the share of RSS malloc_trim gives back or malloc keeps free
TRIM_HELD_MIN = 32 * MIB  # fragmentation: the least RSS growth, or trim, that counts
FREE_HELD_MIN = 96 * MIB  # free bytes above the process before setup (docs/fragmentation.md)
# A leak spreads its growth over the repetitions; a creep in a few steps (a block malloc mapped
# whole and touched deeper later, a buffer AUTOTUNE widens) puts it in a few rises. `steady`
# reads both numbers (docs/verdicts.md, "Steady growth").
STEADY_RISE_SHARE = 0.5
STEP_SHARE_MAX = 0.9
# A change in held growth between two builds that `leakbench compare` counts: a fix's creep
# moves about this much between runs of one build (docs/measurements.md, "Held memory").
HELD_COMPARE_FLOOR = 16 * KIB
# malloc_trim's give-back that compare counts and the site calls a swing; every pair but
# shuffle_fragmentation gives back at most 21 MiB, 2.6x it
# (docs/measurements.md, "psutil and glibc malloc")
TRIM_FLOOR = 8 * MIB


def rate(trend: dict) -> float:
    """A trend's sustained rate of growth, in its unit per repetition: the least of the slope of
    the whole series and of each half (a step lifts one half only). Every slope bar above is
    compared with it (leakbench.analysis.verdict.moved, which re-exports it as verdict.rate). It
    lives in this base module so that the measured child counts Python types by the same rule
    (leakbench.engine.pytypes.type_rate) without importing the analysis (docs/layout.md)."""
    return min(trend["slope"], trend["first_half"], trend["second_half"])


@dataclass(frozen=True)
class Metric:
    """One number of record["metrics"], and how every view shows it. key: its key in
    record["metrics"]. unit: as stored ("bytes/repetition" for a trend, "bytes" for a level). shown,
    scale, digits: the display unit, the divisor into it, the decimals. series: the sample series it
    is the trend of (None: computed otherwise). signal: its name in record["signals"] when it
    decides a verdict, with threshold (in `unit`); fallback: it decides only in held memory's place,
    where glibc's counters are n/a. compare_floor: the smallest change `leakbench compare` counts
    (None: not compared). asv: the name of its asv track_ benchmark (None: not tracked). check:
    shown by `leakbench check`. help: what its growth means in your own pipeline. short: its name
    where a view uses a short one (a column head, a matrix cell's evidence, the memory chart).
    mallinfo2: computed from glibc malloc's counters, so n/a under another allocator. views: the
    views that show it, each with its place there (see TABLE above)."""

    key: str
    label: str
    unit: str
    shown: str
    scale: float
    digits: int
    help: str
    series: str | None = None
    signal: str | None = None
    threshold: float | None = None
    fallback: bool = False
    compare_floor: float | None = None
    asv: str | None = None
    check: bool = False
    short: str | None = None
    mallinfo2: bool = False
    views: dict = field(default_factory=dict, compare=False)

    def display(self, value: float | None, sign: bool = False, fit: bool = False) -> str:
        """value in the display unit ("—" for None), e.g. 65536 bytes/repetition -> "64". fit: the
        decimals its size needs, not `digits` (none from 100, one from 10, else two: compare's)."""
        if value is None:
            return "—"
        v = value / self.scale
        places = (0 if abs(v) >= 100 else 1 if abs(v) >= 10 else 2) if fit else self.digits
        return f"{v:{'+' if sign else ''},.{places}f}"

    @property
    def per_repetition(self) -> bool:
        """True for a rate per repetition (shown with its sign), False for a level (bytes, MiB)."""
        return self.unit.endswith("/repetition")

    @property
    def counts(self) -> bool:
        """True for a count of things (threads, objects): exact, so a move is never marginal."""
        return not self.unit.startswith("bytes")


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
# (leakbench.analysis.verdict.memory_basis); memray's heap; the peak; what malloc_trim gave back
# (fragmentation); and the signals `leakbench check` reads evidence for (leakbench.check.diagnosis).
HELD = BY_KEY["held_growth"]
RSS = BY_KEY["rss_growth"]
MALLOC = BY_KEY["malloc_heap_growth"]
ALLOCATED = BY_KEY["allocated_growth"]  # what an extension reads (leakbench.analysis.looks)
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
