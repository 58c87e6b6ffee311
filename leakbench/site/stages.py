"""Per-stage memory and what keeps it alive: two sections of a lesson, from
keys newer records have on their first run (records without them: the lesson
says plainly it is not in this record).

rec["runs"][0]["stages"] is either
    {"readings": [elements consumed at each reading],
     "stages": [{"stage": name, "inside": the parent stage's name or None,
                 "bytes": [bytes buffered, one per reading], "autotune": {param: value}}],
     "tensorflow": the TF version}
or {"na": why it could not be read}.
rec["runs"][0]["reference_chain"] is {"type": the leaking object's type, "chain":
[str, ...] from a root to it, "seconds": the search's duration} or {"na": why}.
"""

from __future__ import annotations

from typing import Any

from leakbench.analysis.schema import first_run
from leakbench.catalog import VARIANT_DIRS
from leakbench.units import format_bytes

STAGES_ABSENT = (
    "not in this record: it was measured before leakbench recorded memory per pipeline stage"
)
CHAIN_ABSENT = "not in this record: it was measured before leakbench searched for a reference chain"
# both variants' chains start at one root: what the fix keeps too is not what holds the leak
SHARED = (
    "not shown: both variants reach {type} from {root}, so that root is not what holds the leak "
    "(the fix keeps it too)"
)


def _depth(stage: dict, by_name: dict) -> int:
    depth, seen, parent = 0, set(), stage.get("inside")
    while parent and parent in by_name and parent not in seen:
        seen.add(parent)
        depth, parent = depth + 1, by_name[parent].get("inside")
    return depth


def stage_table(recs: dict, variants: tuple = tuple(VARIANT_DIRS)) -> dict:
    """The per-stage table of a lesson (or a check
    report). recs: variant -> record or None; variants:
    the ones shown, in order.

    Returns {"notes": [(variant, why there is no stage data: "na" reason, absent, not measured)],
    "readings": {variant: [elements consumed]}, "tensorflow": {variant: version},
    "rows": [{"stage", "inside", "depth": nesting (0 outermost), variant: None or {"last": bytes at
    the last reading, in words, "change": since the first reading, signed, "autotune": "param=value,
    ..." or ""}}]} (rows in the leaky variant's order, then the fixed one's other stages; [] without
    stage data). Missing keys read as empty; raises
    TypeError only for a byte value that is no number.
    """
    found: dict[str, Any] = {"notes": [], "readings": {}, "tensorflow": {}, "rows": []}
    rows: dict = {}
    for variant in variants:
        rec = recs.get(variant)
        data = first_run(rec).get("stages")
        if not rec or data is None or "na" in data:
            found["notes"].append(
                (
                    variant,
                    "not measured"
                    if not rec
                    else STAGES_ABSENT
                    if data is None
                    else f"n/a: {data['na']}",
                )
            )
            continue
        found["readings"][variant] = list(data.get("readings") or [])
        found["tensorflow"][variant] = data.get("tensorflow")
        stages = data.get("stages") or []
        by_name = {s.get("stage"): s for s in stages}
        for s in stages:
            key = (s.get("stage"), s.get("inside"))
            row = rows.setdefault(
                key,
                {
                    "stage": key[0],
                    "inside": key[1],
                    "depth": _depth(s, by_name),
                    **{v: None for v in variants},
                },
            )
            values = [b for b in (s.get("bytes") or []) if b is not None]
            change = values[-1] - values[0] if len(values) > 1 else None
            sign = "+" if change is None or change >= 0 else "−"
            row[variant] = {
                "last": format_bytes(values[-1] if values else None),
                "change": "—" if change is None else sign + format_bytes(abs(change)),
                "autotune": ", ".join(f"{k}={v}" for k, v in (s.get("autotune") or {}).items()),
            }
    found["rows"] = list(rows.values())
    return found


def reference_chains(recs: dict, variants: tuple = tuple(VARIANT_DIRS)) -> list[dict]:
    """What keeps the leak alive, per variant: [{"variant", "type", "chain": [str], "seconds"} or
    {"variant", "why": the "na" reason, CHAIN_ABSENT, SHARED or "not measured"}]. Where every
    variant's chain starts at the same root (a TensorFlow module's registry in stateful_map's
    records), it is not the holder: the fix has it too, so each says SHARED instead."""
    found = []
    for variant in variants:
        rec = recs.get(variant)
        chain = first_run(rec).get("reference_chain")
        if not rec or chain is None or "na" in chain:
            found.append(
                {
                    "variant": variant,
                    "why": "not measured"
                    if not rec
                    else CHAIN_ABSENT
                    if chain is None
                    else f"n/a: {chain['na']}",
                }
            )
        else:
            found.append(
                {
                    "variant": variant,
                    "type": chain.get("type"),
                    "chain": list(chain.get("chain") or []),
                    "seconds": chain.get("seconds"),
                }
            )
    roots = {(c["chain"] or [None])[0] for c in found if "chain" in c}
    if len(found) > 1 and all("chain" in c for c in found) and len(roots) == 1:
        root = roots.pop()
        return [
            {"variant": c["variant"], "why": SHARED.format(type=c["type"], root=root)}
            for c in found
        ]
    return found
