"""Memory per tf.data stage: evidence read inside the measured child in every measurement, as
JSON data (the parent turns it into text and hints, leakbench.check.pipeline).

`read_stages(state)`: bytes buffered per tf.data transformation, from
`tf.data.experimental.get_model_proto(iterator)` (the autotune model's ModelProto: one node per
transformation with buffered_bytes and buffered_elements). A new iterator over the pipeline's
dataset is read at READING_ELEMENTS: after a few elements, and after more; a stage whose bytes
rose between the readings is growing. An in-memory cache() shows as a MemoryCacheImpl node whose
buffered bytes are the whole cache (docs/measurements.md, "TensorFlow"). `stages` (run["stages"])
and `attribution_from` (check's diagnostics.attribution) are derived from these readings.
"""

from __future__ import annotations

import sys
import time

FIRST_ELEMENTS = 4  # elements consumed before the first model reading
MORE_ELEMENTS = 60  # and before the second
SETTLE_SECONDS = 0.2  # let prefetch/parallel stages fill their buffers before reading
STAGES_SECONDS = 1.0  # read_stages takes no further reading once this much has passed


def find_dataset(state, depth: int = 0):
    """The tf.data.Dataset a pipeline's state is or
    holds (a tuple, list or dict of it), else None."""
    tf = sys.modules.get("tensorflow")
    if tf is None:
        return None
    if isinstance(state, tf.data.Dataset):
        return state
    if depth < 2:
        items = (
            state.values()
            if isinstance(state, dict)
            else state
            if isinstance(state, (tuple, list))
            else ()
        )
        for item in list(items)[:16]:
            found = find_dataset(item, depth + 1)
            if found is not None:
                return found
    return None


READING_ELEMENTS = (FIRST_ELEMENTS, 32, FIRST_ELEMENTS + MORE_ELEMENTS)  # run["stages"]'s readings


def read_stages(state, goals=READING_ELEMENTS) -> dict:
    """Read the autotune model of one fresh iterator over the state's dataset at `goals` elements.

    Returns {"readings": [(elements consumed, nodes)], "seconds": s, "tensorflow": version},
    nodes as `_nodes` gives them (buffered bytes, elements, inputs, parameters), or {"na": why}:
    TensorFlow not imported, get_model_proto missing (an older TensorFlow: the reason names its
    version; present in 2.21, docs/measurements.md, "TensorFlow"),
    the target not a dataset, the API failing, or the dataset ending before one element.
    A finite dataset is read at no more than half its cardinality (its buffers drain at the end), so
    a short one gives fewer readings (a dataset of 32 batches is read at 4 and 16 of them; one of
    128 or more, at each of READING_ELEMENTS).
    Each reading waits SETTLE_SECONDS first. No reading starts after STAGES_SECONDS, but the first
    one waits for the pipeline's first elements, so a large shuffle buffer fills before it (what
    the readings cost: docs/measurements.md, "What the evidence costs").

    Why a fresh iterator after the measured repetitions, not the repetitions' own iterators or
    readings between samples: the repetitions' iterators are gone when a repetition ends, and a new
    iterator made between two samples would enter the next sample (its threads and buffers). An
    in-memory cache is shared by every iterator over its dataset, so it reads full from the first
    reading on (filled in warm-up): memory per stage as the pipeline holds it after the repetitions.
    """
    tf = sys.modules.get("tensorflow")
    if tf is None:
        return {"na": "the target does not use TensorFlow"}
    get = getattr(tf.data.experimental, "get_model_proto", None)
    if get is None:
        return {
            "na": (
                "tf.data.experimental.get_model_proto does "
                f"not exist in TensorFlow {tf.__version__}"
            )
        }
    ds = find_dataset(state)
    if ds is None:
        return {"na": "the target is not a dataset (a repetition function): no pipeline to read"}
    start = time.perf_counter()
    goals = sorted(set(goals))
    try:
        cardinality = int(ds.cardinality())
        if cardinality >= 0:  # finite and known: read well before the end, where buffers drain
            goals = (
                sorted({max(1, min(g, cardinality // 2)) for g in goals}) if cardinality > 1 else []
            )
        iterator = iter(ds)
    except Exception as err:  # noqa: BLE001 - a dataset that cannot be iterated again: say why
        return {
            "na": f"a fresh iterator failed: {type(err).__name__}: {str(err).splitlines()[0][:200]}"
        }
    consumed = 0
    readings: list[tuple[int, list]] = []
    try:
        for goal in goals:
            if readings and time.perf_counter() - start > STAGES_SECONDS:
                break  # a slow pipeline: fewer readings rather than a longer child
            while consumed < goal:
                next(iterator)
                consumed += 1
            time.sleep(SETTLE_SECONDS)
            readings.append((consumed, _nodes(get(iterator))))
    except StopIteration:
        pass
    except Exception as err:  # autotune off, or an iterator kind the API does not know
        return {
            "na": f"get_model_proto failed: {type(err).__name__}: {str(err).splitlines()[0][:200]}"
        }
    finally:
        del iterator
    if not readings:
        return {"na": "the dataset ended before an element could be read"}
    return {
        "readings": readings,
        "seconds": time.perf_counter() - start,
        "tensorflow": tf.__version__,
    }


def stage_name(name: str) -> str:
    """A transformation's name as shown: MemoryCacheImpl
    holds MemoryCache's data, so it reads MemoryCache."""
    return name[: -len("Impl")] if name.endswith("Impl") else name


def stages(found: dict) -> dict:
    """run["stages"] from `read_stages`: memory per tf.data stage at each reading.

    {"readings": [elements consumed at each reading],
     "stages": [{"stage": name, "inside": the parent stage's name or None (outermost),
                 "bytes": [bytes buffered, one per reading (0 where the stage was absent)],
                 "autotune": {parameter: value at the last reading} (parallelism, buffer_size, ...:
                             the values AUTOTUNE chose, and fixed ones)}],
     "tensorflow": version}, outermost stage first; or {"na": why} as read_stages says.
    Nodes of one name under one parent (the inputs of an interleave) are summed.
    """
    if "na" in found:
        return {"na": found["na"]}
    readings = found["readings"]
    rows: dict[tuple, dict] = {}
    for index, (_, nodes) in enumerate(readings):
        by_id = {n["id"]: n for n in nodes}
        parents = {i: n["id"] for n in nodes for i in n["inputs"]}
        for n in nodes:
            if n["name"] == "Root":
                continue
            parent = by_id.get(parents.get(n["id"]))
            inside = stage_name(parent["name"]) if parent and parent["name"] != "Root" else None
            key = (_depth(n["id"], parents), stage_name(n["name"]), inside)
            row = rows.setdefault(
                key,
                {"stage": key[1], "inside": inside, "bytes": [0] * len(readings), "autotune": {}},
            )
            row["bytes"][index] += n["buffered_bytes"]
            if index == len(readings) - 1:
                row["autotune"].update(n["parameters"])
    return {
        "readings": [r[0] for r in readings],
        "stages": [rows[k] for k in sorted(rows, key=lambda k: k[0])],
        "tensorflow": found["tensorflow"],
    }


def _depth(node_id: int, parents: dict) -> int:
    depth = 0
    while node_id in parents and depth < 1000:
        node_id, depth = parents[node_id], depth + 1
    return depth


def attribution_from(found: dict) -> dict:
    """check's diagnostics.attribution from `read_stages`: per node, the most it held at the first
    or last reading and its rise between them (bytes); {"elements": [first, last], "nodes",
    "seconds", "tensorflow"} or {"na": why}."""
    if "na" in found:
        return {"na": found["na"]}
    readings = found["readings"]
    first, last = readings[0], readings[-1]
    before = {n["id"]: n["buffered_bytes"] for n in first[1]}
    merged = {n["id"]: n for n in first[1]}
    for n in last[1]:
        held = max(n["buffered_bytes"], before.get(n["id"], 0))
        merged[n["id"]] = {
            **n,
            "buffered_bytes": held,
            "buffered_elements": max(
                n["buffered_elements"], merged.get(n["id"], {}).get("buffered_elements", 0)
            ),
        }
    after = {n["id"]: n["buffered_bytes"] for n in last[1]}
    nodes = [
        {k: v for k, v in n.items() if k != "parameters"}
        | {"growth_bytes": after[i] - before[i] if i in after and i in before else 0}
        for i, n in sorted(merged.items())
    ]
    return {
        "elements": [first[0], last[0]],
        "nodes": nodes,
        "seconds": found["seconds"],
        "tensorflow": found["tensorflow"],
    }


def _nodes(proto) -> list[dict]:
    nodes = []
    for key, node in proto.nodes.items():
        nodes.append(
            {
                "id": int(key),
                "name": node.name,
                "buffered_bytes": int(node.buffered_bytes),
                "buffered_elements": int(node.buffered_elements),
                "inputs": [int(i) for i in node.inputs],
                "parameters": {q.name: _number(q.value) for q in node.parameters},
            }
        )
    return sorted(nodes, key=lambda n: n["id"])


def _number(value: float):
    value = float(value)
    return int(value) if value.is_integer() else value
