"""Who keeps it alive: the shortest chain of references (objgraph) from a root to an instance
of the Python type that grew most over the measured repetitions, as short text. Only a type whose
growth passes the verdict's rule (pytypes.type_growth: a one-off jump is no growth) is followed.

Collected in the measured child after the measured repetitions and the heap pass (never inside
them): `object_ids` before the baseline sample, `new_instances` after the repetitions,
`reference_chain` last (it unfreezes the import's objects).
"""

from __future__ import annotations

import bisect
import gc
import sys
import sysconfig
import time
import types
from array import array

from leakbench.engine.frames import _short
from leakbench.engine.pytypes import TYPE_GROWTH_MIN

REFERENCE_DEPTH = 12  # links searched back from the instance
REFERENCE_SECONDS = 4.0  # and no longer than this


class _OutOfTime(Exception):
    pass


# instances of the type that grew most, kept from the end of the measured repetitions
CANDIDATES = 8


def object_ids() -> array:
    """Sorted ids of the objects the collector tracks now (not the frozen ones), 8 bytes each (an
    array, not a set: ~60 bytes each would move the baseline and peak by megabytes): a baseline,
    so that `new_instances` can tell the instances the repetitions made."""
    return array("q", sorted(id(o) for o in gc.get_objects()))


def _known(ids: array, value: int) -> bool:
    at = bisect.bisect_left(ids, value)
    return at < len(ids) and ids[at] == value


def followed(growth: list[dict]) -> str | None:
    """The type the chain follows: type_growth's first, if its rate (the verdict's rule, objects per
    repetition) reaches TYPE_GROWTH_MIN; else None."""
    return growth[0]["type"] if growth and growth[0]["per_repetition"] >= TYPE_GROWTH_MIN else None


def new_instances(growth: list[dict], baseline_ids: array | None, limit: int = CANDIDATES) -> list:
    """Up to `limit` instances of the `followed` type that were not tracked at the baseline
    (spread over the ones found, oldest first); [] without growth."""
    name = followed(growth)
    if name is None or baseline_ids is None:
        return []
    found = [
        o
        for o in gc.get_objects()
        if type(o).__qualname__ == name and not _known(baseline_ids, id(o))
    ]
    step = max(1, len(found) // limit)
    return found[::step][:limit]


def reference_chain(growth: list[dict], state, candidates: list | None = None) -> dict:
    """What keeps the type that grew most alive: objgraph's shortest chain of references from a root
    to one of its instances (the newest the collector tracks).

    growth: type_growth's entries (most per repetition first); candidates: `new_instances` of its
    first type (consumed: the list is emptied, so that nothing here keeps them). Roots: a proper
    module, or the pipeline's state (what setup returned: the engine's running frame holds it, and
    running frames are invisible to gc.get_referrers). Unfreezes the import's objects (gc.freeze
    hides them from the search; they stay unfrozen), so each step scans every object:
    REFERENCE_DEPTH links and REFERENCE_SECONDS at most. Returns {"type", "chain": [str] (root
    first, `describe_chain`), "seconds"} or {"na": why}. A chain from the state or a module of
    the pipeline's own code is preferred to a shorter one from a library's module (`_library`).
    """
    name = followed(growth)
    if name is None:
        return {
            "na": f"no Python type grew (at least {TYPE_GROWTH_MIN:g} objects per repetition, "
            "over the repetitions and over each half)"
        }
    import objgraph

    start = time.perf_counter()
    if not candidates:
        return {"na": f"no instance of {name} made by the repetitions is tracked by the collector"}
    gc.unfreeze()
    # the search from the pipeline's own code may take half the time; any module, the rest
    deadlines = {"own": start + REFERENCE_SECONDS / 2, "any": start + REFERENCE_SECONDS}
    clock = {"deadline": deadlines["own"]}

    def referrers(obj):
        if time.perf_counter() > clock["deadline"]:
            raise _OutOfTime
        return gc.get_referrers(obj)

    def is_root(obj) -> bool:
        return obj is state or objgraph.is_proper_module(obj)

    def is_own_root(obj) -> bool:  # the state, or a module outside the installed libraries
        return obj is state or (objgraph.is_proper_module(obj) and not _library(obj))

    find = getattr(objgraph, "_find_chain", None)
    ignore = (id(growth), id(candidates))

    def search(instance, root) -> list:
        if find is not None:  # objgraph's own search, with a clock on each step
            return find(instance, root, referrers, max_depth=REFERENCE_DEPTH, extra_ignore=ignore)
        return objgraph.find_backref_chain(
            instance, root, max_depth=REFERENCE_DEPTH, extra_ignore=ignore
        )

    chain: list = []
    try:
        while candidates and len(chain) < 2:  # the next instance if one has no chain
            instance = candidates.pop()
            # first from the pipeline's own code (what a user can change), then from any module:
            # a chain from TensorFlow's modules, shortest though it may be, is rarely the holder
            try:
                chain = search(instance, is_own_root)
            except _OutOfTime:
                chain = []
            clock["deadline"] = deadlines["any"]
            if len(chain) < 2:
                chain = search(instance, is_root)
            del instance
    except _OutOfTime:
        return {"na": f"no root found within {REFERENCE_SECONDS:g} s for {name}"}
    finally:
        candidates.clear()
    seconds = time.perf_counter() - start
    if len(chain) < 2:
        return {
            "na": f"no chain from a module or the state to {name} within {REFERENCE_DEPTH} links"
        }
    return {"type": name, "chain": describe_chain(chain, state), "seconds": seconds}


_PACKAGE = __name__.split(".")[0]  # leakbench: the engine's modules hold no pipeline's objects
_LIBRARIES = tuple(
    {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
)


def _library(module: types.ModuleType) -> bool:
    """True for a module of the standard library, an installed package (TensorFlow, numpy) or
    leakbench itself: its file lies under one of the interpreter's library paths, it is built
    in, or its name is under this package's."""
    path = getattr(module, "__file__", None)
    name = module.__name__
    if name == _PACKAGE or name.startswith(_PACKAGE + "."):
        return True
    if path is None:  # a built-in module; one made at run time (exec, types.ModuleType) is not
        return name in sys.builtin_module_names
    return str(path).startswith(_LIBRARIES)


def describe_chain(chain: list, state=None) -> list[str]:
    """Short descriptions of a chain of objects, root first: each object's type name and, after the
    root, how the one before it refers to it ('dict
    ['SEEN']', 'list [3]', 'frame .tb_frame', ...)."""
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
                    return (
                        f"[{key!r}]"
                        if isinstance(key, (str, int, float))
                        else f"[{type(key).__qualname__} key]"
                    )
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
        for attr in (
            "__dict__",
            "__traceback__",
            "__context__",
            "__cause__",
            "tb_frame",
            "tb_next",
            "f_back",
            "cell_contents",
            "__closure__",
            "__globals__",
            "__self__",
            "__func__",
        ):
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
