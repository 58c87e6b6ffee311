"""Binary byte units, one definition for the package: KiB, MiB and GiB in bytes (ints),
and sizes as people write them ("4GiB", "512M")."""

from __future__ import annotations

import re
from fractions import Fraction

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30
# the largest byte count the kernel keeps (a signed 64-bit)
MAX_BYTES, MAX_BYTES_TEXT = (1 << 63) - 1, "8 EiB"
_UNITS = {
    "": 1,
    "b": 1,
    "k": KIB,
    "kb": KIB,
    "kib": KIB,
    "m": MIB,
    "mb": MIB,
    "mib": MIB,
    "g": GIB,
    "gb": GIB,
    "gib": GIB,
}


def parse_size(text: str) -> int:
    """'4GiB', '512M', '1.5KiB', '3000000' -> bytes
    (KB, MB, GB are binary here, as in pytest-memray).

    Raises ValueError for anything else: a size must be a whole number of bytes from 1 to
    MAX_BYTES. Read exactly (as a fraction, not a float): 0.5 is not rounded down to 0
    (which would mean the default cap), and 309 digits do not overflow to infinity.
    """
    # ASCII digits only: \d would also take '１' or '٣', which int() reads as 1 and 3
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*", text or "", flags=re.ASCII)
    if not match or match.group(2).lower() not in _UNITS:
        raise ValueError(f"{_shown(text)} is not a size such as 4GiB or 512MiB")
    number = match.group(1)
    if len(number.split(".")[0].lstrip("0")) > 40:  # far past MAX_BYTES, and past what int() reads
        raise ValueError(f"{_shown(text)} is more than {MAX_BYTES_TEXT}")
    try:
        size = Fraction(number) * _UNITS[match.group(2).lower()]
    except ValueError:  # thousands of digits (leading zeros, decimals): past int()'s limit
        raise ValueError(f"{_shown(text)} is not a size such as 4GiB or 512MiB") from None
    if size < 1 or size.denominator != 1:
        raise ValueError(f"{_shown(text)} is not a whole number of bytes (at least 1)")
    if size > MAX_BYTES:
        raise ValueError(f"{_shown(text)} is more than {MAX_BYTES_TEXT}")
    return int(size)


def _shown(text: str) -> str:
    """`text` for a message: quoted, and cut short past 40 characters."""
    return (
        repr(text)
        if text is None or len(text) <= 40
        else f"{text[:20]!r}... ({len(text)} characters)"
    )


_UNIT_NAMES = {GIB: "GiB", MIB: "MiB", KIB: "KiB", 1: "B"}


def in_unit(n: float, unit: int) -> float:
    """A byte count as a number of `unit` (KIB, MIB, GIB): a chart's coordinate, on an axis that
    names the unit. Text for people is format_bytes'; the views divide bytes nowhere else
    (tests/test_one_helper.py)."""
    return n / unit


def format_bytes(
    n: float | None,
    unit: int | None = None,
    digits: int = 1,
    whole: bool = False,
    label: bool = True,
    none: str = "—",
    sign: bool = False,
) -> str:
    """Bytes for people, the one byte formatter of the
    package: "8.0 MiB", "1.5 GiB", "512 KiB", "100 B".

    unit: GIB, MIB, KIB or 1 fixes the unit (a table column, an exact byte count); by default it is
    the largest that abs(n) reaches. `digits` decimals in GiB and MiB (and in a fixed KiB); a
    chosen KiB and B have none. whole=True (a size as a label: "4 GiB", "256 MiB", "1.5 KiB"):
    `digits` decimals in KiB too, and none for a whole number of the unit. Thousands take commas;
    label=False leaves the unit's name off (a column that names it); None reads `none`.
    sign=True: a change or a rate, "+" before a number that is not negative ("+5.8 KiB").
    """
    if n is None:
        return none
    fixed = unit is not None
    if unit is None:
        unit = next((u for u in (GIB, MIB, KIB) if abs(n) >= u), 1)
    value = in_unit(n, unit)
    places = digits if unit >= MIB or (unit == KIB and (fixed or whole)) else 0
    if whole and float(value).is_integer():
        places = 0
    text = f"{value:,.{places}f}"
    if text.startswith("-") and not text.strip("-0.,"):  # -0.0 reads 0.0
        text = text[1:]
    if sign and not text.startswith("-"):
        text = "+" + text
    return f"{text} {_UNIT_NAMES[unit]}" if label else text
