"""The series leakbench samples after every repetition, and the views that show them.

Part of the registry (leakbench.metrics, which re-exports every name here): the probes sample
SERIES (leakbench.engine.probes), a record keeps one list per series (run["series"]), and the
metrics of leakbench.metrics are trends of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The views that show a subset of the registry, by name. A Series or Metric lists the ones that
# show it in `views`, each with its place there (left to right, or first drawn first), so that a
# view asks the registry (series_in, metrics_in) instead of listing names of its own.
TABLE = "table"  # the run table's default columns (its short name heads them)
WIDE = "wide"  # what `leakbench run --wide` and --format markdown add after them
LESSON = "lesson"  # a site lesson's table per TF version
MATRIX = "matrix"  # a matrix cell: the evidence it adds for leak against fragmentation
MEMORY = "memory"  # the site's memory decomposition chart (by short name: colours, CSS)
COUNTS = "counts"  # the site's count charts
CALIBRATION = "calibration"  # the signals calibration reads (leakbench.calibrate.stats)


@dataclass(frozen=True)
class Series:
    """One value per sample. name: its key in a sample and in run["series"]; unit as stored.
    short: its name where a view uses a short one (the memory chart's lines, colours.SERIES).
    mallinfo2: read from glibc malloc's counters, so None under another allocator. sum_of: the
    series it is the sum of (older records' baselines lack it: a view adds those up). views: the
    views that show it, each with its place there (see TABLE above)."""

    name: str
    unit: str
    label: str
    help: str
    short: str | None = None
    mallinfo2: bool = False
    sum_of: tuple = ()
    views: dict = field(default_factory=dict, compare=False)


SERIES = (
    Series(
        "held_bytes",
        "bytes",
        "held memory",
        "anonymous RSS less the free bytes glibc malloc keeps (RssAnon - mallinfo2 fordblks)",
        short="held",
        mallinfo2=True,
        views={MEMORY: 4},
    ),  # drawn last: on top of malloc in use
    Series("rss_bytes", "bytes", "RSS", "resident set size", short="rss", views={MEMORY: 1}),
    Series(
        "rss_anon_bytes",
        "bytes",
        "RssAnon",
        "anonymous resident memory: RSS less file-backed and shared pages",
    ),
    Series("uss_bytes", "bytes", "USS", "memory unique to the process"),
    Series(
        "heap_used_bytes",
        "bytes",
        "malloc heap in use",
        "bytes in use in glibc malloc's heap (mallinfo2 uordblks)",
        mallinfo2=True,
    ),
    Series(
        "mmap_used_bytes",
        "bytes",
        "malloc mmapped",
        "bytes in chunks malloc mapped on their own (hblkhd)",
        mallinfo2=True,
    ),
    Series(
        "malloc_used_bytes",
        "bytes",
        "malloc in use",
        "heap_used_bytes + mmap_used_bytes: all glibc malloc has in use",
        short="malloc",
        mallinfo2=True,
        sum_of=("heap_used_bytes", "mmap_used_bytes"),
        views={MEMORY: 2},
    ),
    Series(
        "pymalloc_used_bytes",
        "bytes",
        "pymalloc in use",
        "bytes in the blocks CPython's small-object allocator has handed out"
        " (sys._debugmallocstats): objects of 512 bytes or less, in arenas CPython maps itself,"
        " outside malloc's counters",
    ),
    Series(
        "allocated_bytes",
        "bytes",
        "allocated bytes",
        "malloc_used_bytes + pymalloc_used_bytes: every byte malloc and pymalloc have handed out",
        mallinfo2=True,
        sum_of=("malloc_used_bytes", "pymalloc_used_bytes"),
    ),
    Series(
        "heap_free_bytes",
        "bytes",
        "malloc free bytes",
        "free bytes malloc keeps in its arenas (mallinfo2 fordblks): its slack",
        short="free",
        mallinfo2=True,
        views={MEMORY: 3},
    ),
    Series("threads", "threads", "threads", "threads of the process", views={COUNTS: 1}),
    Series(
        "open_files", "file descriptors", "open files", "open file descriptors", views={COUNTS: 2}
    ),
    Series(
        "python_objects",
        "objects",
        "Python objects",
        "objects the garbage collector tracks, frozen ones included",
        views={COUNTS: 3},
    ),
    Series(
        "gpu_current_bytes",
        "bytes",
        "GPU allocator in use",
        "bytes the GPU allocator has in use (get_memory_info 'current'); None without a GPU",
    ),
)
SERIES_UNITS = {s.name: s.unit for s in SERIES}
SERIES_BY_NAME = {s.name: s for s in SERIES}
