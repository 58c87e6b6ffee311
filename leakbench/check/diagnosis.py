"""Evidence of a check run, summarized for people: which transformation holds the
buffered bytes, and hints at the seed source. Hints are read from the evidence
and say so; they are never a certainty."""

from __future__ import annotations

from leakbench import metrics as registry
from leakbench.analysis.judge.verdict import MEMORY_METRICS
from leakbench.analysis.record_type import Record
from leakbench.units import MIB, format_bytes

HOLDER_SHARE = 0.5  # the holder's subtree holds at least this share of buffered bytes
HOLDER_BYTES_MIN = 1 * MIB  # below this nothing is worth naming
BUFFER_STAGES = (
    "Prefetch",
    "Shuffle",
    "ParallelInterleave",
    "ParallelMap",
    "ParallelBatch",
    "Interleave",
)


def _stage(name: str) -> str:
    # MemoryCacheImpl holds MemoryCache's data
    return name[: -len("Impl")] if name.endswith("Impl") else name


def attribution(found: dict | None) -> dict:
    """Stages (transformation names) by buffered bytes, and the holder: the deepest stage whose
    subtree holds at least HOLDER_SHARE of all buffered bytes (None below HOLDER_BYTES_MIN)."""
    if not found:
        return {"na": "not measured (the run ended before its evidence was read)"}
    if "na" in found:
        return {"na": found["na"]}
    nodes = {n["id"]: n for n in found["nodes"]}
    parents = {i: n["id"] for n in found["nodes"] for i in n["inputs"]}
    subtree: dict[int, int] = {}

    def total(node_id: int) -> int:
        if node_id not in subtree:
            node = nodes[node_id]
            subtree[node_id] = node["buffered_bytes"] + sum(
                total(i) for i in node["inputs"] if i in nodes
            )
        return subtree[node_id]

    roots = [i for i in nodes if i not in parents]
    everything = sum(total(i) for i in roots)
    holder = None
    if everything >= HOLDER_BYTES_MIN:
        candidates = [
            i for i in nodes if nodes[i]["name"] != "Root" and total(i) >= HOLDER_SHARE * everything
        ]
        depth = {i: _depth(i, parents) for i in candidates}
        best = max(candidates, key=lambda i: (depth[i], nodes[i]["buffered_bytes"]), default=None)
        if best is not None:
            holder = {
                "stage": _stage(nodes[best]["name"]),
                "subtree_bytes": total(best),
                "growth_bytes": nodes[best]["growth_bytes"],
            }
    stages: dict[tuple, dict] = {}
    for n in found["nodes"]:
        if n["buffered_bytes"] <= 0 and n["growth_bytes"] <= 0:
            continue
        parent = nodes.get(parents.get(n["id"]), {}).get("name")
        inside = (
            parent
            if parent and parent.startswith(("ParallelInterleave", "Interleave", "FlatMap"))
            else None
        )
        key = (_stage(n["name"]), inside)
        s = stages.setdefault(
            key,
            {
                "stage": key[0],
                "inside": inside,
                "count": 0,
                "buffered_bytes": 0,
                "buffered_elements": 0,
                "growth_bytes": 0,
            },
        )
        s["count"] += 1
        for field in ("buffered_bytes", "buffered_elements", "growth_bytes"):
            s[field] += n[field]
    return {
        "elements": found["elements"],
        "total_bytes": everything,
        "holder": holder,
        "stages": sorted(stages.values(), key=lambda s: -s["buffered_bytes"]),
        "tensorflow": found.get("tensorflow"),
    }


def _depth(node_id: int, parents: dict) -> int:
    depth = 0
    while node_id in parents and depth < 1000:
        node_id = parents[node_id]
        depth += 1
    return depth


def hints(rec: Record, found: dict) -> list[str]:
    """Likely seed sources, each with the evidence that points to it (hints, not certainties).

    found: check.pipeline.diagnosis's evidence (types, attribution, top_stacks, stack_growth,
    reference_chain). An allocation hint names the user's own frame (stack_growth's user_frame,
    leakbench.engine.frames.user_frame) and TensorFlow's innermost frame only as context.
    """
    out = []
    metrics, signals = rec.get("metrics") or {}, rec.get("signals") or []
    leaking = bool(signals) or rec["verdict"] == "over-cap"
    if rec["verdict"] == "fragmentation":
        out.append(
            "RSS grew but malloc_trim gave most of it back: allocator fragmentation, not memory "
            "held (often per-epoch iterators under glibc "
            "malloc); jemalloc or tcmalloc (LD_PRELOAD) avoid it."
        )
        return out
    out += _signal_hints(metrics, signals)
    out += _object_hints(found["types"], leaking, signals)
    out += _holder_hints(found["attribution"].get("holder"), metrics, signals, leaking)
    memory = {m.signal for m in MEMORY_METRICS}  # held memory, or RSS in its place
    if leaking and not out and memory & set(signals) and registry.HEAP.signal not in signals:
        out.append(
            "held memory grows while memray's heap and Python objects stay flat: memory held where "
            "memray does not look (TensorFlow allocations it misses, thread stacks)."
        )
    out += _allocation_hints(found, signals)
    chain = found.get("reference_chain") or {}
    if leaking and registry.OBJECTS.signal in signals and chain.get("chain"):
        out.append(f"a {chain['type']} that grew is kept alive by: {' → '.join(chain['chain'])}.")
    if leaking and not out:
        out.append(
            "memory grew but no single piece of evidence "
            "points to a source: see the allocation stacks."
        )
    return out


def _signal_hints(metrics: dict, signals: list) -> list[str]:
    """The hints of threads, the GPU allocator's bytes and open files that grew."""
    out = []
    if registry.THREADS.signal in signals:
        per = metrics[registry.THREADS.key]["slope"]
        out.append(
            f"threads grew {per:.1f}/repetition: likely live iterators kept alive (dangling "
            "references: an iterator held by a list, a closure or "
            "a stored exception's traceback); each live tf.data "
            "iterator holds a few threads."
        )
    if registry.GPU.signal in signals:
        per = metrics[registry.GPU.key]["slope"]
        out.append(
            f"the GPU allocator's bytes in use grew {format_bytes(per)}/repetition: likely device "
            "tensors kept across repetitions (dangling references: "
            "batches or losses kept as tensors in a list); keep "
            "host numbers (float(loss)) or only the current batch."
        )
    if registry.OPEN_FILES.signal in signals:
        out.append(
            "open file descriptors grew: likely files or iterators opened every repetition and "
            "never closed (dangling references)."
        )
    return out


def _object_hints(types: list, leaking: bool, signals: list) -> list[str]:
    """The hint of the Python types that grew (found["types"], fastest first): datasets, traced
    functions, or other objects kept."""
    out = []
    if types and leaking and registry.OBJECTS.signal in signals:
        names = ", ".join(f"{t['type']} (+{t['per_repetition']:.0f}/rep)" for t in types[:3])
        if any("Dataset" in t["type"] for t in types[:5]):
            out.append(
                f"Python objects grew: {names}. Datasets among them: likely a dataset built every "
                "repetition and kept (dangling references): build it once, outside the loop."
            )
        elif any(
            k in t["type"] for t in types[:5] for k in ("ConcreteFunction", "FuncGraph", "Function")
        ):
            out.append(
                f"Python objects grew: {names}. Traced functions among them: likely a tf.function "
                "retracing on new Python values (stateful functions): pass tensors."
            )
        else:
            out.append(
                f"Python objects grew: {names}: likely references kept across repetitions, or "
                "state kept by a map function (numpy_function/py_function appending to a list)."
            )
    return out


def _holder_hints(holder: dict | None, metrics: dict, signals: list, leaking: bool) -> list[str]:
    """The hint of the tf.data stage holding the most (a cache, a buffer), or of a peak that scales
    with no stage reporting buffered bytes."""
    out = []
    scaling = metrics.get("peak_scaling") or {}
    if holder and leaking:  # where a bounded pipeline keeps its buffers is in the table, not a hint
        stage, held = holder["stage"], format_bytes(holder["subtree_bytes"])
        growing = " and growing" if holder["growth_bytes"] >= HOLDER_BYTES_MIN else ""
        if "Cache" in stage:
            out.append(
                f"{stage} holds {held}{growing}: likely caching in memory; the cache keeps "
                "cardinality × element size for the life of the "
                "dataset: check it fits your budget, or cache to a file."
            )
        elif stage.startswith(BUFFER_STAGES):
            scaled = (
                f"; the peak scales with the size parameter (k = {scaling['exponent']:.2f})"
                if registry.PEAK_SIGNAL in signals and scaling.get("exponent") is not None
                else ""
            )
            out.append(
                f"{stage} holds {held}{growing}{scaled}: likely chaining/parallelism; buffers "
                "sized by buffer_size, cycle_length or "
                "num_parallel_calls (per input, under interleave) "
                "multiply element size: batch before prefetch, bound cycle_length, set "
                "Options().autotune.ram_budget."
            )
    elif registry.PEAK_SIGNAL in signals:
        out.append(
            f"the peak scales with the size parameter (k = {scaling.get('exponent', 0):.2f}) but "
            "no transformation reports buffered bytes: look for buffers outside tf.data."
        )
    return out


def _allocation_hints(found: dict, signals: list) -> list[str]:
    """The hint of the allocation site of the user's code growing most in memray's heap pass, else
    of the largest live allocation."""
    out = []
    stacks, growing_stacks = found["top_stacks"], found.get("stack_growth") or []
    site = next((g for g in growing_stacks if g.get("user_frame")), None)
    # the user's line first; TensorFlow's frames only as context
    if registry.HEAP.signal in signals and site:
        inner = site["frames"][0] if site["frames"] else None
        context = f" (allocated in {inner})" if inner and inner != site["user_frame"] else ""
        out.append(
            "the allocation site of your code growing most "
            f"({format_bytes(site['bytes_per_rep'])}/repetition in memray's heap pass) comes from "
            f"{site['user_frame']}{context}: likely what keeps the memory."
        )
    elif registry.HEAP.signal in signals and stacks and stacks[0]["frames"]:
        top = stacks[0]
        where = top.get("user_frame") or top["frames"][0]
        out.append(
            f"the largest live allocation ({format_bytes(top['bytes'], unit=MIB)} in "
            f"{top['allocations']:,} allocations) comes from {where}: likely what keeps the memory."
        )
    return out
