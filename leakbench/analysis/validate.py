"""One schema per kind of file leakbench reads, checked once where the file is read.

Kinds: a record (results/records/<machine>/tf-<v>.jsonl, `--format json` output; every schema
leakbench.analysis.schema migrates, so a key newer engines add is optional), a resume file of
`leakbench repeat` (leakbench.repeat.repeatability) and of `leakbench calibrate`
(leakbench.calibrate.calibration), and a result of `leakbench bisect`
(results/bisect/<machine>/*.json). Each is a JSON Schema (schema_of, in
leakbench.analysis.json_schemas) compiled once by fastjsonschema: types as JSON has them (no "5" for
5, no true for 1, a list where a list is kept), unknown keys allowed (a newer leakbench's extras),
known verdicts (verdict.VERDICTS) and variants (schema_parts.VARIANTS) only. Every value of the
whole document, known key or not, must also be JSON as leakbench writes it: numbers finite (Python's
json reads NaN, Infinity and 1e400, which is infinity) and strings valid UTF-8 (json reads a lone
surrogate, "\\ud800", that no UTF-8 can encode), dict keys too.

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
from typing import Any

# re-exported: the tests read the calibration's signals here
from leakbench import jsonfile
from leakbench.analysis.json_schemas import CALIBRATION_SIGNALS as CALIBRATION_SIGNALS
from leakbench.analysis.json_schemas import schema_of

_SHORT = 40  # characters of a bad value shown in a message


def problem(kind: str, found: Any) -> str | None:
    """The first problem of `found` (parsed JSON) as a
    file of `kind` (json_schemas.KINDS_OF_FILE), one line, or None."""
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
    found = jsonfile.bad_value(value, where)
    if found is None:
        return None
    at, what, culprit = found
    if what == jsonfile.NOT_FINITE:
        return (
            f"{_where(at)}: {culprit} is not a finite number (JSON has no NaN or infinity; "
            "a number past 1.8e308 reads as infinity)"
        )
    kind = "key" if what == jsonfile.BAD_KEY else "string"
    return f"{_where(at)}: a {kind} with {_surrogate(culprit)}"


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
        return f"{where}: must be {jsonfile.type_words(e.rule_definition)} (got {_short(e.value)})"
    return f"{where}: {e.message.split(' ', 1)[-1]} (got {_short(e.value)})"


def _short(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= _SHORT else shown[:_SHORT] + "…"


@functools.cache
def _validator(kind: str):
    """The compiled validator of `kind` (fastjsonschema: the schema made Python code once, then as
    fast as a hand-written check)."""
    import fastjsonschema

    return fastjsonschema.compile(schema_of(kind))


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
