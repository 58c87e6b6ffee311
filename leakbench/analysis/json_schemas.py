"""The JSON Schemas (draft 7) of the files leakbench reads, one per kind (KINDS_OF_FILE):
leakbench.analysis.validate compiles them and says what is wrong with a file (see its docstring).

A record's schema is derived from its type, leakbench.analysis.schema.Record (defined in
leakbench.analysis.record_type): every key of the TypedDict, typed by its annotation
(`from_typed`), and the required keys are schema.REQUIRED;
the schema only says more of a key (a nested shape, an enum), never names one the type lacks.
A trend's keys are estimate.Trend's fields.
"""

from __future__ import annotations

import typing
from dataclasses import fields

from leakbench import metrics as registry
from leakbench.analysis.decision import SOURCES
from leakbench.analysis.estimate import Trend
from leakbench.analysis.record_type import REQUIRED, Record
from leakbench.analysis.verdict import VERDICTS
from leakbench.catalog import VARIANT_DIRS
from leakbench.contract import KINDS

# The variants a record may hold: the catalog's pairs, a user's file (`leakbench run FILE.py`,
# calibration's designed cases) and `leakbench check`'s target.
VARIANTS = (*VARIANT_DIRS, "file", "check")
KINDS_OF_FILE = ("record", "repeat", "calibrate", "bisect")
TREND_FIELDS = tuple(f.name for f in fields(Trend))  # a trend as record.metrics stores it
# leakbench.calibrate.stats.SIGNALS' names, derived the
# same way (that module is not imported: numpy, scipy)
CALIBRATION_SIGNALS = tuple(m.signal for m in registry.metrics_in(registry.CALIBRATION))


# --- the schemas (JSON Schema, draft 7) -----------------------------------------------------------

NUM = {"type": "number"}  # an int or a float, never a bool; finite: values_problem
INT = {"type": "integer"}
STR = {"type": "string"}
BOOL = {"type": "boolean"}
ANY_DICT = {"type": "object"}
ANY_LIST = {"type": "array"}


def _opt(schema: dict) -> dict:
    """schema, or null: null added to its type (properties, required and items hold for a dict or a
    list only), not anyOf, which fastjsonschema tries branch by branch through exceptions (slow)."""
    return {**schema, "type": [schema["type"], "null"]}


def _list(items: dict) -> dict:
    return {"type": "array", "items": items}


def _map(values: dict) -> dict:
    """A dict of any keys, each value of `values`."""
    return {"type": "object", "additionalProperties": values}


def _obj(fields: dict, required: tuple = ()) -> dict:
    """A dict of `fields` (each optional but those in
    `required`); other keys allowed, of any value."""
    return {"type": "object", "properties": fields, "required": list(required)}


_TYPES = {int: INT, float: NUM, str: STR, bool: BOOL, dict: ANY_DICT, list: ANY_LIST}


def json_type(hint) -> dict:
    """A TypedDict annotation (int, float, str, bool, dict, list[X], X | None) as JSON Schema."""
    args = typing.get_args(hint)
    if type(None) in args:
        (inner,) = (a for a in args if a is not type(None))
        return _opt(json_type(inner))
    if typing.get_origin(hint) is list and args:
        return _list(json_type(args[0]))
    return _TYPES[typing.get_origin(hint) or hint]


def from_typed(typed: type, detail: dict, required: tuple) -> dict:
    """The JSON Schema of a TypedDict: every key, typed by its annotation (json_type) or by
    `detail` where the schema says more. A key of `detail` the TypedDict lacks, or a detail
    that refuses the null its annotation allows, is a programming error (TypeError)."""
    hints = typing.get_type_hints(typed)
    if unknown := sorted(set(detail) - set(hints)) or sorted(set(required) - set(hints)):
        raise TypeError(f"{typed.__name__} has no key {unknown[0]!r}: add it to the type first")
    for key, hint in hints.items():
        nullable = "null" in (detail.get(key, {}).get("type") or [])
        if key in detail and "null" in json_type(hint)["type"] and not nullable:
            raise TypeError(f"{typed.__name__}[{key!r}] may be None; its detail refuses null")
    return _obj({k: detail.get(k) or json_type(hint) for k, hint in hints.items()}, required)


def schema_of(kind: str) -> dict:
    """The JSON Schema of a file of `kind` (KINDS_OF_FILE)."""
    # estimate.Trend's fields, and its unit; required: what the verdict reads of every trend
    # (metrics.rate, verdict.moved); the rises and net rate came later (older records lack them)
    trend = _obj(
        {**dict.fromkeys(TREND_FIELDS, NUM), "unit": STR},
        required=("slope", "low", "high", "p_increasing", "first_half", "second_half"),
    )
    if kind == "record":
        scaling = _obj(
            {"sizes": _list(NUM), "peaks_bytes": _list(_opt(NUM)), "exponent": _opt(NUM)}
        )
        # every key of the registry's (leakbench.metrics): a trend for a sample series' metric and
        # memray's heap (leakbench.analysis.record.metrics), one number for the rest and LEVELS
        metric_fields = {
            m.key: _opt(trend) if m.series or m is registry.HEAP else _opt(NUM)
            for m in registry.METRICS
        }
        metric_fields.update(dict.fromkeys(registry.LEVELS, _opt(NUM)))
        metric_fields.update(
            malloc_heap_unavailable=_opt(STR), growth_basis=STR, peak_scaling=_opt(scaling)
        )
        readings = _map(_opt(NUM))  # a baseline: series name -> value
        stack = _obj({"bytes": _list(NUM), "bytes_per_rep": NUM})
        heap = _obj(
            {
                "heap_bytes": _list(NUM),
                "heap_high_water_mark_bytes": _opt(NUM),
                "retained_bytes": _opt(NUM),
                "allocations": _opt(NUM),
                "top_stacks": _list(ANY_DICT),
                "stack_growth": _list(stack),
            }
        )
        run = _obj(
            {
                "params": ANY_DICT,
                "status": STR,
                "phase": _opt(STR),
                "error": _opt(STR),
                "wall_seconds": NUM,
                "max_rss_bytes": _opt(NUM),
                "peak_rss_bytes": _opt(NUM),
                "cap_enforced_by": _opt(STR),  # records before it lack it
                "cgroup_peak_bytes": _opt(NUM),
                "import_baseline": _opt(readings),
                "baseline": _opt(readings),
                "series": _map(_list(_opt(NUM))),
                "high_water_mark_bytes": _opt(NUM),
                "gpu_peak_bytes": _opt(NUM),
                "gpu_unavailable": _opt(STR),
                registry.PEAK.key: _opt(NUM),  # the metric is the first run's
                "warmup_peak_above_baseline_bytes": _opt(NUM),
                "peak_source": STR,
                "trim": _opt(_map(NUM)),
                "malloc_heap_unavailable": _opt(STR),
                "heap": _opt(heap),
                "stages": _opt(ANY_DICT),
                "reference_chain": _opt(ANY_DICT),
                "python_type_growth": _opt(_list(ANY_DICT)),
                "diagnostics": _opt(ANY_DICT),
                "seconds": _map(NUM),
                "teardown_seconds": _opt(NUM),
            }
        )
        settings = _obj(
            {
                "warmup": INT,
                "reps": INT,
                "heap_reps": INT,
                "cap_bytes": NUM,
                "timeout_seconds": NUM,
                "scales": _list(NUM),
                "teardown_timeout_seconds": NUM,
            }
        )
        environment = _obj(
            {
                "tensorflow": _opt(STR),
                "tensorflow_git": _opt(STR),
                "python": _opt(STR),
                "platform": _opt(STR),
                "cpu": _opt(STR),
                "cores": _opt(INT),
                "ram_bytes": _opt(NUM),
                "device": STR,
                "gpu": _opt(ANY_DICT),
                "gpu_unavailable": _opt(STR),
            }
        )
        reported = _obj({"issue": STR, "leaks_on": _list(STR), "fixed_in": _opt(STR), "note": STR})
        # a longer look (leakbench.analysis.record.confirmed, extended); older records lack
        # candidates, why and extend
        confirmation = _obj(
            {
                "reps": INT,
                "status": STR,
                "signals": _opt(_list(STR)),
                "candidates": _list(STR),
                "why": STR,
                "extend": BOOL,
                "envelope": _opt(ANY_DICT),
                "run": run,
                "seconds": NUM,
            }
        )
        # the number the verdict rests on (leakbench.analysis.decision); schema 3 on
        signal_row = _obj(
            {
                "signal": STR,
                "value": NUM,
                "bar": NUM,
                "moved": BOOL,
                "steady": BOOL,
                "confirmed": _opt(BOOL),
            }
        )
        decision = _obj(
            {
                "verdict": {"enum": list(VERDICTS)},
                "signal": _opt(STR),
                "label": _opt(STR),
                "value": _opt(NUM),
                "unit": _opt(STR),
                "bar": _opt(NUM),
                "exponent": _opt(NUM),
                "k_bar": NUM,
                "source": {"enum": list(SOURCES)},
                "why": _opt(STR),
                "signals": _list(signal_row),
            },
            required=("verdict", "signal", "value", "unit", "bar", "source", "why", "signals"),
        )
        # what the schema says beyond Record's annotations; every other key is typed by them
        detail = {
            "variant": {"enum": list(VARIANTS)},
            "reported": _opt(reported),
            "kind": {"enum": list(KINDS)},
            "settings": settings,
            "environment": environment,
            "runs": _list(run),
            "metrics": _opt(_obj(metric_fields)),  # null: nothing measured, as {}
            "verdict": {"enum": list(VERDICTS)},
            "confirmation": confirmation,
            "extension": confirmation,
            "decision": decision,
            "engine": _opt(_obj({"version": STR, "commit": _opt(STR), "source": STR})),
        }
        return from_typed(Record, detail, REQUIRED)

    # leakbench repeat's result (leakbench.repeat.run.observe and repeat): what resuming reads
    if kind == "repeat":
        slope = _obj(
            {
                "signal": STR,
                "slope": _opt(NUM),
                "rate": _opt(NUM),
                "unit": _opt(STR),
                "moved": BOOL,
            },
            required=("signal", "slope", "rate", "unit", "moved"),
        )
        seen = _obj(
            {
                "pair": STR,
                "variant": {"enum": list(VARIANTS)},
                "run": INT,
                "verdict": {"enum": list(VERDICTS)},
                "signals": _list(STR),
                "expected": STR,
                "expected_ok": BOOL,
                "tensorflow": _opt(STR),
                "cap_bytes": NUM,
                "wall_seconds": NUM,
                "slopes": _map(slope),
                "peak_exponent": _opt(NUM),
                "confirmation_seconds": _opt(NUM),
                "load_average": _opt(NUM),
                "phase": _opt(STR),
                "error": _opt(STR),
            },
            required=(
                "pair",
                "variant",
                "run",
                "verdict",
                "signals",
                "expected",
                "expected_ok",
                "tensorflow",
                "cap_bytes",
                "wall_seconds",
                "slopes",
                "peak_exponent",
                "confirmation_seconds",
            ),
        )
        return _obj(
            {
                "format": INT,
                "machine": STR,
                "jobs": INT,
                "cpu_hog": INT,
                "tensorflow": _opt(STR),
                "settings": ANY_DICT,
                "environment": ANY_DICT,
                "started": STR,
                "updated": STR,
                "elapsed_seconds": NUM,
                "runs_requested": INT,
                "observations": _list(seen),
                "summary": ANY_DICT,
            },
            required=("format", "elapsed_seconds", "observations"),
        )

    # leakbench calibrate's result (calibrate.run.observe, peers.run_peer): what resuming reads
    if kind == "calibrate":
        fields = {
            "holder": STR,
            "shape": STR,  # the shape library's; older results lack it and leaks (steady leaks)
            "leaks": BOOL,
            "bytes_per_rep": INT,
            "run": INT,
            "verdict": {"enum": list(VERDICTS)},
            "signals": _list(STR),
            "phase": _opt(STR),
            "error": _opt(STR),
            "wall_seconds": NUM,
            "seconds": _map(NUM),
            "peak_rss_bytes": _opt(NUM),
            "max_rss_bytes": _opt(NUM),
            "tensorflow": _opt(STR),
            "heap_source": _opt(STR),
            "confirmation_held_trend": _opt(trend),  # older results lack it
        }
        for name in CALIBRATION_SIGNALS:  # older results lack a signal added since (held): optional
            fields.update(
                {
                    f"{name}_slope": _opt(NUM),
                    f"{name}_p": _opt(NUM),
                    f"{name}_moved": BOOL,
                    f"{name}_trend": _opt(trend),
                    f"{name}_reach": _opt(NUM),
                    f"{name}_trend_only": BOOL,
                }
            )
        seen = _obj(
            fields,
            required=(
                "holder",
                "bytes_per_rep",
                "run",
                "verdict",
                "signals",
                "wall_seconds",
                "seconds",
                "peak_rss_bytes",
                "tensorflow",
                f"{registry.RSS.signal}_slope",
            ),
        )
        peer = _obj(
            {
                "peer": STR,
                "holder": STR,
                "bytes_per_rep": INT,
                "run": INT,
                "status": STR,
                "leak": _opt(BOOL),
                "wall_seconds": NUM,
                "max_rss_bytes": _opt(NUM),
                "detail": _opt(STR),
            },
            required=("peer", "holder", "bytes_per_rep", "run", "status", "leak", "wall_seconds"),
        )
        return _obj(
            {
                "format": INT,
                "machine": STR,
                "tensorflow": _opt(STR),
                "settings": ANY_DICT,
                "environment": ANY_DICT,
                "observations": _list(seen),
                "peers": _list(peer),
            },
            required=("format", "environment", "observations"),
        )

    # leakbench bisect's result (leakbench.history.bisect): what the matrix reads of it
    if kind == "bisect":
        build = _obj(
            {
                "version": STR,
                "dist": STR,
                "date": _opt(STR),
                "wheel_bytes": _opt(NUM),
                "tensorflow_git": _opt(STR),
                "git_ref": _opt(STR),
            },
            required=("version",),
        )
        boundary = _obj(
            {"good": build, "bad": build, "compare_url": _opt(STR)}, required=("good", "bad")
        )
        return _obj(
            {
                "pair": STR,
                "variant": {"enum": list(VARIANTS)},
                "status": STR,
                "message": STR,
                "boundary": _opt(boundary),
                "measurements": _list(ANY_DICT),
            },
            required=("pair", "variant", "status"),
        )
    raise ValueError(f"no schema for {kind!r}: one of {', '.join(KINDS_OF_FILE)}")
