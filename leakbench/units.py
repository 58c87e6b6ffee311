"""Binary byte units, one definition for the package: KiB, MiB and GiB in bytes (ints),
and sizes as people write them ("4GiB", "512M")."""
from __future__ import annotations

import re

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30
_UNITS = {"": 1, "b": 1, "k": KIB, "kb": KIB, "kib": KIB, "m": MIB, "mb": MIB, "mib": MIB,
          "g": GIB, "gb": GIB, "gib": GIB}


def parse_size(text: str) -> int:
    """'4GiB', '512M', '3000000' -> bytes (KB, MB, GB are binary here, as in pytest-memray).
    Raises ValueError for anything else, or a size that is not positive."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text or "")
    if not match or match.group(2).lower() not in _UNITS or float(match.group(1)) <= 0:
        raise ValueError(f"{text!r} is not a size such as 4GiB or 512MiB")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])
