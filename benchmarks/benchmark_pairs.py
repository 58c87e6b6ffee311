"""asv glue: every scenario pair × variant, read from the records of one TensorFlow build.

asv measures nothing here. leakbench.publish.asv_builds runs `asv run` once per build, its commit
in the builds repository (.asv/tf-builds: one commit per TensorFlow build, docs/asv.md), with
LEAKBENCH_BUILD=<version> and LEAKBENCH_RECORDS=<that build's records file>; each track_ benchmark
returns one number of the record (pair, variant), as leakbench.metrics.value reads it: the same
number the matrix shows, from the same measurement.

Names and units, from the registry (metrics.METRICS, entries with an asv name): asv's pages format
only "seconds" and "bytes" (12.3k, 1.2M; anything else is printed raw), so a growth in bytes per
repetition is unit "bytes" with "_per_repetition" in its name, a time per repetition "seconds",
and a count (threads, objects) its own unit word ("2.00 threads"). tests/test_versions.py checks
the methods against the registry (asv_name, asv_unit).

`version` (asv drops results whose benchmark version is not the suite's) is the engine identity of
the records (asv_builds.engine_identity: the engine's version and source hash, "unknown" for
records made before records named their engine): results of another engine are not drawn.

A skipped record (a GPU pair on a CPU, a fix whose library the machine lacks) or a pair this build
has no record of makes `setup` raise NotImplementedError: asv shows the benchmark skipped. A metric
a run did not reach (over-cap, hang) or that does not apply (malloc heap under jemalloc) is NaN.
Without LEAKBENCH_RECORDS, setup raises RuntimeError: there is nothing to read.
LEAKBENCH_PAIRS=name,name restricts the pairs (a trial, a test).
"""

import math
import os
from pathlib import Path

from leakbench import catalog, metrics  # scenario names and the registry, without TensorFlow
from leakbench.history import builds, store
from leakbench.publish import asv_builds

ROOT = Path(__file__).resolve().parents[1]
SELECTED = [p for p in os.environ.get("LEAKBENCH_PAIRS", "").split(",") if p]
PAIRS = SELECTED or catalog.pair_names(ROOT)
VARIANTS = list(catalog.VARIANT_DIRS)  # asv params: a list
BUILD = os.environ.get(asv_builds.ENV_BUILD)
SOURCE = os.environ.get(asv_builds.ENV_RECORDS)


def asv_name(metric) -> str:
    """A registry metric's benchmark name without track_: its asv name, "_per_repetition" added
    to a rate whose name does not say it (the unit asv shows cannot: asv_unit)."""
    rate = metric.per_repetition and not metric.asv.endswith("_per_repetition")
    return metric.asv + ("_per_repetition" if rate else "")


def asv_unit(metric) -> str:
    """The unit asv is given: the registry's without "/repetition" ("bytes", "seconds",
    "threads", "objects")."""
    return metric.unit.removesuffix("/repetition")


_KEYS = {asv_name(m): m.key for m in metrics.METRICS if m.asv}


def _read(source, build):
    """(pair, variant) -> record of the records file `source`, checked to be `build`'s."""
    if not source:
        return {}
    found = {(r["pair"], r["variant"]): r for r in store.read_records(Path(source))}
    for rec in found.values():
        seen = (rec.get("environment") or {}).get("tensorflow")
        if build and seen and not builds.same_build(seen, build):
            raise RuntimeError(f"{source}: a record of TensorFlow {seen}, not {build}")
    return found


RECORDS = _read(SOURCE, BUILD)


def _number(pair, variant, name):
    value = metrics.value(RECORDS[pair, variant], _KEYS[name])
    return math.nan if value is None else value


class Pairs:
    """Each pair × variant of one build's records (LEAKBENCH_RECORDS)."""

    params = (PAIRS, VARIANTS)
    param_names = ["pair", "variant"]
    version = asv_builds.engine_identity(RECORDS.values())

    def setup(self, pair, variant):
        if not SOURCE:
            raise RuntimeError(
                "no records to read: run the suite through leakbench.publish.asv_builds "
                f"({asv_builds.ENV_RECORDS} names one build's records file)"
            )
        rec = RECORDS.get((pair, variant))
        if rec is None:  # asv marks the benchmark skipped
            raise NotImplementedError(f"no record of {pair} ({variant}) for TensorFlow {BUILD}")
        if rec["verdict"] == "skipped":
            raise NotImplementedError(rec.get("skip_reason") or "skipped")

    def track_peak_above_baseline(self, pair, variant):
        """Peak RSS above the pre-setup baseline, at the default size (VmHWM), in bytes."""
        return _number(pair, variant, "peak_above_baseline")

    track_peak_above_baseline.unit = "bytes"

    def track_held_growth_per_repetition(self, pair, variant):
        """Held memory's growth per repetition, bytes (anonymous RSS less malloc's free bytes,
        Theil–Sen slope): the verdict's signal."""
        return _number(pair, variant, "held_growth_per_repetition")

    track_held_growth_per_repetition.unit = "bytes"

    def track_python_objects_per_repetition(self, pair, variant):
        """Python objects the collector tracks, growth per repetition (Theil–Sen slope)."""
        return _number(pair, variant, "python_objects_per_repetition")

    track_python_objects_per_repetition.unit = "objects"

    def track_rss_growth_per_repetition(self, pair, variant):
        """RSS growth per repetition, bytes (Theil–Sen slope)."""
        return _number(pair, variant, "rss_growth_per_repetition")

    track_rss_growth_per_repetition.unit = "bytes"

    def track_retained_heap_per_repetition(self, pair, variant):
        """Heap retained per repetition under memray, bytes (Theil–Sen slope)."""
        return _number(pair, variant, "retained_heap_per_repetition")

    track_retained_heap_per_repetition.unit = "bytes"

    def track_malloc_heap_growth_per_repetition(self, pair, variant):
        """Bytes glibc malloc has in use (heap plus mmapped chunks), growth per repetition
        (Theil–Sen slope); NaN under another allocator."""
        return _number(pair, variant, "malloc_heap_growth_per_repetition")

    track_malloc_heap_growth_per_repetition.unit = "bytes"

    def track_trim_returned(self, pair, variant):
        """RSS malloc_trim gave back after the measured repetitions, bytes: freed memory glibc
        had kept."""
        return _number(pair, variant, "trim_returned")

    track_trim_returned.unit = "bytes"

    def track_threads_per_repetition(self, pair, variant):
        """Threads gained per repetition (Theil–Sen slope)."""
        return _number(pair, variant, "threads_per_repetition")

    track_threads_per_repetition.unit = "threads"

    def track_seconds_per_repetition(self, pair, variant):
        """Wall seconds of one measured repetition."""
        return _number(pair, variant, "seconds_per_repetition")

    track_seconds_per_repetition.unit = "seconds"
