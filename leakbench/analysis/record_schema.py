"""The JSON Schema (draft 7) of a record, derived from its type, leakbench.analysis.schema.Record
(defined in leakbench.analysis.record_type): every key of the TypedDict, typed by its annotation
(schema_parts.from_typed), and the required keys are schema.REQUIRED; the schema only says more
of a key (a nested shape, an enum), never names one the type lacks.
"""

from __future__ import annotations

from leakbench import metrics as registry
from leakbench.analysis.judge.decision import SOURCES
from leakbench.analysis.judge.verdict import VERDICTS
from leakbench.analysis.record_type import REQUIRED, Record
from leakbench.analysis.schema_parts import (
    ANY_DICT,
    BOOL,
    INT,
    NUM,
    STR,
    VARIANTS,
    from_typed,
    list_of,
    map_of,
    obj,
    opt,
    trend,
)
from leakbench.contract_rules import KINDS


def record_schema() -> dict:
    """The JSON Schema of a record (schema_of("record"))."""
    run = _run()
    reported = obj({"issue": STR, "leaks_on": list_of(STR), "fixed_in": opt(STR), "note": STR})
    # a longer look (leakbench.analysis.judge.protocol.take); older records lack
    # candidates, why and extend
    confirmation = obj(
        {
            "reps": INT,
            "status": STR,
            "signals": opt(list_of(STR)),
            "candidates": list_of(STR),
            "why": STR,
            "extend": BOOL,
            "envelope": opt(ANY_DICT),
            "run": run,
            "seconds": NUM,
        }
    )
    # what the schema says beyond Record's annotations; every other key is typed by them
    detail = {
        "variant": {"enum": list(VARIANTS)},
        "reported": opt(reported),
        "kind": {"enum": list(KINDS)},
        "settings": _settings(),
        "environment": _environment(),
        "runs": list_of(run),
        "metrics": opt(obj(_metric_fields())),  # null: nothing measured, as {}
        "verdict": {"enum": list(VERDICTS)},
        "confirmation": confirmation,
        "extension": confirmation,
        "decision": _decision(),
        "engine": opt(obj({"version": STR, "commit": opt(STR), "source": STR})),
    }
    return from_typed(Record, detail, REQUIRED)


def _metric_fields() -> dict:
    """Every key of the registry's (leakbench.metrics): a trend for a sample series' metric and
    memray's heap (leakbench.analysis.record.metrics), one number for the rest and LEVELS."""
    scaling = obj({"sizes": list_of(NUM), "peaks_bytes": list_of(opt(NUM)), "exponent": opt(NUM)})
    found = {
        m.key: opt(trend()) if m.series or m is registry.HEAP else opt(NUM)
        for m in registry.METRICS
    }
    found.update(dict.fromkeys(registry.LEVELS, opt(NUM)))
    found.update(malloc_heap_unavailable=opt(STR), growth_basis=STR, peak_scaling=opt(scaling))
    return found


def _run() -> dict:
    """One child run of a record's runs (leakbench.analysis.record.run_entry)."""
    readings = map_of(opt(NUM))  # a baseline: series name -> value
    stack = obj({"bytes": list_of(NUM), "bytes_per_rep": NUM})
    heap = obj(
        {
            "heap_bytes": list_of(NUM),
            "heap_high_water_mark_bytes": opt(NUM),
            "retained_bytes": opt(NUM),
            "allocations": opt(NUM),
            "top_stacks": list_of(ANY_DICT),
            "stack_growth": list_of(stack),
        }
    )
    return obj(
        {
            "params": ANY_DICT,
            "status": STR,
            "phase": opt(STR),
            "error": opt(STR),
            "wall_seconds": NUM,
            "max_rss_bytes": opt(NUM),
            "peak_rss_bytes": opt(NUM),
            "cap_enforced_by": opt(STR),  # records before it lack it
            "cgroup_peak_bytes": opt(NUM),
            "import_baseline": opt(readings),
            "baseline": opt(readings),
            "series": map_of(list_of(opt(NUM))),
            "high_water_mark_bytes": opt(NUM),
            "gpu_peak_bytes": opt(NUM),
            "gpu_unavailable": opt(STR),
            registry.PEAK.key: opt(NUM),  # the metric is the first run's
            "warmup_peak_above_baseline_bytes": opt(NUM),
            "peak_source": STR,
            "trim": opt(map_of(NUM)),
            "malloc_heap_unavailable": opt(STR),
            "heap": opt(heap),
            "stages": opt(ANY_DICT),
            "reference_chain": opt(ANY_DICT),
            "python_type_growth": opt(list_of(ANY_DICT)),
            "diagnostics": opt(ANY_DICT),
            "seconds": map_of(NUM),
            "teardown_seconds": opt(NUM),
        }
    )


def _settings() -> dict:
    """leakbench.settings.Settings as a record stores it (flamegraph_dir left out)."""
    return obj(
        {
            "warmup": INT,
            "reps": INT,
            "heap_reps": INT,
            "cap_bytes": NUM,
            "timeout_seconds": NUM,
            "scales": list_of(NUM),
            "teardown_timeout_seconds": NUM,
        }
    )


def _environment() -> dict:
    return obj(
        {
            "tensorflow": opt(STR),
            "tensorflow_git": opt(STR),
            "python": opt(STR),
            "platform": opt(STR),
            "cpu": opt(STR),
            "cores": opt(INT),
            "ram_bytes": opt(NUM),
            "device": STR,
            "gpu": opt(ANY_DICT),
            "gpu_unavailable": opt(STR),
        }
    )


def _decision() -> dict:
    """The number the verdict rests on (leakbench.analysis.judge.decision); schema 3 on."""
    signal_row = obj(
        {
            "signal": STR,
            "value": NUM,
            "bar": NUM,
            "moved": BOOL,
            "steady": BOOL,
            "confirmed": opt(BOOL),
        }
    )
    return obj(
        {
            "verdict": {"enum": list(VERDICTS)},
            "signal": opt(STR),
            "label": opt(STR),
            "value": opt(NUM),
            "unit": opt(STR),
            "bar": opt(NUM),
            "exponent": opt(NUM),
            "k_bar": NUM,
            "source": {"enum": list(SOURCES)},
            "why": opt(STR),
            "signals": list_of(signal_row),
        },
        required=("verdict", "signal", "value", "unit", "bar", "source", "why", "signals"),
    )
