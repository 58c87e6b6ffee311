"""Result files written whole: a kill mid-write leaves the previous complete file."""
from __future__ import annotations

import json
import os
from pathlib import Path


def write_atomic(path: Path, data: dict) -> None:
    """Write `data` as JSON to `path` through a temporary file and os.replace (atomic on POSIX).

    Raises ValueError for NaN or infinite numbers (allow_nan=False: JSON has none)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n")
    os.replace(tmp, path)


def resumable(out: Path, made: dict, fmt: int, what: str, error: type[Exception]) -> dict | None:
    """The result in `out` to resume (`leakbench repeat`, `leakbench calibrate`), or None if there is none.

    made: what the file must share to be resumed: top-level keys, and "settings"
    (a dict compared key by key). fmt: its "format"; what: its name in messages
    ("a repeatability result"). Raises `error` with one line, and leaves the file
    as it is, when it cannot be read as JSON, is not `what` of format `fmt`
    (a dict with a list of "observations"), or was made otherwise.
    """
    if not out.exists():
        return None
    keep = "it is kept: use another --out, or --fresh to measure anew and replace it"
    try:
        found = json.loads(out.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise error(f"{out} cannot be read as JSON ({getattr(e, 'msg', None) or e}); {keep}") from None
    if not isinstance(found, dict) or found.get("format") != fmt or not isinstance(found.get("observations"), list):
        raise error(f"{out} is not {what} of format {fmt}; {keep}")
    differ = [f"{k} {found.get(k)} there, {v} here" for k, v in made.items() if k != "settings" and found.get(k) != v]
    there = found.get("settings") if isinstance(found.get("settings"), dict) else {}
    differ += [f"{k} {there.get(k)} there, {v} here" for k, v in made.get("settings", {}).items() if there.get(k) != v]
    if differ:
        raise error(f"{out} was measured with other settings ({'; '.join(differ)}); {keep}")
    return found
