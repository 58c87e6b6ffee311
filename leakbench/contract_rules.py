"""The rules of the scenario contract (leakbench.contract, whose table FIELDS names them): each
takes a field's value, already of its type, and every field found, and returns None or what is wrong
in a few words; contract.read_metadata makes that
one ContractError line naming the file and field."""

from __future__ import annotations

import ast
import keyword
import math
import os
import re
import stat
import unicodedata
from collections.abc import Callable
from typing import Literal

SOURCES = ("caching", "dangling references", "chaining/parallelism", "stateful functions")
KINDS = ("growth", "peak")
EXPECTATIONS = ("fragmentation",)  # what EXPECTED may declare (leakbench.expectation.DECLARABLE)
REQUIREMENTS = ("GPU",)
FUNCTIONS = ("setup", "repetition")
# A public report: 'owner/repo#N' (the form leakbench.reporters.report_back links to GitHub).
ISSUE = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+#[1-9][0-9]*")
# A scenario is a page of code (the biggest committed is 4 KB); a file past this is no scenario.
MAX_BYTES = 1 << 20
# The fewest repetitions a trend can rest on, measured or in the heap pass: Mann–Kendall's
# smallest one-sided p for n points is 1/n!, below TREND_P_MAX (0.01) only from n = 5.
MIN_SERIES = 5


def _finite(value) -> bool:
    """A number that is finite as a float (what a size times a scale is computed in)."""
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _one_line(value: str, meta: dict) -> str | None:
    if not value.strip():
        return "must not be empty"
    if any(unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp") for c in value):
        return f"must be one line of text, without control characters, got {_shown(value)}"
    return None


def _one_of(choices: tuple) -> Callable:
    def rule(value, meta):
        return None if value in choices else f"must be one of {choices}, got {_shown(value)}"

    return rule


def _source(value: str, meta: dict) -> str | None:
    if value in SOURCES or ISSUE.fullmatch(value):
        return None
    return f"must be one of {SOURCES} or a public report 'owner/repo#N', got {_shown(value)}"


def _size_param(value: str, meta: dict) -> str | None:
    if not isinstance(meta.get("PARAMS"), dict) or value not in meta["PARAMS"]:
        return f"{_shown(value)} is not a key of PARAMS"
    return None


def _params(value: dict, meta: dict) -> str | None:
    for key, default in value.items():
        if not isinstance(key, str) or not key.isidentifier() or keyword.iskeyword(key):
            return f"keys must be parameter names of setup(), got {_shown(key)}"
        if not _number(default):
            return f"{key} must default to a number (int or float), got {_shown(default)}"
        if not _finite(default):
            return f"{key} must default to a finite number, got {_shown(default)}"
        if default < 0 or (default == 0 and key == meta.get("SIZE_PARAM")):
            least = (
                "a positive number (it is SIZE_PARAM)"
                if key == meta.get("SIZE_PARAM")
                else "0 or more"
            )
            return f"{key} must default to {least}, got {default!r}"
    return None


def _env(value: dict, meta: dict) -> str | None:
    for key, text in value.items():
        if not isinstance(key, str) or not isinstance(text, str):
            return f"must map names to strings, got {_shown(key)}: {_shown(text)}"
        if not key or "=" in key or "\0" in key:
            return f"names must be non-empty, without '=' or NUL, got {_shown(key)}"
        if "\0" in text:
            return f"{key} must not hold a NUL character"
    return _preload(value.get("LD_PRELOAD", ""))


def preloads(text: str) -> list[str]:
    """The libraries an LD_PRELOAD value names: separated by spaces or colons (ld.so(8))."""
    return text.replace(":", " ").split()


def _preload(text: str) -> str | None:
    """LD_PRELOAD's libraries that are there must be ELF shared objects: the dynamic loader ignores
    anything else with a warning, and the run would silently stay on glibc's malloc. A library that
    is not there is left to the engine (leakbench.engine.preload), whose record then reads
    `skipped`, naming it: what the machine lacks, not what the file gets wrong."""
    for lib in preloads(text):
        if "/" not in lib:  # the loader searches its paths for a bare name; the engine checks it
            continue
        try:
            head = elf_header(lib)
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as e:
            return (
                f"LD_PRELOAD names {_shown(lib)}, which cannot be read "
                f"({getattr(e, 'strerror', None) or e})"
            )
        if head is None:
            return f"LD_PRELOAD names {_shown(lib)}, which is not a regular file (a shared library)"
        orders: dict[int, Literal["little", "big"]] = {1: "little", 2: "big"}
        order = orders.get(head[5] if len(head) > 5 else 0)
        if (
            len(head) < 18
            or head[:4] != ELF_MAGIC
            or order is None
            or int.from_bytes(head[16:18], order) != 3
        ):
            return (
                f"LD_PRELOAD names {_shown(lib)}, which is not an ELF shared library: the loader "
                "would ignore it and the run would stay on glibc's malloc"
            )
    return None


ELF_MAGIC = b"\x7fELF"


def elf_header(path: str) -> bytes | None:
    """Up to the first 20 bytes of the regular file `path`: its ELF identification, e_type and
    e_machine, if it is ELF (elf(5)). None if `path` is not a regular file, which is then never
    opened (opening a FIFO would block). Raises OSError where it cannot be read, ValueError for a
    NUL in the name. For LD_PRELOAD's check here and the engine's (leakbench.engine.preload)."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        return None
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        return f.read(20)


def _heap_reps(value: int, meta: dict) -> str | None:
    if value == 0 or value >= MIN_SERIES:
        return None
    return f"must be 0 (no heap pass) or at least {MIN_SERIES} (a trend needs them), got {value}"


def _reported(value: dict, meta: dict) -> str | None:
    def versions(value) -> bool:
        return isinstance(value, list) and all(_version(v) for v in value)

    keys = {"issue", "leaks_on", "fixed_in", "note"}
    if set(value) - keys:
        return f"has unknown keys {sorted(map(str, set(value) - keys))}"
    if not isinstance(value.get("issue"), str) or not ISSUE.fullmatch(value["issue"]):
        return "needs issue 'owner/repo#N'"
    if not versions(value.get("leaks_on")) or not value["leaks_on"]:
        return "needs leaks_on, a list of version strings"
    if "fixed_in" not in value or not (value["fixed_in"] is None or _version(value["fixed_in"])):
        return "needs fixed_in, a version string or None"
    if not isinstance(value.get("note", ""), str):
        return "note must be a string"
    return None


def _version(value) -> bool:
    from packaging.version import InvalidVersion, Version

    if not isinstance(value, str) or not value or len(value) > 64:
        return False
    try:
        Version(value)
    except InvalidVersion:
        return False
    return True


def _shown(value, limit: int = 60) -> str:
    """repr of a value from a scenario file, cut to
    `limit` characters (a line, however big it is)."""
    try:
        text = repr(value)
    except ValueError:  # an int past 4,300 digits
        text = f"an int of {value.bit_length()} bits"
    return text if len(text) <= limit else text[: limit - 4] + "..." + text[-1]


def _shown_path(path) -> str:
    """A path as it is, or as repr when it holds characters that would break the line."""
    text = str(path)
    return repr(text) if any(not c.isprintable() for c in text) else text


def _of_type(value, kind: type) -> bool:
    return isinstance(value, kind) and not (kind is int and isinstance(value, bool))


def _a(kind: type) -> str:
    name = {str: "str", dict: "dict", int: "int"}.get(kind, kind.__name__)
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _functions(functions: dict, params: dict) -> str | None:
    """What keeps setup(**PARAMS) or repetition(state) from being called, read from the AST
    (a decorated function is taken as it is: its decorator may change what it takes)."""
    for name in FUNCTIONS:
        if isinstance(functions[name], ast.AsyncFunctionDef):
            return f"{name}() must be a plain function, not async"
    setup, repetition = (functions[n] for n in FUNCTIONS)
    if not setup.decorator_list:
        args = setup.args
        positional = args.posonlyargs + args.args
        by_name = {a.arg for a in args.args + args.kwonlyargs}
        required = [a.arg for a in positional[: len(positional) - len(args.defaults)]] + [
            a.arg for a, default in zip(args.kwonlyargs, args.kw_defaults) if default is None
        ]
        unknown = [k for k in params if k not in by_name] if args.kwarg is None else []
        if unknown:
            return f"PARAMS {', '.join(unknown)}: setup() takes no such parameter by name"
        left = [a for a in required if a not in params or a not in by_name]
        if left:
            return f"setup() needs {', '.join(left)}, which PARAMS does not give by name"
    if not repetition.decorator_list:
        args = repetition.args
        positional = args.posonlyargs + args.args
        needed = len(positional) - len(args.defaults)
        keyword_needed = sum(default is None for default in args.kw_defaults)
        if (not positional and args.vararg is None) or needed > 1 or keyword_needed:
            return "repetition(state) must take the state as its one argument"
    return None
