"""Result files written whole (write_text_atomic, write_atomic): a failure or kill mid-write leaves
the previous complete file. And the one
way leakbench reads its own files (records, resume files, calibration, repeatability and bisect
results, flame graphs): regular files only (a FIFO or a device is never opened), at most
MAX_BYTES, UTF-8, every JSON error as one line."""

from __future__ import annotations

import errno
import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from leakbench.units import MIB, format_bytes

# The most leakbench reads from one of its files, in bytes. The biggest a command writes by design
# is `leakbench repeat --runs 1000` (its most) over every variant, tens of MiB; the committed files
# are far smaller (docs/measurements.md, "Committed results"). 256 MiB leaves room for more pairs
# and records appended run after run, and json.loads of it still fits in a few GiB; a file above
# it is no result of ours (a runaway append, a device behind a link) and is refused before it is
# read.
MAX_BYTES = 256 * MIB

_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


class Unreadable(ValueError):
    """A file leakbench will not read: not a regular file, over MAX_BYTES, not UTF-8, not JSON,
    or an OSError. One line, naming the file; `reason` is the same without the file's name."""

    def __init__(self, path, reason: str):
        super().__init__(f"{path} {reason}")
        self.reason = reason


class BadJSON(ValueError):
    """Text that json.loads refuses; msg says why, in a few words."""

    def __init__(self, msg: str):
        super().__init__(msg)
        self.msg = msg


def special(path: Path) -> str | None:
    """What stands at `path` where a regular file is expected, or None for a regular file (a
    symbolic link to one included) or nothing at all: "a named pipe (FIFO)", "a character device",
    "a block device", "a socket", "a directory", "a symbolic link loop", "a dangling symbolic link
    (to X)", "a path under a file" (a parent that is a file), or the OSError's reason. Opens
    nothing: a FIFO is never waited on."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):
            return f"a dangling symbolic link (to {os.readlink(path)})"
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            return "a symbolic link loop"
        if e.errno == errno.ENOTDIR:  # strerror's "Not a directory" reads wrong mid-sentence
            return "a path under a file"
        return e.strerror or str(e)
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def read_bytes(path: Path, limit: int | None = None) -> bytes:
    """The bytes of regular file `path`. Raises Unreadable (one line) when it is anything else
    (special), is missing or cannot be read, or holds more than `limit` bytes (default MAX_BYTES);
    nothing is opened before that check, and the open
    does not block (a FIFO swapped in meanwhile)."""
    limit = MAX_BYTES if limit is None else limit
    kind = special(path)
    if kind is not None:
        raise Unreadable(path, f"is {kind}, not a regular file")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise Unreadable(path, f"cannot be read: {e.strerror or e}") from None
    with os.fdopen(fd, "rb") as f:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise Unreadable(path, "is not a regular file")
        if found.st_size > limit:
            raise Unreadable(
                path,
                f"holds {format_bytes(found.st_size, unit=1)}, more than the "
                f"{format_bytes(limit, whole=True)} leakbench "
                "reads from one file (leakbench.jsonfile.MAX_BYTES)",
            )
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise Unreadable(path, f"cannot be read: {e.strerror or e}") from None
    if len(data) > limit:
        raise Unreadable(
            path,
            f"grew past the {format_bytes(limit, whole=True)} leakbench reads from one file "
            "(leakbench.jsonfile.MAX_BYTES) while it was read",
        )
    return data


def _text(data: bytes) -> str:
    """data as UTF-8; BadJSON("not UTF-8: byte 0xff at offset 21") when it is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadJSON(f"not UTF-8: byte {data[e.start]:#04x} at offset {e.start}") from None


def read_text(path: Path, limit: int | None = None) -> str:
    """The UTF-8 text of regular file `path` (read_bytes). Raises Unreadable (one line)."""
    try:
        return _text(read_bytes(path, limit))
    except BadJSON as e:
        raise Unreadable(path, f"is {e.msg.replace(': ', ' text (', 1)})") from None


def _int(digits: str) -> int:
    """An integer of the file; past a float's range (over 308 digits) it is refused: every reader
    computes with floats, and float() of it raises OverflowError."""
    if len(digits.lstrip("-")) > 308:
        raise BadJSON(f"an integer of {len(digits.lstrip('-')):,} digits, past a float's range")
    return int(digits)


def parse(text: str) -> Any:
    """json.loads, every way it can fail on bad input as BadJSON (a ValueError) with a short `msg`:
    a syntax error, an integer past Python's 4,300
    digits, nesting deeper than the recursion limit."""
    try:
        return json.loads(text, parse_int=_int)
    except json.JSONDecodeError as e:
        raise BadJSON(e.msg) from None
    except ValueError as e:
        # int(): "Exceeds the limit (4300 digits) for integer string conversion ..."
        raise BadJSON(str(e).split(";")[0]) from None
    except RecursionError:
        raise BadJSON("nested too deeply") from None


def load(path: Path, limit: int | None = None) -> Any:
    """The JSON in file `path` (read_bytes, then parse). Raises Unreadable (one line): "<path>
    cannot be read as JSON (why)" for text that is not UTF-8 or not JSON."""
    data = read_bytes(path, limit)
    try:
        return parse(_text(data))
    except BadJSON as e:
        raise Unreadable(path, f"cannot be read as JSON ({e.msg})") from None


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` whole, the one way leakbench writes a result file: into a new
    temporary file beside it (.NAME.PID.tmp, made with the umask's permissions, never through a
    link), flushed and fsync'd, then os.replace'd over `path` (atomic on POSIX) and the folder
    fsync'd. Its folder must exist. A failure or a kill at any point leaves the previous file as it
    was; a failure also removes the temporary file. A symbolic link at `path` stays a link: the
    file it points to is the one replaced (an `--out /dev/stdout` must not replace the system's
    /dev/stdout link with a regular file)."""
    path = Path(os.path.realpath(path))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # the rename itself reaches the disk with the folder's entry
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(folder)
    except OSError:  # a file system that cannot fsync a folder: the rename is still atomic
        pass
    finally:
        os.close(folder)


def write_atomic(path: Path, data: dict, indent: int = 1) -> None:
    """Write `data` as JSON to `path` whole (write_text_atomic), its folder made if missing.

    Raises ValueError for NaN or infinite numbers (allow_nan=False: JSON has none), before
    anything is written."""
    text = json.dumps(data, indent=indent, allow_nan=False) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text)


def resumable(out: Path, made: dict, fmt: int, what: str, error: type[Exception]) -> dict | None:
    """The result in `out` to resume (`leakbench repeat`,
    `leakbench calibrate`), or None if there is none.

    made: what the file must share to be resumed: top-level keys, and "settings"
    (a dict compared key by key). fmt: its "format"; what: its name in messages
    ("a repeatability result"). Raises `error` with one line, and leaves the file
    as it is, when it cannot be read as JSON, is not `what` of format `fmt`
    (a dict with a list of "observations"), or was made otherwise.
    """
    if not os.path.lexists(out):  # a dangling link is no file to resume, and is not written through
        return None
    keep = "it is kept: use another --out, or --fresh to measure anew and replace it"
    try:
        found = load(out)
    except Unreadable as e:  # a FIFO or device, over MAX_BYTES, not UTF-8, not JSON
        raise error(f"{e}; {keep}") from None
    if (
        not isinstance(found, dict)
        or found.get("format") != fmt
        or not isinstance(found.get("observations"), list)
    ):
        raise error(f"{out} is not {what} of format {fmt}; {keep}")
    differ = [
        f"{k} {found.get(k)} there, {v} here"
        for k, v in made.items()
        if k != "settings" and found.get(k) != v
    ]
    settings = found.get("settings")
    there = settings if isinstance(settings, dict) else {}
    differ += [
        f"{k} {there.get(k)} there, {v} here"
        for k, v in made.get("settings", {}).items()
        if there.get(k) != v
    ]
    if differ:
        raise error(f"{out} was measured with other settings ({'; '.join(differ)}); {keep}")
    return found


# What bad_value finds: a number that is not finite, one past the bound, a string or a key that
# is not valid UTF-8
NOT_FINITE, PAST_BOUND, BAD_STRING, BAD_KEY = "not finite", "past bound", "string", "key"


def bad_value(value: Any, where: tuple = (), bound: float | None = None) -> tuple | None:
    """(where, what, culprit) of the first value of parsed JSON that no result file may hold, or
    None: a number that is not finite (json reads NaN, Infinity, 1e400: NOT_FINITE), one past
    ±bound when a bound is given (PAST_BOUND), a string or a key with a lone surrogate ("\\ud800",
    not valid UTF-8: BAD_STRING, BAD_KEY). `where` is the path to it (keys and indexes). The one
    walk validate (records files) and engine.messages (the child's messages) say where with,
    each in its own words."""
    if isinstance(value, float) and not math.isfinite(value):
        return where, NOT_FINITE, value
    if bound is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        if abs(value) > bound:
            return where, PAST_BOUND, value
    elif isinstance(value, str):
        if not utf8(value):
            return where, BAD_STRING, value
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and not utf8(key):
                return where, BAD_KEY, key
            if (found := bad_value(item, (*where, key), bound)) is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if (found := bad_value(item, (*where, i), bound)) is not None:
                return found
    return None


def utf8(text: str) -> bool:
    """True if `text` encodes as UTF-8 (no lone surrogate)."""
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


# JSON Schema's types as a one-line error says them ("runs: must be a list", "result is an int,
# not a dict or null"): validate (records files) and engine.messages (the child's messages)
TYPE_WORDS = {
    "object": "a dict",
    "array": "a list",
    "number": "a number",
    "integer": "an integer",
    "string": "a string",
    "boolean": "true or false",
    "null": "null",
}


def type_words(types: str | list) -> str:
    """A JSON Schema "type" (one name or a list) in words: "a dict or null"."""
    return " or ".join(
        TYPE_WORDS.get(t, str(t)) for t in ([types] if isinstance(types, str) else types)
    )
