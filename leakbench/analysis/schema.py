"""The record's type, its JSON form, and migration of older schemas.

A record (leakbench.analysis.record builds it) is one JSON object per
measured scenario variant. Record (leakbench.analysis.record_type, with SCHEMA
and REQUIRED) names every key and its type; the
engine, the store (leakbench.history) and every view read records through
`loads`, which migrates an older schema to SCHEMA, so they never guess at a
missing key. Record is the one source of a record's keys: the JSON Schema that
validates a record (leakbench.analysis.json_schemas) is derived from it, its
required keys are REQUIRED, and a key added here is validated there.

Schemas:
    1  the first committed records (TF 2.12-2.21, results/records/)
    2  adds `expects` and `requires` (the contract's EXPECTED and REQUIRES,
       copied like `reported`: what the variant should read is judged from the
       record alone, leakbench.expectation), and the sample series
       `malloc_used_bytes` (heap_used_bytes + mmap_used_bytes) in every run.
    3  adds `decision`: the number the verdict rests on (leakbench.analysis.judge.decision), written
       once by the engine; a record of schema 2 gets it computed from its own metrics and looks
       by the same function as it is read.
    4  adds `engine`: which engine made the record (leakbench.version: package version, commit,
       source hash); a record of schema 3 or older reads None there ("an engine that did not
       name itself"), and views flag it beside a record that names one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from leakbench import jsonfile
from leakbench.analysis import validate
from leakbench.analysis.judge import protocol
from leakbench.analysis.record_type import REQUIRED, SCHEMA, Record


def first_run(rec: Mapping[str, Any] | None) -> dict:
    """A record's first (default-size) run, {} for None or a record without runs."""
    return ((rec or {}).get("runs") or [{}])[0]


class SchemaError(ValueError):
    """Not a record this leakbench can read. One line."""


def _from_1(rec: dict[str, Any]) -> dict[str, Any]:
    # Schema 1 had no EXPECTED in the contract, and skipped only what REQUIRES a device.
    rec["expects"] = None
    rec["requires"] = "GPU" if rec["verdict"] == "skipped" else None
    looks = [rec[k]["run"] for k in ("confirmation", "extension") if (rec.get(k) or {}).get("run")]
    for run in [*(rec.get("runs") or []), *looks]:
        series = run.get("series") or {}
        if "heap_used_bytes" in series and "malloc_used_bytes" not in series:
            mapped = series.get("mmap_used_bytes") or [None] * len(series["heap_used_bytes"])
            series["malloc_used_bytes"] = [
                h + m if h is not None and m is not None else None
                for h, m in zip(series["heap_used_bytes"], mapped)
            ]
    rec["schema"] = 2
    return rec


def _from_2(rec: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = dict(protocol.with_decision(rec))
    found["schema"] = 3
    return found


def _from_3(rec: dict[str, Any]) -> dict[str, Any]:
    # Schema 3 records did not say which engine made them: nothing to recover.
    return {**rec, "engine": None, "schema": 4}


_MIGRATIONS = {1: _from_1, 2: _from_2, 3: _from_3}


def migrate(rec: dict[str, Any]) -> Record:
    """The record in SCHEMA's form. Raises SchemaError for a newer schema, a non-record, or a record
    whose values are not of its schema
    (leakbench.analysis.validate: the first problem, one line)."""
    if not isinstance(rec, dict) or any(k not in rec for k in REQUIRED):
        raise SchemaError(f"not a leakbench record (needs {', '.join(REQUIRED)})")
    if (
        isinstance(rec["schema"], int)
        and not isinstance(rec["schema"], bool)
        and rec["schema"] > SCHEMA
    ):
        raise SchemaError(
            f"record schema {rec['schema']}; this leakbench reads schemas 1 to {SCHEMA}"
        )
    problem = validate.problem("record", rec)  # every schema's keys: a newer one is optional
    if problem:
        raise SchemaError(f"not a valid record: {problem}")
    while rec["schema"] != SCHEMA:
        step = _MIGRATIONS.get(rec["schema"]) if isinstance(rec["schema"], int) else None
        if step is None:
            raise SchemaError(
                f"record schema {rec['schema']}; this leakbench reads schemas 1 to {SCHEMA}"
            )
        rec = step(rec)
    return rec  # type: ignore[return-value]


def loads(line: str) -> Record:
    """One record from a JSON line, checked (leakbench.analysis.validate) and migrated. Raises
    SchemaError (corrupt JSON, an integer past Python's 4,300 digits or nesting past its recursion
    limit included; not a record; newer schema; a value of another type, an unknown verdict or
    variant, a number that is not finite, a string that is not UTF-8)."""
    try:
        found = jsonfile.parse(line)
    except jsonfile.BadJSON as e:
        raise SchemaError(f"corrupt JSON ({e.msg})") from None
    return migrate(found)


def dumps(rec: Record) -> str:
    """One JSON line (no newline)."""
    return json.dumps(rec)
