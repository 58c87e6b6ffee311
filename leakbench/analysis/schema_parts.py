"""The parts every JSON Schema (draft 7) of leakbench.analysis.json_schemas is built of: the types
of a value, a dict, a list, a trend, the variants, and a TypedDict's schema (`from_typed`).
"""

from __future__ import annotations

import typing
from dataclasses import fields

from leakbench.analysis.estimate import Trend
from leakbench.catalog import VARIANT_DIRS

# The variants a record may hold: the catalog's pairs, a user's file (`leakbench run FILE.py`,
# calibration's designed cases) and `leakbench check`'s target.
VARIANTS = (*VARIANT_DIRS, "file", "check")
TREND_FIELDS = tuple(f.name for f in fields(Trend))  # a trend as record.metrics stores it

NUM = {"type": "number"}  # an int or a float, never a bool; finite: values_problem
INT = {"type": "integer"}
STR = {"type": "string"}
BOOL = {"type": "boolean"}
ANY_DICT = {"type": "object"}
ANY_LIST = {"type": "array"}


def opt(schema: dict) -> dict:
    """schema, or null: null added to its type (properties, required and items hold for a dict or a
    list only), not anyOf, which fastjsonschema tries branch by branch through exceptions (slow)."""
    return {**schema, "type": [schema["type"], "null"]}


def list_of(items: dict) -> dict:
    return {"type": "array", "items": items}


def map_of(values: dict) -> dict:
    """A dict of any keys, each value of `values`."""
    return {"type": "object", "additionalProperties": values}


def obj(fields: dict, required: tuple = ()) -> dict:
    """A dict of `fields` (each optional but those in
    `required`); other keys allowed, of any value."""
    return {"type": "object", "properties": fields, "required": list(required)}


def trend() -> dict:
    """estimate.Trend's fields, and its unit; required: what the verdict reads of every trend
    (metrics.rate, verdict.moved); the rises and net rate came later (older records lack them)."""
    return obj(
        {**dict.fromkeys(TREND_FIELDS, NUM), "unit": STR},
        required=("slope", "low", "high", "p_increasing", "first_half", "second_half"),
    )


_TYPES = {int: INT, float: NUM, str: STR, bool: BOOL, dict: ANY_DICT, list: ANY_LIST}


def json_type(hint) -> dict:
    """A TypedDict annotation (int, float, str, bool, dict, list[X], X | None) as JSON Schema."""
    args = typing.get_args(hint)
    if type(None) in args:
        (inner,) = (a for a in args if a is not type(None))
        return opt(json_type(inner))
    if typing.get_origin(hint) is list and args:
        return list_of(json_type(args[0]))
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
    return obj({k: detail.get(k) or json_type(hint) for k, hint in hints.items()}, required)
