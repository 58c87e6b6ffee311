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
