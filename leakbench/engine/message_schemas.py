"""The schemas of the child's messages (JSON Schema, draft 7): what leakbench.engine.child sends,
key by key, one schema per kind of message (SCHEMAS), which leakbench.engine.messages checks each
message against before it reads it.

The schemas live here, not in leakbench.analysis.json_schemas, because the engine imports no
analysis (docs/layout.md); they are JSON Schemas all the same.
"""

from __future__ import annotations

from leakbench.metrics import SERIES_UNITS

NUM = {"type": "number"}  # an int or a float, never a bool; finite and bounded: messages.problem
INT = {"type": "integer"}
STR = {"type": "string"}
ANY_DICT = {"type": "object"}


def _opt(schema: dict) -> dict:
    """schema, or null."""
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    return {**schema, "type": [*kinds, "null"]}


def _list(items: dict) -> dict:
    return {"type": "array", "items": items}


def _map(values: dict) -> dict:
    """A dict of any keys, each value of `values`."""
    return {"type": "object", "additionalProperties": values}


def _exact(fields: dict, optional: tuple = ()) -> dict:
    """A dict of exactly `fields`, each required but those in `optional`: the child and the
    parent are the same leakbench, so a key it does not send is no message of it."""
    required = [k for k in fields if k not in optional]
    return {
        "type": "object",
        "properties": fields,
        "required": required,
        "additionalProperties": False,
    }


def _or_na(found: dict) -> dict:
    """`found`, or {"na": why} (an evidence reading that could not be taken); null too where
    `found` allows it."""
    na = {**_exact({"na": STR}), "type": found["type"]}
    return {"type": found["type"], "if": {"required": ["na"]}, "then": na, "else": found}


def _schemas() -> dict[str, dict]:
    """One JSON Schema per kind of message (messages.KINDS), as leakbench.engine.child builds
    them."""
    # probes.sample: every series (leakbench.metrics); RSS always read (the peak subtracts it)
    sample = _exact({k: NUM if k == "rss_bytes" else _opt(NUM) for k in SERIES_UNITS})
    versions = _exact(
        {"python": STR, "tensorflow": STR, "tensorflow_git": _opt(STR)},
        optional=("tensorflow", "tensorflow_git"),
    )
    gpu = _exact(
        {"name": _opt(STR), "compute_capability": _opt(STR), "driver": _opt(STR), "count": INT}
    )
    device = _exact({"device": STR, "gpu": _opt(gpu), "gpu_unavailable": _opt(STR)})
    return {
        "error": _exact(
            {"error": STR, "phase": STR, "exception": STR, "traceback": STR},
            optional=("exception", "traceback"),
        ),
        "result": _exact({"result": _result(sample, versions)}),
        "sample": _exact({"sample": sample, "rep": INT}),
        "progress": _exact({"progress": STR, "rep": INT}, optional=("rep",)),
        "device": _exact({"device": device, "versions": versions}),
        "skipped": _exact({"skipped": STR}),
        "teardown_seconds": _exact({"teardown_seconds": NUM}),
        "phase": _exact({"phase": STR}),
    }


def _result(sample: dict, versions: dict) -> dict:
    """The schema of the result message's "result": a `sample` schema for each sample, the
    `versions` schema, and every evidence reading's."""
    frames = {"frames": _list(STR), "user_frame": _opt(STR)}
    heap = _exact(
        {
            "heap_bytes": _list(NUM),
            "heap_high_water_mark_bytes": _opt(NUM),
            "retained_bytes": NUM,
            "allocations": NUM,
            "top_stacks": _list(_exact({"bytes": NUM, "allocations": NUM, **frames})),
            "stack_growth": _list(_exact({**frames, "bytes": _list(NUM)})),
        }
    )
    stage = _exact({"stage": STR, "inside": _opt(STR), "bytes": _list(NUM), "autotune": _map(NUM)})
    stages = _exact({"readings": _list(INT), "stages": _list(stage), "tensorflow": STR})
    chain = _exact({"type": STR, "chain": _list(STR), "seconds": NUM})
    node = _exact(
        {
            "id": INT,
            "name": STR,
            "buffered_bytes": NUM,
            "buffered_elements": NUM,
            "inputs": _list(INT),
            "growth_bytes": NUM,
        }
    )
    attribution = _exact(
        {"elements": _list(INT), "nodes": _list(node), "seconds": NUM, "tensorflow": STR}
    )
    grown = _exact(
        {"type": STR, "per_repetition": NUM, "baseline": INT, "middle": _opt(INT), "end": INT}
    )
    return _exact(
        {
            "import_baseline": sample,
            "baseline": sample,
            "samples": _list(sample),
            "high_water_mark_bytes": _opt(NUM),
            "python_type_growth": _list(grown),
            "gpu_peak_bytes": _opt(NUM),
            "gpu_unavailable": _opt(STR),
            "trim": _opt(_exact({"rss_before_trim_bytes": NUM, "rss_after_trim_bytes": NUM})),
            "malloc_heap_unavailable": _opt(STR),
            "heap": _opt(heap),
            "stages": _or_na(_opt(stages)),
            "reference_chain": _or_na(_opt(chain)),
            "seconds": _map(NUM),
            "versions": versions,
            # leakbench check's readings: none in a longer look (no evidence)
            "diagnostics": _opt(
                _exact(
                    {"target_kind": _opt(STR), "attribution": _or_na(attribution)},
                    optional=("target_kind", "attribution"),
                )
            ),
            "repetition": _opt(STR),
        }
    )


SCHEMAS = _schemas()
