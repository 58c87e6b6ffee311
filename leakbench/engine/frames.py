"""Python stacks of memray's records, named for people: 'function (file:line)', innermost first,
and the first frame of the user's own code (`user_frame`), TensorFlow's frames only as context.

A numpy_function's inline lambda runs as autograph's generated copy in a temporary file; its
frames are mapped back to the user's file and line (`autograph_origins`, `resolve_frames`).
Used in the measured child by the heap pass (leakbench.engine.heap): top_stacks and stack_growth.
"""

from __future__ import annotations

import gc
import heapq
import os
import sys
import sysconfig
import types
from pathlib import Path

TOP_STACKS = 5
STACK_FRAMES = 6

_PACKAGE = str(Path(__file__).resolve().parent.parent)  # leakbench itself
_ENGINE = (_PACKAGE + os.sep, "<frozen runpy>")
_STDLIB = tuple(
    sorted(
        {
            str(Path(p).resolve()) + os.sep
            for key in ("stdlib", "platstdlib")
            if (p := sysconfig.get_paths().get(key))
        }
    )
)
# TensorFlow autograph's generated copies of converted code
AUTOGRAPH_FILE = "__autograph_generated_file"


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
        source_map = (
            getattr(obj, "source_map", None)
            if kind.__name__ == "_PythonFnFactory"
            else getattr(obj, "ag_source_map", None)
            if kind is types.FunctionType
            else None
        )
        if isinstance(source_map, dict):
            for loc, origin in source_map.items():
                try:
                    found[(loc.filename, loc.lineno)] = (origin.loc.filename, origin.loc.lineno)
                except AttributeError:
                    continue
    return found


class LazyOrigins:
    """`autograph_origins()`, read on the first look-up only: the walk of gc.get_objects() it
    takes (docs/measurements.md, "What the evidence costs") is skipped where no stack has an
    autograph frame."""

    def __init__(self):
        self._found: dict | None = None

    def get(self, key, default=None):
        if self._found is None:
            self._found = autograph_origins()
        return self._found.get(key, default)


def resolve_frames(frames, origins) -> list[tuple]:
    """Frames with autograph's generated (file, line) replaced by the source's, where known.
    origins: `autograph_origins()`'s dict or a `LazyOrigins`."""
    out = []
    for func, file, line in frames:
        origin = origins.get((file, line)) if AUTOGRAPH_FILE in str(file) else None
        if origin is not None:
            file, line = origin
        out.append((func, file, line))
    return out


def stack_frames(record, origins) -> list[tuple]:
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


def heap_stacks(live, origins=None) -> list[dict]:
    """The TOP_STACKS Python stacks with the most bytes live (memray, merged across threads), from
    (bytes, allocations, one of the stack's memray
    records) per stack (leakbench.engine.heap.replay):
    [{"bytes", "allocations", "frames": ['function
    (file:line)', innermost first], "user_frame"}]."""
    top = heapq.nlargest(TOP_STACKS, live, key=lambda entry: entry[0])
    origins = LazyOrigins() if origins is None else origins
    stacks = []
    for size, count, record in top:
        frames = stack_frames(record, origins)
        stacks.append(
            {
                "bytes": size,
                "allocations": count,
                "frames": shown_frames(frames),
                "user_frame": user_frame(frames),
            }
        )
    return stacks


def _short(file: str) -> str:
    """A frame's file, relative to site-packages or the working directory when under one."""
    file = str(file)
    for packages in ("site-packages/", "dist-packages/"):
        if packages in file:
            return file.split(packages, 1)[1]
    cwd = os.getcwd() + os.sep
    return file[len(cwd) :] if file.startswith(cwd) else file
