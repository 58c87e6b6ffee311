"""Build the result record: one per measured scenario variant, from its child runs.

A record is data (its keys and types: leakbench.analysis.record_type.Record); the
table, JSON lines and asv are views of it. Metrics are computed from the
registry (leakbench.metrics): the trend of every metric that names a sample
series, plus memray's heap, the peak and the fragmentation inputs.

teardown_stalled is the message of a run that passed its teardown timeout
after its measurement was in (freeing live iterators can stall), else None:
such a run keeps the verdict its measurement gives.

environment.device is "GPU:0" where TensorFlow saw a GPU (then
environment.gpu holds its name, compute capability, driver and count, and
metrics hold gpu_memory_growth and gpu_peak_bytes), else "CPU" with gpu and
the GPU metrics null and gpu_unavailable saying why ("no GPU visible to
TensorFlow"). A scenario that REQUIRES a GPU it cannot see reads `skipped`,
its reason in skip_reason; its run has status skipped and empty series. So
does one whose ENV preloads a library the machine lacks (leakbench.measure),
without starting a child. `requires` is what the scenario needs that a
machine may lack (contract.Scenario.needs: "GPU", or the preloaded library).
"""

from __future__ import annotations

import platform
from pathlib import Path

import psutil

from leakbench import metrics as registry
from leakbench import version
from leakbench.analysis import estimate
from leakbench.analysis.record_type import SCHEMA, Record
from leakbench.metrics import SERIES_UNITS

NOT_REPORTED = "not reported: the child ended before it looked for a GPU"


def environment(
    child_versions: dict | None, device: dict | None = None, gpu_problem: str | None = None
) -> dict:
    """Where the measurement ran: versions, CPU model, cores, RAM (bytes), device and GPU.

    device: the child's device message (leakbench.engine.child._device); None if it never came.
    gpu_problem: why a GPU that is there gave no readings (engine.gpu.Gpu.start), if it did not.
    """
    versions = child_versions or {}
    device = device or {"device": "CPU", "gpu": None, "gpu_unavailable": NOT_REPORTED}
    if gpu_problem:
        device = {**device, "gpu_unavailable": gpu_problem}
    return {
        "tensorflow": versions.get("tensorflow"),
        # tf.version.GIT_VERSION: the build's commit
        "tensorflow_git": versions.get("tensorflow_git"),
        "python": versions.get("python", platform.python_version()),
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cores": psutil.cpu_count(),
        "ram_bytes": psutil.virtual_memory().total,
        "device": device["device"],
        "gpu": device["gpu"],  # name, compute_capability, driver, count
        "gpu_unavailable": device["gpu_unavailable"],  # why there is no GPU reading, or None
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run_entry(outcome) -> dict:
    """One child run as stored in the record: status, series and raw peaks."""
    result = outcome.result or {}
    samples = result.get("samples") or outcome.samples
    baseline = result.get("baseline")
    before = result.get("import_baseline")
    hwm = result.get("high_water_mark_bytes")
    # Peak above baseline: the kernel's high-water mark from setup to the last
    # measured repetition (exact, catches spikes between samples), minus RSS
    # before setup. Where VmHWM cannot be reset, the largest sampled RSS.
    peak = hwm - before["rss_bytes"] if hwm is not None and before else None
    if peak is None and samples and before:
        peak = max(s["rss_bytes"] for s in samples) - before["rss_bytes"]
    return {
        "params": outcome.params,
        "status": outcome.status,
        "phase": outcome.phase if outcome.status != "ok" else None,
        "error": outcome.error,
        "wall_seconds": outcome.wall_seconds,
        # the runner's polls of the whole tree (every supervise.POLL_SECONDS)
        "max_rss_bytes": outcome.max_rss_bytes,
        # the child's own peak over its life (kernel, wait4)
        "peak_rss_bytes": outcome.peak_rss_bytes,
        # what held the cap: "cgroup v1" or "cgroup v2" (the kernel, at its limit), or "poll"
        "cap_enforced_by": outcome.cap_enforced_by,
        # the most the run's memory cgroup was charged, page cache included (None: no cgroup)
        "cgroup_peak_bytes": outcome.cgroup_peak_bytes,
        "import_baseline": before,
        "baseline": baseline,
        "series": {name: [s.get(name) for s in samples] for name in SERIES_UNITS},
        "high_water_mark_bytes": hwm,
        "gpu_peak_bytes": result.get("gpu_peak_bytes"),
        # a GPU whose allocator statistics could not be read
        "gpu_unavailable": result.get("gpu_unavailable"),
        "peak_above_baseline_bytes": peak,
        "peak_source": "VmHWM" if hwm is not None else "sampled RSS",
        "trim": result.get("trim"),
        "malloc_heap_unavailable": result.get("malloc_heap_unavailable"),
        # heap_pass: heap_bytes, top_stacks, stack_growth (growth by allocation site)
        "heap": stack_slopes(result.get("heap")),
        # buffers.stages: bytes per tf.data stage per reading, autotune's values
        "stages": result.get("stages"),
        # chain.reference_chain: what keeps the top type alive
        "reference_chain": result.get("reference_chain"),
        # pytypes.type_growth: the types behind python_objects
        "python_type_growth": result.get("python_type_growth"),
        # leakbench check only (leakbench.engine.buffers)
        "diagnostics": result.get("diagnostics"),
        "seconds": result.get("seconds", {}),
        "teardown_seconds": outcome.teardown_seconds,
    }


def stack_slopes(heap: dict | None) -> dict | None:
    """The heap pass's result with each growing stack's bytes_per_rep (bytes/repetition): the
    Theil–Sen slope of its live bytes per heap repetition (the one step for two, 0.0 for one)."""
    for stack in (heap or {}).get("stack_growth") or []:
        values = stack["bytes"]
        found = estimate.trend(values)
        stack["bytes_per_rep"] = (
            found.slope
            if found is not None
            else (float(values[-1] - values[0]) / (len(values) - 1) if len(values) > 1 else 0.0)
        )
    return heap


def _trend(values, unit: str) -> dict | None:
    """estimate.trend of a series as stored in a record, with its unit; None if too short."""
    found = estimate.trend(values)
    return {**found.as_dict(), "unit": unit} if found else None


def metrics(runs: list[dict], scenario, reps: int) -> dict:
    """Metrics of a measurement; growth and heap from the first (default-size) run. scenario
    (its kind and size_param) is read only for a peak scenario's several runs: None for one run."""
    first = runs[0]
    out: dict = {}
    for metric in registry.METRICS:
        if metric.series:
            out[metric.key] = _trend(first["series"][metric.series], metric.unit)
    out["malloc_heap_unavailable"] = first["malloc_heap_unavailable"]
    trim, rss = first["trim"], first["series"]["rss_bytes"]
    out["trim_returned_bytes"] = (
        trim and trim["rss_before_trim_bytes"] - trim["rss_after_trim_bytes"]
    )
    out["rss_growth_bytes"] = (
        rss[-1] - first["baseline"]["rss_bytes"] if rss and first["baseline"] else None
    )
    # ... and how much of it malloc keeps as free bytes (fragmentation), over the same repetitions
    free = first["series"]["heap_free_bytes"]  # None throughout where glibc's counters are n/a
    out["malloc_free_growth_bytes"] = (
        free[-1] - first["baseline"]["heap_free_bytes"]
        if free and free[-1] is not None and first["baseline"]
        else None
    )
    # RSS the pipeline held above the process before setup, just before the trim:
    # what a trim that gives most of it back shows to be freed memory malloc kept.
    before = first.get("import_baseline")
    out["rss_held_bytes"] = trim and before and trim["rss_before_trim_bytes"] - before["rss_bytes"]
    # ... and the free bytes malloc keeps above that process, after the last repetition: chunks
    # freed but stranded between chunks in use, which
    # the trim cannot give back (verdict.fragmented).
    out["malloc_free_held_bytes"] = (
        free[-1] - before["heap_free_bytes"]
        if free and free[-1] is not None and before and before.get("heap_free_bytes") is not None
        else None
    )
    heap = first["heap"]
    out["retained_heap"] = _trend(heap["heap_bytes"], "bytes/repetition") if heap else None
    out["heap_high_water_mark_bytes"] = heap and heap["heap_high_water_mark_bytes"]
    out["peak_above_baseline_bytes"] = first["peak_above_baseline_bytes"]
    # The GPU allocator's peak over the measured repetitions;
    # None without a GPU (gpu_unavailable says why).
    out["gpu_peak_bytes"] = first.get("gpu_peak_bytes")
    spent = first["seconds"].get("repetitions")
    out["seconds_per_repetition"] = spent / reps if spent else None
    if len(runs) > 1 and scenario.kind == "peak":  # one run (a longer look): no scenario read
        sizes = [r["params"][scenario.size_param] for r in runs]
        peaks = [r["peak_above_baseline_bytes"] for r in runs]
        out["peak_scaling"] = {
            "sizes": sizes,
            "peaks_bytes": peaks,
            "exponent": estimate.scaling_exponent(sizes, peaks),
        }
    return out


def stalled_in_teardown(outcome) -> bool:
    """True for a child run that passed its teardown timeout after its result arrived."""
    return outcome.status == "hang" and outcome.phase == "teardown" and outcome.result is not None


def first_metrics(runs: list[dict], outcomes: list, scenario, reps: int) -> dict:
    """Metrics (`metrics`) from every run whose measurement finished (its result arrived), even
    if it then hung in teardown or a larger size went over the cap; {} where the first did not.
    runs: run_entry of each of `outcomes`."""
    measured = [r for r, o in zip(runs, outcomes) if o.result is not None]
    return metrics(measured, scenario, reps) if measured and measured[0] is runs[0] else {}


def statuses(runs: list[dict], outcomes: list) -> list[str]:
    """Each run's status as the verdict reads it: "ok" for a run that stalled in teardown after
    its measurement was in (stalled_in_teardown), else its own."""
    return ["ok" if stalled_in_teardown(o) else r["status"] for r, o in zip(runs, outcomes)]


def build(
    scenario,
    variant: str,
    params: dict,
    settings: dict,
    outcomes: list,
    runs: list[dict],
    found: dict,
    reading: tuple[str, list[str]],
    pair: str | None = None,
    flamegraph: dict | None = None,
) -> Record:
    """The record of one scenario variant from its child runs (Outcome objects, default size
    first), without its decision (the judge's: analysis.judge.protocol.first).

    runs: run_entry of each outcome; found: their metrics (first_metrics); reading: the verdict
    and its signals. pair: what the record calls it (catalog.Target.pair); None: the scenario
    file's name. flamegraph: where memray's flame graph of the first run went, or why it did not
    ({"file": name} or {"error": why}); the key is there only when a graph was asked for.
    Built whole here: no caller rewrites a field after (a longer look makes a new record).
    """
    word, signals = reading
    stalled = [r for r, o in zip(runs, outcomes) if stalled_in_teardown(o)]
    failed = next(
        (r for r in runs if r["status"] not in ("ok", "skipped") and r not in stalled), None
    )
    versions = next(
        (o.result["versions"] for o in outcomes if o.result),
        next((o.versions for o in outcomes if o.versions), None),
    )
    device = next((o.device for o in outcomes if o.device), None)
    # What one repetition was: the scenario's REPETITION, unless the first run's child learned it
    # (a check target is a dataset or a function only once set up: engine.target.Adapted).
    learned = (outcomes[0].result or {}).get("repetition")
    rec: Record = {
        "schema": SCHEMA,
        "pair": pair if pair is not None else scenario.name,
        "variant": variant,
        "path": str(scenario.path),
        "title": scenario.title,
        "source": scenario.source,
        "reported": scenario.reported,
        "expects": scenario.expects,
        "requires": scenario.needs,
        "kind": scenario.kind,
        "repetition": learned or scenario.repetition,
        "size_param": scenario.size_param,
        "params": params,
        "settings": settings,
        "environment": environment(
            versions,
            device,
            next((r["gpu_unavailable"] for r in runs if r["gpu_unavailable"]), None),
        ),
        "runs": runs,
        "metrics": found,
        "signals": signals,
        "verdict": word,
        "teardown_stalled": stalled
        and (
            stalled[0]["error"]
            or "teardown passed its timeout (settings "
            "teardown_timeout_seconds) after the measurement was in"
        )
        or None,
        "phase": failed["phase"] if failed else None,
        "error": failed["error"] if failed else None,
        "skip_reason": next((o.skipped for o in outcomes if o.status == "skipped"), None),
        "seconds": sum(r["wall_seconds"] for r in runs),
        "engine": version.engine(),
    }
    if flamegraph:
        rec["flamegraph"] = flamegraph
    return rec
