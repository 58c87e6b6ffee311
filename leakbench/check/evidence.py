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
- `heap_stacks(records)`: the largest allocations still live at the end of
  the memray heap pass, by Python stack; `stack_frames` and `user_frame`
  name a stack's frames and the first of them in the user's own code.
- `read_stages(state)`, in every measurement: the same model readings at
  READING_ELEMENTS, from which `stages` (run["stages"]) and
  `attribution_from` (check's diagnostics.attribution) are derived.
- `reference_chain(type_growth, state)`: what keeps an instance of the type
  that grew most alive (objgraph), as text (`describe_chain`).
"""
from __future__ import annotations

import collections
import gc
import heapq
import os
import sys
import sysconfig
import time
import types
from pathlib import Path

FIRST_ELEMENTS = 4     # elements consumed before the first model reading
MORE_ELEMENTS = 60     # and before the second
SETTLE_SECONDS = 0.2   # let prefetch/parallel stages fill their buffers before reading
STAGES_SECONDS = 1.0   # read_stages takes no further reading once this much has passed
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


READING_ELEMENTS = (FIRST_ELEMENTS, 32, FIRST_ELEMENTS + MORE_ELEMENTS)  # run["stages"]'s readings


def read_stages(state, goals=READING_ELEMENTS) -> dict:
    """Read the autotune model of one fresh iterator over the state's dataset at `goals` elements.

    Returns {"readings": [(elements consumed, nodes)], "seconds": s, "tensorflow": version},
    nodes as `_nodes` gives them (buffered bytes, elements, inputs, parameters), or {"na": why}:
    TensorFlow not imported, get_model_proto missing (an older TensorFlow: the reason names its version;
    present in 2.21, docs/measurements.md, "TensorFlow"),
    the target not a dataset, the API failing, or the dataset ending before one element.
    A finite dataset is read at no more than half its cardinality (its buffers drain at the end), so
    a short one gives fewer readings (unbounded_cache's 32 batches: 4 and 16 elements).
    Each reading waits SETTLE_SECONDS first: 0.2-0.8 s per child on the pairs (median 0.47 s). No
    reading starts after STAGES_SECONDS, but the first one waits for the pipeline's first elements: a
    shuffle buffer fills first (shuffle_fragmentation's shuffle(30000): 3.3-5.1 s, 2026-12-01).

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
        return {"na": f"tf.data.experimental.get_model_proto does not exist in TensorFlow {tf.__version__}"}
    ds = find_dataset(state)
    if ds is None:
        return {"na": "the target is not a dataset (a repetition function): no pipeline to read"}
    start = time.perf_counter()
    goals = sorted(set(goals))
    try:
        cardinality = int(ds.cardinality())
        if cardinality >= 0:  # finite and known: read well before the end, where buffers drain
            goals = sorted({max(1, min(g, cardinality // 2)) for g in goals}) if cardinality > 1 else []
        iterator = iter(ds)
    except Exception as err:  # noqa: BLE001 - a dataset that cannot be iterated again: say why
        return {"na": f"a fresh iterator failed: {type(err).__name__}: {str(err).splitlines()[0][:200]}"}
    consumed = 0
    readings = []
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
        return {"na": f"get_model_proto failed: {type(err).__name__}: {str(err).splitlines()[0][:200]}"}
    finally:
        del iterator
    if not readings:
        return {"na": "the dataset ended before an element could be read"}
    return {"readings": readings, "seconds": time.perf_counter() - start, "tensorflow": tf.__version__}


def stage_name(name: str) -> str:
    """A transformation's name as shown: MemoryCacheImpl holds MemoryCache's data, so it reads MemoryCache."""
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
            row = rows.setdefault(key, {"stage": key[1], "inside": inside, "bytes": [0] * len(readings),
                                        "autotune": {}})
            row["bytes"][index] += n["buffered_bytes"]
            if index == len(readings) - 1:
                row["autotune"].update(n["parameters"])
    return {"readings": [r[0] for r in readings], "stages": [rows[k] for k in sorted(rows, key=lambda k: k[0])],
            "tensorflow": found["tensorflow"]}


def _depth(node_id: int, parents: dict) -> int:
    depth = 0
    while node_id in parents and depth < 1000:
        node_id, depth = parents[node_id], depth + 1
    return depth


def attribution_from(found: dict) -> dict:
    """check's diagnostics.attribution from `read_stages`: per node, the most it held at the first or
    last reading and its rise between them (bytes); {"elements": [first, last], "nodes", "seconds",
    "tensorflow"} or {"na": why}."""
    if "na" in found:
        return {"na": found["na"]}
    readings = found["readings"]
    first, last = readings[0], readings[-1]
    before = {n["id"]: n["buffered_bytes"] for n in first[1]}
    merged = {n["id"]: n for n in first[1]}
    for n in last[1]:
        held = max(n["buffered_bytes"], before.get(n["id"], 0))
        merged[n["id"]] = {**n, "buffered_bytes": held,
                           "buffered_elements": max(n["buffered_elements"],
                                                    merged.get(n["id"], {}).get("buffered_elements", 0))}
    after = {n["id"]: n["buffered_bytes"] for n in last[1]}
    nodes = [{k: v for k, v in n.items() if k != "parameters"}
             | {"growth_bytes": after[i] - before[i] if i in after and i in before else 0}
             for i, n in sorted(merged.items())]
    return {"elements": [first[0], last[0]], "nodes": nodes, "seconds": found["seconds"],
            "tensorflow": found["tensorflow"]}


def attribution(state) -> dict:
    """Buffered bytes per transformation of the state's dataset, read twice; or why not ("na")."""
    return attribution_from(read_stages(state, (FIRST_ELEMENTS, FIRST_ELEMENTS + MORE_ELEMENTS)))


def _nodes(proto) -> list[dict]:
    nodes = []
    for key, node in proto.nodes.items():
        nodes.append({"id": int(key), "name": node.name, "buffered_bytes": int(node.buffered_bytes),
                      "buffered_elements": int(node.buffered_elements), "inputs": [int(i) for i in node.inputs],
                      "parameters": {q.name: _number(q.value) for q in node.parameters}})
    return sorted(nodes, key=lambda n: n["id"])


def _number(value: float):
    value = float(value)
    return int(value) if value.is_integer() else value


_PACKAGE = str(Path(__file__).resolve().parent.parent)  # leakbench itself
_ENGINE = (_PACKAGE + os.sep, "<frozen runpy>")
_STDLIB = tuple(sorted({str(Path(p).resolve()) + os.sep for key in ("stdlib", "platstdlib")
                        if (p := sysconfig.get_paths().get(key))}))
AUTOGRAPH_FILE = "__autograph_generated_file"  # TensorFlow autograph's generated copies of converted code


def is_user_file(file: str) -> bool:
    """True for a file of the user's own code: not under site-packages or dist-packages, not the
    Python standard library (sysconfig's stdlib paths, frozen modules), not leakbench's own
    package, and not a file autograph generated (whose origin `resolve_frames` puts back)."""
    file = str(file)
    if not file or file.startswith("<") or AUTOGRAPH_FILE in file:
        return False
    if f"{os.sep}site-packages{os.sep}" in file or f"{os.sep}dist-packages{os.sep}" in file:
        return False
    resolved = os.path.realpath(file) if os.path.isabs(file) else file
    return not resolved.startswith(_STDLIB) and not resolved.startswith(_PACKAGE + os.sep)


def format_frame(frame) -> str:
    """'function (file:line)' of a (function, file, line) frame, the file shortened by `_short`."""
    func, file, line = frame
    return f"{func} ({_short(file)}:{line})"


def user_frame(frames) -> str | None:
    """The innermost frame of the user's code (`is_user_file`) of a stack given innermost first as
    (function, file, line) tuples, formatted as 'function (file:line)'; None when no frame is."""
    for frame in frames:
        if is_user_file(frame[1]):
            return format_frame(frame)
    return None


def autograph_origins() -> dict:
    """{(generated file, line): (source file, line)} of every function autograph converted in this
    process (its `ag_source_map`): a numpy_function's inline lambda runs as autograph's copy in a
    temporary file, and its frames must name the user's line, not the copy's. The maps are those of
    autograph's cached factories (`_PythonFnFactory.source_map`) and of converted functions still
    alive; {} without TensorFlow."""
    if "tensorflow" not in sys.modules:
        return {}
    found = {}
    for obj in gc.get_objects():  # autograph's factories (transpiler cache) and converted functions
        kind = type(obj)
        source_map = (getattr(obj, "source_map", None) if kind.__name__ == "_PythonFnFactory" else
                      getattr(obj, "ag_source_map", None) if kind is types.FunctionType else None)
        if isinstance(source_map, dict):
            for loc, origin in source_map.items():
                try:
                    found[(loc.filename, loc.lineno)] = (origin.loc.filename, origin.loc.lineno)
                except AttributeError:
                    continue
    return found


def resolve_frames(frames, origins: dict) -> list[tuple]:
    """Frames with autograph's generated (file, line) replaced by the source's, where known."""
    out = []
    for func, file, line in frames:
        if AUTOGRAPH_FILE in str(file) and (file, line) in origins:
            file, line = origins[(file, line)]
        out.append((func, file, line))
    return out


def stack_frames(record, origins: dict) -> list[tuple]:
    """A memray record's whole Python stack, innermost first, autograph's copies resolved
    ([] where memray cannot resolve it)."""
    try:
        return resolve_frames(record.stack_trace(), origins)
    except Exception:  # noqa: BLE001 - a stack memray cannot resolve is still a size
        return []


def shown_frames(frames) -> list[str]:
    """The frames of a stack as stored: the engine's own (leakbench/, runpy) left out (a stack of
    nothing else is kept as it is), at most STACK_FRAMES + 4, formatted by `format_frame`."""
    own = [f for f in frames if not str(f[1]).startswith(_ENGINE)] or list(frames)
    return [format_frame(f) for f in own[: STACK_FRAMES + 4]]


def heap_stacks(records, origins: dict | None = None) -> list[dict]:
    """The TOP_STACKS largest live allocation records (memray, merged across threads), by Python stack:
    [{"bytes", "allocations", "frames": ['function (file:line)', innermost first], "user_frame"}]."""
    top = heapq.nlargest(TOP_STACKS, records, key=lambda r: r.size)
    origins = autograph_origins() if origins is None else origins
    stacks = []
    for r in top:
        frames = stack_frames(r, origins)
        stacks.append({"bytes": r.size, "allocations": r.n_allocations, "frames": shown_frames(frames),
                       "user_frame": user_frame(frames)})
    return stacks


REFERENCE_DEPTH = 12        # links searched back from the instance
REFERENCE_SECONDS = 4.0     # and no longer than this


class _OutOfTime(Exception):
    pass


CANDIDATES = 8  # instances of the type that grew most, kept from the end of the measured repetitions


def object_ids() -> set:
    """ids of the objects the collector tracks now (not the frozen ones): a baseline, so that
    `new_instances` can tell the instances the repetitions made."""
    return {id(o) for o in gc.get_objects()}


def new_instances(growth: list[dict], baseline_ids: set | None, limit: int = CANDIDATES) -> list:
    """Up to `limit` instances of type_growth's first type that were not tracked at the baseline
    (spread over the ones found, oldest first); [] without growth."""
    if not growth or baseline_ids is None:
        return []
    name = growth[0]["type"]
    found = [o for o in gc.get_objects() if type(o).__qualname__ == name and id(o) not in baseline_ids]
    step = max(1, len(found) // limit)
    return found[::step][:limit]


def reference_chain(growth: list[dict], state, candidates: list | None = None) -> dict:
    """What keeps the type that grew most alive: objgraph's shortest chain of references from a root
    to one of its instances (the newest the collector tracks).

    growth: type_growth's entries (most per repetition first); candidates: `new_instances` of its
    first type (consumed: the list is emptied, so that nothing here keeps them). Roots: a proper module, or the
    pipeline's state (what setup returned: the engine's running frame holds it, and running frames
    are invisible to gc.get_referrers). Unfreezes the import's objects (gc.freeze hides them from the
    search; they stay unfrozen), so each step scans every object: REFERENCE_DEPTH links and
    REFERENCE_SECONDS at most. Returns {"type", "chain": [str] (root first, `describe_chain`),
    "seconds"} or {"na": why}.
    """
    if not growth:
        return {"na": "no Python type grew (at least 3 objects per repetition)"}
    import objgraph

    name = growth[0]["type"]
    start = time.perf_counter()
    if not candidates:
        return {"na": f"no instance of {name} made by the repetitions is tracked by the collector"}
    gc.unfreeze()
    deadline = start + REFERENCE_SECONDS

    def referrers(obj):
        if time.perf_counter() > deadline:
            raise _OutOfTime
        return gc.get_referrers(obj)

    def is_root(obj) -> bool:
        return obj is state or objgraph.is_proper_module(obj)

    find = getattr(objgraph, "_find_chain", None)
    ignore = (id(growth), id(candidates))
    chain = []
    try:
        while candidates and len(chain) < 2:  # the next instance if one has no chain
            instance = candidates.pop()
            if find is not None:  # objgraph's own search, with a clock on each step
                chain = find(instance, is_root, referrers, max_depth=REFERENCE_DEPTH, extra_ignore=ignore)
            else:
                chain = objgraph.find_backref_chain(instance, is_root, max_depth=REFERENCE_DEPTH,
                                                    extra_ignore=ignore)
            del instance
    except _OutOfTime:
        return {"na": f"no root found within {REFERENCE_SECONDS:g} s for {name}"}
    finally:
        candidates.clear()
    seconds = time.perf_counter() - start
    if len(chain) < 2:
        return {"na": f"no chain from a module or the state to {name} within {REFERENCE_DEPTH} links"}
    return {"type": name, "chain": describe_chain(chain, state), "seconds": seconds}


def describe_chain(chain: list, state=None) -> list[str]:
    """Short descriptions of a chain of objects, root first: each object's type name and, after the
    root, how the one before it refers to it ('dict ['SEEN']', 'list [3]', 'frame .tb_frame', ...)."""
    out = []
    for index, obj in enumerate(chain):
        text = _describe(obj, state)
        if index:
            link = _link(chain[index - 1], obj)
            text += f" {link}" if link else ""
        out.append(text)
    return out


def _describe(obj, state) -> str:
    if state is not None and obj is state:
        return f"state {type(obj).__qualname__} (what setup returned)"
    if isinstance(obj, types.ModuleType):
        return f"module {obj.__name__}"
    if isinstance(obj, types.FrameType):
        return f"frame of {obj.f_code.co_name} ({_short(obj.f_code.co_filename)}:{obj.f_lineno})"
    if isinstance(obj, types.FunctionType):
        return f"function {obj.__qualname__}"
    return type(obj).__qualname__


def _link(source, target) -> str | None:
    """How `source` refers to `target`: '.attribute', '[key]', '[index]', or None when not found."""
    try:
        if isinstance(source, types.ModuleType) and target is vars(source):
            return ".__dict__"
        if isinstance(source, dict):
            for key, value in source.items():
                if value is target:
                    return f"[{key!r}]" if isinstance(key, (str, int, float)) else f"[{type(key).__qualname__} key]"
                if key is target:
                    return "(a key)"
        if isinstance(source, (list, tuple)):
            for index, value in enumerate(source):
                if value is target:
                    return f"[{index}]"
        if isinstance(source, (set, frozenset)):
            return "(a member)"
        if isinstance(source, types.FrameType):
            for key, value in source.f_locals.items():
                if value is target:
                    return f"(local {key})"
        for attr in ("__dict__", "__traceback__", "__context__", "__cause__", "tb_frame", "tb_next",
                     "f_back", "cell_contents", "__closure__", "__globals__", "__self__", "__func__"):
            if getattr(source, attr, None) is target:
                return f".{attr}"
        for attr, value in getattr(source, "__dict__", {}).items():
            if value is target:
                return f".{attr}"
        for attr in getattr(type(source), "__slots__", ()):
            if getattr(source, attr, None) is target:
                return f".{attr}"
    except Exception:  # noqa: BLE001 - a description is best effort; the type names stand
        return None
    return None


def _short(file: str) -> str:
    """A frame's file, relative to site-packages or the working directory when under one."""
    file = str(file)
    for packages in ("site-packages/", "dist-packages/"):
        if packages in file:
            return file.split(packages, 1)[1]
    cwd = os.getcwd() + os.sep
    return file[len(cwd):] if file.startswith(cwd) else file
