"""One schema per kind of file leakbench reads, checked once where the file is read (issue 20).

Kinds: a record (results/records/<machine>/tf-<v>.jsonl, `--json` output; every schema
leakbench.analysis.schema migrates, so a key newer engines add is optional), a resume file of
`leakbench repeat` (leakbench.repeat.run) and of `leakbench calibrate` (leakbench.calibrate.run),
and a result of `leakbench bisect` (results/bisect/<machine>/*.json). Each is a JSON Schema
(schema_of) compiled once by fastjsonschema: types as JSON has them (no "5" for 5, no true for 1,
a list where a list is kept), unknown keys allowed (a newer leakbench's extras), known verdicts
(verdict.VERDICTS) and variants (VARIANTS) only. Every value of the whole document, known key or
not, must also be JSON as leakbench writes it: numbers finite (Python's json reads NaN, Infinity
and 1e400, which is infinity) and strings valid UTF-8 (json reads a lone surrogate, "\\ud800",
that no UTF-8 can encode), dict keys too.

The readers call `problem(kind, found)` once on what they parsed and raise their own one-line
error with its answer, so that every view downstream (metrics, compare, matrix, the site,
report-back, ...) can trust the types. The answer names the first problem only, with where it
is: "runs[0].seconds.import: must be a number (got 'x')".

Why fastjsonschema and not pydantic v2: pydantic 2 needs typing_extensions >= 4.6.1, which
tensorflow-cpu 2.13.1 (a column of the asv matrix, whose environments read records) refuses
(< 4.6.0); fastjsonschema depends on nothing. The schemas are compiled on first use: a CLI that
reads no file pays nothing.
"""

from __future__ import annotations

import functools
import json
import math
from typing import Any

from leakbench import metrics as registry
from leakbench.analysis.verdict import VERDICTS
from leakbench.catalog import VARIANT_DIRS
from leakbench.contract import KINDS

# The variants a record may hold: the catalog's pairs, a user's file (`leakbench run FILE.py`,
# calibration's designed cases) and `leakbench check`'s target.
VARIANTS = (*VARIANT_DIRS, "file", "check")
KINDS_OF_FILE = ("record", "repeat", "calibrate", "bisect")
# leakbench.calibrate.stats.SIGNALS' names, derived the
# same way (that module is not imported: numpy, scipy)
CALIBRATION_SIGNALS = tuple(m.signal for m in registry.metrics_in(registry.CALIBRATION))
_SHORT = 40  # characters of a bad value shown in a message


def problem(kind: str, found: Any) -> str | None:
    """The first problem of `found` (parsed JSON) as a
    file of `kind` (KINDS_OF_FILE), one line, or None."""
    return values_problem(found) or _shape_problem(kind, found)


def values_problem(found: Any) -> str | None:
    """Where `found` holds a number that is not finite or a string that is not valid UTF-8, or None.

    One C pass (json.dumps refuses NaN and infinity, UTF-8 a lone surrogate; about as fast as
    json.loads), and a walk to say where only when it fails."""
    try:
        json.dumps(found, allow_nan=False, ensure_ascii=False, check_circular=False).encode("utf-8")
        return None
    except RecursionError:
        return "nested too deeply"
    except ValueError:  # UnicodeEncodeError is one
        return _locate(found, ()) or "holds a value JSON has not"


def _locate(value: Any, where: tuple) -> str | None:
    if isinstance(value, float):
        if not math.isfinite(value):
            return (
                f"{_where(where)}: {value} is not a finite number (JSON has no NaN or infinity; "
                "a number past 1.8e308 reads as infinity)"
            )
    elif isinstance(value, str):
        if not _utf8(value):
            return f"{_where(where)}: a string with {_surrogate(value)}"
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and not _utf8(key):
                return f"{_where(where)}: a key with {_surrogate(key)}"
            if (found := _locate(item, (*where, key))) is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if (found := _locate(item, (*where, i))) is not None:
                return found
    return None


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _surrogate(text: str) -> str:
    lone = next(c for c in text if 0xD800 <= ord(c) <= 0xDFFF)
    return f"a lone surrogate (\\u{ord(lone):04x}), not valid UTF-8"


def _where(where: tuple) -> str:
    """('runs', 0, 'seconds') -> 'runs[0].seconds'; () -> 'the top level'."""
    out = ""
    for part in where:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "the top level"


def _shape_problem(kind: str, found: Any) -> str | None:
    import fastjsonschema

    try:
        _validator(kind)(found)
    except fastjsonschema.JsonSchemaValueException as e:
        return _message(e)
    except RecursionError:
        return "nested too deeply"
    return None


def _message(e) -> str:
    """One line of a fastjsonschema error: where, then what
    ("runs[0].seconds.import: must be a number (got 'x')")."""
    where = e.name[len("data") :].lstrip(".") or "the top level"  # "data.runs[0].seconds"
    if e.rule == "required":
        missing = [k for k in e.rule_definition if k not in (e.value or {})]
        if not missing:
            return f"{where}: a key is missing"
        return f"{missing[0] if where == 'the top level' else f'{where}.{missing[0]}'}: missing"
    if e.rule == "enum":
        return f"{where}: {_short(e.value)} is not one of {', '.join(map(str, e.rule_definition))}"
    if e.rule == "type":
        types: list[Any] = (
            e.rule_definition if isinstance(e.rule_definition, list) else [e.rule_definition]
        )
        return (
            f"{where}: must be {' or '.join(_TYPE_WORDS.get(t, t) for t in types)} "
            f"(got {_short(e.value)})"
        )
    return f"{where}: {e.message.split(' ', 1)[-1]} (got {_short(e.value)})"


_TYPE_WORDS = {
    "object": "a dict",
    "array": "a list",
    "number": "a number",
    "integer": "an integer",
    "string": "a string",
    "boolean": "true or false",
    "null": "null",
}


def _short(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= _SHORT else shown[:_SHORT] + "…"


@functools.cache
def _validator(kind: str):
    """The compiled validator of `kind` (fastjsonschema: the schema made Python code once, then as
    fast as a hand-written check)."""
    import fastjsonschema

    return fastjsonschema.compile(schema_of(kind))


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


def schema_of(kind: str) -> dict:
    """The JSON Schema of a file of `kind` (KINDS_OF_FILE)."""
    trend = _obj(
        {
            "slope": NUM,
            "low": NUM,
            "high": NUM,
            "p_increasing": NUM,
            "p_value": NUM,
            "first_half": NUM,
            "second_half": NUM,
            "unit": STR,
        },
        required=("slope",),
    )
    if kind == "record":
        scaling = _obj(
            {"sizes": _list(NUM), "peaks_bytes": _list(_opt(NUM)), "exponent": _opt(NUM)}
        )
        metric_fields = {
            m.key: _opt(trend) if (m.series or m.key == "retained_heap") else _opt(NUM)
            for m in registry.METRICS
        }
        metric_fields.update(
            {
                k: _opt(NUM)
                for k in (
                    "trim_returned_bytes",
                    "rss_growth_bytes",
                    "malloc_free_growth_bytes",
                    "rss_held_bytes",
                    "malloc_free_held_bytes",
                    "heap_high_water_mark_bytes",
                    "peak_above_baseline_bytes",
                    "gpu_peak_bytes",
                    "seconds_per_repetition",
                )
            }
        )
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
                "import_baseline": _opt(readings),
                "baseline": _opt(readings),
                "series": _map(_list(_opt(NUM))),
                "high_water_mark_bytes": _opt(NUM),
                "gpu_peak_bytes": _opt(NUM),
                "gpu_unavailable": _opt(STR),
                "peak_above_baseline_bytes": _opt(NUM),
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
        confirmation = _obj(
            {"reps": INT, "status": STR, "signals": _opt(_list(STR)), "run": run, "seconds": NUM}
        )
        return _obj(
            {
                "schema": INT,
                "pair": STR,
                "variant": {"enum": list(VARIANTS)},
                "path": STR,
                "title": STR,
                "source": STR,
                "reported": _opt(reported),
                "expects": _opt(STR),
                "requires": _opt(STR),
                "kind": {"enum": list(KINDS)},
                "repetition": STR,
                "size_param": STR,
                "params": ANY_DICT,
                "settings": settings,
                "environment": environment,
                "runs": _list(run),
                "metrics": _opt(_obj(metric_fields)),  # null: nothing measured, as {}
                "signals": _list(STR),
                "verdict": {"enum": list(VERDICTS)},
                "teardown_stalled": _opt(STR),
                "phase": _opt(STR),
                "error": _opt(STR),
                "skip_reason": _opt(STR),
                "seconds": NUM,
                "confirmation": confirmation,
                "flamegraph": ANY_DICT,
                "diagnosis": ANY_DICT,
            },
            required=("schema", "pair", "variant", "verdict", "metrics", "environment"),
        )

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
                "rss_slope",
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


def check_resumed(
    found: dict | None, kind: str, out, what: str, fmt: int, error: type[Exception]
) -> dict | None:
    """`found` (what jsonfile.resumable returned for `out`: None when there is nothing to resume)
    once it passes the schema of `kind` ("repeat", "calibrate"). Raises `error` with one line, the
    first problem named, and the file left as it is, when it does not."""
    if found is not None and (why := problem(kind, found)):
        raise error(
            f"{out} is not {what} of format {fmt}: {why}; it is kept: use another --out, "
            "or --fresh to measure anew and replace it"
        )
    return found
