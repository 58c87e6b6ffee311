"""asv glue: every scenario pair × variant, measured once per environment.

`setup_cache` runs the engine (leakbench.measure) on each pair and variant —
one capped, timed child process per size, exactly as `leakbench run` — and
the `track_` benchmarks only read numbers out of those records: asv pays one
measurement per variant per environment, not one TensorFlow import per metric.

asv's results hold numbers only; the full records (verdicts, signals, series)
go to results/records/<machine>/tf-<version>.jsonl (<machine>: asv's machine
name, store.asv_machine) for `leakbench compare` and
`leakbench matrix`, and memray's flame graph of each leaky variant's retained
allocations to results/flamegraphs/tf-<version>/<pair>-leaky.html for the
site's lessons. Before anything is stored, the TensorFlow each child
imported is checked against the version pip installed in the environment:
a pin that did not hold fails the run (raises), it is never filed.

No asv `peakmem_` here: asv's peakmem reads the benchmark process's own
maximum RSS, and the pipelines run in child processes (they must: memory cap,
timeout, fresh interpreter). Measuring a pair in the asv process would mean an
uncapped leaky pipeline and one TensorFlow import per benchmark.

LEAKBENCH_PAIRS=name,name restricts the pairs (a trial run: no records or flame graphs written).

A pair that REQUIRES a GPU TensorFlow does not see (always, with the
matrix's tensorflow-cpu), or a fix whose preloaded library the machine lacks,
is measured as `skipped`: its track_ numbers are NaN and `setup` raises
NotImplementedError, which asv shows as a skipped benchmark.
"""

import math
import os
import shutil
import tempfile
from pathlib import Path

from leakbench import catalog, metrics  # read scenario metadata and the registry without TensorFlow

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
SELECTED = [p for p in os.environ.get("LEAKBENCH_PAIRS", "").split(",") if p]
PAIRS = SELECTED or catalog.pair_names(ROOT)
VARIANTS = list(catalog.VARIANT_DIRS)  # asv params: a list


# asv name -> record metric, from the registry (leakbench.metrics: entries with an asv name). The
# track_ methods below stay written out: asv versions a benchmark by the hash of its source, and a
# changed source would drop its history. tests/test_versions.py checks them against the registry.
_METRICS = {m.asv: m.key for m in metrics.METRICS if m.asv}


def _numbers(rec):
    """The numbers asv stores for one record; nan where a run ended early (over-cap, hang, error),
    nothing was measured (skipped) or a metric does not apply (malloc heap under jemalloc)."""
    numbers = {name: metrics.value(rec, key) for name, key in _METRICS.items()}
    return {
        **{k: math.nan if v is None else v for k, v in numbers.items()},
        "verdict": rec["verdict"],
        "skip_reason": rec.get("skip_reason"),
    }


def _store_flamegraphs(drawn, records, folder):
    """Replace the flame graphs of the leaky variants
    measured; a graph that failed leaves none behind."""
    folder.mkdir(parents=True, exist_ok=True)
    for rec in records:
        if rec["variant"] == "leaky":
            name = f"{rec['pair']}-leaky.html"
            (folder / name).unlink(missing_ok=True)
            if "file" in (rec.get("flamegraph") or {}):
                shutil.copyfile(drawn / name, folder / name)


class Pairs:
    """Each pair × variant; every metric comes from one measurement per environment."""

    params = (PAIRS, VARIANTS)
    param_names = ["pair", "variant"]

    def setup_cache(self):
        from leakbench.history import sweep
        from leakbench.measure import FIXED_CAP_BYTES, Settings

        # 4 GiB per child process tree; run's timeout per step
        settings = Settings(cap_bytes=FIXED_CAP_BYTES)
        with tempfile.TemporaryDirectory(prefix="leakbench-flamegraphs-") as drawn:
            # a trial run (LEAKBENCH_PAIRS) files no records
            pinned, records, _ = sweep.record_pairs(
                ROOT, PAIRS, settings, None if SELECTED else RESULTS, flamegraph_dir=drawn
            )
            if not SELECTED:
                _store_flamegraphs(Path(drawn), records, RESULTS / "flamegraphs" / f"tf-{pinned}")
        return {(r["pair"], r["variant"]): _numbers(r) for r in records}

    # Every pair, two sizes for peak pairs, in well under the hour on 2 cores with a neighbour
    # (docs/measurements.md, "Run time"); room for a loaded machine and older, slower releases.
    setup_cache.timeout = 3600

    def setup(self, cache, pair, variant):
        if cache[pair, variant]["verdict"] == "skipped":  # asv marks the benchmark skipped
            raise NotImplementedError(cache[pair, variant]["skip_reason"])

    def track_peak_above_baseline(self, cache, pair, variant):
        """Peak RSS above the pre-setup baseline, at the default size (VmHWM)."""
        return cache[pair, variant]["peak_above_baseline"]

    track_peak_above_baseline.unit = "bytes"

    def track_held_growth(self, cache, pair, variant):
        """Held memory's growth per repetition (anonymous RSS
        less malloc's free bytes): the verdict's signal."""
        return cache[pair, variant]["held_growth"]

    track_held_growth.unit = "bytes/repetition"

    def track_python_objects(self, cache, pair, variant):
        """Python objects the collector tracks, growth per repetition."""
        return cache[pair, variant]["python_objects"]

    track_python_objects.unit = "objects/repetition"

    def track_rss_growth(self, cache, pair, variant):
        """RSS growth per repetition (Theil–Sen slope)."""
        return cache[pair, variant]["rss_growth"]

    track_rss_growth.unit = "bytes/repetition"

    def track_retained_heap(self, cache, pair, variant):
        """Heap retained per repetition under memray (Theil–Sen slope)."""
        return cache[pair, variant]["retained_heap"]

    track_retained_heap.unit = "bytes/repetition"

    def track_malloc_heap_growth(self, cache, pair, variant):
        """Bytes glibc malloc has in use (heap plus mmapped
        chunks), growth per repetition (Theil–Sen slope)."""
        return cache[pair, variant]["malloc_heap_growth"]

    track_malloc_heap_growth.unit = "bytes/repetition"

    def track_trim_returned(self, cache, pair, variant):
        """RSS malloc_trim gave back after the measured repetitions: freed memory glibc had kept."""
        return cache[pair, variant]["trim_returned"]

    track_trim_returned.unit = "bytes"

    def track_threads(self, cache, pair, variant):
        """Threads gained per repetition (Theil–Sen slope)."""
        return cache[pair, variant]["threads"]

    track_threads.unit = "threads/repetition"

    def track_seconds_per_repetition(self, cache, pair, variant):
        """Wall seconds of one measured repetition."""
        return cache[pair, variant]["seconds_per_repetition"]

    track_seconds_per_repetition.unit = "seconds/repetition"
