"""Evidence for `leakbench check`, gathered inside the measured child.

Three cheap readings, each a dict of JSON data (the parent turns them into
text and hints, leakbench.check.run):

- `type_counts()`: Python objects tracked by the collector, by type
  (qualified name). Taken at the baseline and after the measured
  repetitions: the difference says which types grew. ~0.1 s with TensorFlow
  imported.
- `attribution(state)`: bytes buffered per tf.data transformation, from
  `tf.data.experimental.get_model_proto(iterator)` (the autotune model's
  ModelProto: one node per transformation with buffered_bytes and
  buffered_elements). A new iterator over the pipeline's dataset is read
  twice: after a few elements, and after more; a stage whose bytes rose
  between the readings is growing. An in-memory cache() shows as a
  MemoryCacheImpl node whose buffered bytes are the whole cache (TF 2.21).
- `heap_stacks(reader)`: the largest allocations still live at the end of
  the memray heap pass, by Python stack.
"""
from __future__ import annotations

import collections
import gc
import heapq
import os
import sys
import time
from pathlib import Path

FIRST_ELEMENTS = 4     # elements consumed before the first model reading
MORE_ELEMENTS = 60     # and before the second
SETTLE_SECONDS = 0.2   # let prefetch/parallel stages fill their buffers before reading
TOP_STACKS = 5
STACK_FRAMES = 6


def type_counts() -> dict:
    """Live objects tracked by the garbage collector, counted by type name."""
    gc.collect()
    return dict(collections.Counter(type(o).__qualname__ for o in gc.get_objects()))


TOP_TYPES = 8
TYPE_GROWTH_MIN = 3.0  # objects per repetition: below verdict.OBJECT_SLOPE_MIN, to show what moved


def type_growth(before: dict | None, after: dict | None, reps: int) -> list[dict]:
    """Python types whose live count grew, most per repetition first (at most TOP_TYPES).

    before, after: type_counts() at the baseline and after `reps` measured
    repetitions. Each entry: type, per_repetition (objects/repetition), baseline, end.
    """
    if not before or not after or reps <= 0:
        return []
    grown = [{"type": name, "per_repetition": (count - before.get(name, 0)) / reps,
              "baseline": before.get(name, 0), "end": count}
             for name, count in after.items() if (count - before.get(name, 0)) / reps >= TYPE_GROWTH_MIN]
    return sorted(grown, key=lambda t: -t["per_repetition"])[:TOP_TYPES]


def find_dataset(state, depth: int = 0):
    """The tf.data.Dataset a pipeline's state is or holds (a tuple, list or dict of it), else None."""
    tf = sys.modules.get("tensorflow")
    if tf is None:
        return None
    if isinstance(state, tf.data.Dataset):
        return state
    if depth < 2:
        items = state.values() if isinstance(state, dict) else state if isinstance(state, (tuple, list)) else ()
        for item in list(items)[:16]:
            found = find_dataset(item, depth + 1)
            if found is not None:
                return found
    return None


def attribution(state) -> dict:
    """Buffered bytes per transformation of the state's dataset, read twice; or why not ("na")."""
    tf = sys.modules.get("tensorflow")
    if tf is None:
        return {"na": "the target does not use TensorFlow"}
    get = getattr(tf.data.experimental, "get_model_proto", None)
    if get is None:
        return {"na": f"tf.data.experimental.get_model_proto does not exist in TensorFlow {tf.__version__}"}
    ds = find_dataset(state)
    if ds is None:
        return {"na": "the target is not a dataset (a repetition function): no pipeline to read"}
    start = time.perf_counter()
    cardinality = int(ds.cardinality())
    goals = [FIRST_ELEMENTS, FIRST_ELEMENTS + MORE_ELEMENTS]
    if cardinality >= 0:  # finite and known: read well before the end, where buffers drain
        goals = sorted({max(1, min(g, cardinality // 2)) for g in goals}) if cardinality > 1 else []
    iterator = iter(ds)
    consumed = 0
    readings = []
    try:
        for goal in goals:
            while consumed < goal:
                next(iterator)
                consumed += 1
            time.sleep(SETTLE_SECONDS)
            readings.append((consumed, _nodes(get(iterator))))
    except StopIteration:
        pass
    except Exception as err:  # autotune off, or an iterator kind the API does not know
        return {"na": f"get_model_proto failed: {type(err).__name__}: {str(err).splitlines()[0][:200]}"}
    finally:
        del iterator
    if not readings:
        return {"na": "the dataset ended before an element could be read"}
    # Per node: the most it held at either reading, and how much that rose from the first to the last.
    first, last = readings[0], readings[-1]
    before = {n["id"]: n["buffered_bytes"] for n in first[1]}
    merged = {n["id"]: n for n in first[1]}
    for n in last[1]:
        held = max(n["buffered_bytes"], before.get(n["id"], 0))
        merged[n["id"]] = {**n, "buffered_bytes": held,
                           "buffered_elements": max(n["buffered_elements"],
                                                    merged.get(n["id"], {}).get("buffered_elements", 0))}
    after = {n["id"]: n["buffered_bytes"] for n in last[1]}
    nodes = [{**n, "growth_bytes": after[i] - before[i] if i in after and i in before else 0}
             for i, n in sorted(merged.items())]
    return {"elements": [first[0], last[0]], "nodes": nodes, "seconds": time.perf_counter() - start,
            "tensorflow": tf.__version__}


def _nodes(proto) -> list[dict]:
    nodes = []
    for key, node in proto.nodes.items():
        nodes.append({"id": int(key), "name": node.name, "buffered_bytes": int(node.buffered_bytes),
                      "buffered_elements": int(node.buffered_elements), "inputs": [int(i) for i in node.inputs]})
    return sorted(nodes, key=lambda n: n["id"])


_ENGINE = (str(Path(__file__).resolve().parent), "<frozen runpy>")


def heap_stacks(records) -> list[dict]:
    """The TOP_STACKS largest live allocation records (memray, merged across threads), by Python stack.

    Frames of the engine itself (leakbench/, runpy) are left out; a stack of
    nothing else is kept as it is.
    """
    top = heapq.nlargest(TOP_STACKS, records, key=lambda r: r.size)
    stacks = []
    for r in top:
        try:
            frames = r.stack_trace(max_stacks=STACK_FRAMES + 4)
        except Exception:  # noqa: BLE001 - a stack memray cannot resolve is still a size
            frames = []
        own = [f for f in frames if not str(f[1]).startswith(_ENGINE)] or frames
        stacks.append({"bytes": r.size, "allocations": r.n_allocations,
                       "frames": [f"{func} ({_short(file)}:{line})" for func, file, line in own]})
    return stacks


def _short(file: str) -> str:
    """A frame's file, relative to site-packages or the working directory when under one."""
    file = str(file)
    if "site-packages/" in file:
        return file.split("site-packages/", 1)[1]
    cwd = os.getcwd() + os.sep
    return file[len(cwd):] if file.startswith(cwd) else file
