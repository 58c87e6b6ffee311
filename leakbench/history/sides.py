"""Who made each side of a comparison (leakbench.history.compare): the machines (CPU model and
logical cores, leakbench.history.machines) its records name, refused where they differ unless
asked for, and the engines (leakbench.version) that made them."""

from __future__ import annotations

from leakbench import version
from leakbench.analysis.record_type import Record
from leakbench.history import machines
from leakbench.history.store import VersionError


def machines_of(
    old: list[Record],
    new: list[Record],
    names: tuple[str, str],
    across_machines: bool = False,
) -> list[str] | None:
    """[old's, new's] machines (machines.describe) where the two sides were measured on different
    machines (machines.machine_of), else None (one machine, or a side naming none).

    Raises VersionError (one line, naming the sides by `names` and both machines) for two machines
    unless across_machines: a comparison across hardware must be asked for."""
    sides = [
        sorted({m for r in recs if (m := machines.machine_of(r)) is not None}, key=str)
        for recs in (old, new)
    ]
    if not all(sides) or sides[0] == sides[1]:
        return None
    words = [" and ".join(map(machines.describe, side)) for side in sides]
    if not across_machines:
        raise VersionError(
            f"{names[0]} ({words[0]}) and {names[1]} ({words[1]}) were measured on different "
            "machines: a hardware difference would read as a TensorFlow change; compare one "
            "machine's records, or pass --across-machines to compare across hardware"
        )
    return words


def engines_of(old: list[Record], new: list[Record]) -> list[str]:
    """The engines that made each side (leakbench.version.describe of each side's records): one
    entry where both sides are one engine's, [old's, new's] where they differ (a side of several
    engines reads them joined by ' and ')."""
    sides = [
        " and ".join(sorted({version.describe(r) for r in recs})) or "no records"
        for recs in (old, new)
    ]
    return sides[:1] if sides[0] == sides[1] else sides
