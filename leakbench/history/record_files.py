"""The records files of the store (leakbench.history.store): their path
(results/records/<machine>/tf-<version>.jsonl), reading one, migrated, its TensorFlow versions
in order, and which machines (CPU model and logical cores) the records of a folder or a file
name, with the refusal where they name more than one. Every refusal is a VersionError, one line.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

from leakbench import jsonfile
from leakbench.analysis import schema
from leakbench.analysis.record_type import Record
from leakbench.history import builds
from leakbench.history.machines import describe, machine_of, machine_slug

RECORDS_DIR = "records"
_FILE = re.compile(r"tf-(.+)\.jsonl")


class VersionError(ValueError):
    """Bad input for compare/matrix, unreadable records,
    or a TensorFlow pin that did not hold. One line."""


def scan(path: Path) -> Counter:
    """machine_of -> records, for the lines of one records file that parse: a quick look at
    environment.cpu and environment.cores alone (read_records tells what else is wrong)."""
    found: Counter = Counter()
    try:
        lines = jsonfile.read_text(path).splitlines()
    except jsonfile.Unreadable:
        return found
    for line in lines:
        try:
            rec = jsonfile.parse(line) if line.strip() else None
        except jsonfile.BadJSON:
            continue
        if isinstance(rec, dict) and (machine := machine_of(rec)) is not None:
            found[machine] += 1
    return found


def machines_in(folder: Path, skip: str | None = None) -> dict[tuple, dict[str, int]]:
    """machine_of -> {file name: records} over the tf-*.jsonl files of a machine folder
    (but `skip`, a file name), files in version order."""
    found: dict[tuple, dict[str, int]] = {}
    files = sorted(version_files(folder).items(), key=lambda kv: version_key(kv[0]))
    for _, path in files:
        if path.name == skip:
            continue
        for machine, count in scan(path).items():
            found.setdefault(machine, {})[path.name] = count
    return found


def files_word(n: int) -> str:
    return f"{n} file{'s' if n != 1 else ''}"


def one_machine(where: Path, found: dict[tuple, dict[str, int]]) -> None:
    """Raise VersionError (one line) where `found` (machines_in of `where`, a machine folder or a
    records file) holds several machines: each with its records, and the files of all but the
    most numerous."""
    if len(found) < 2:
        return
    ranked = sorted(found.items(), key=lambda kv: (-sum(kv[1].values()), str(kv[0])))
    (most, its_files), rest = ranked[0], ranked[1:]
    parts = [f"{sum(its_files.values())} of {describe(most)} ({files_word(len(its_files))})"]
    parts += [
        f"{sum(files.values())} of {describe(m)} in "
        + ", ".join(f"{name} ({n})" for name, n in files.items())
        for m, files in rest
    ]
    raise VersionError(
        f"{where} mixes records of {len(found)} machines under one name: {'; '.join(parts)}; "
        f"file each machine's records under a name of its own "
        f"(e.g. {Path(where).parent.name if Path(where).is_file() else Path(where).name}-"
        f"{machine_slug(rest[0][0])} for {rest[0][0][0]})"
    )


def records_path(results: Path, machine: str, version: str) -> Path:
    """results/records/<machine>/tf-<version>.jsonl. Raises
    VersionError for a machine name that is no folder."""
    if not machine or machine in (".", "..") or "/" in machine or os.sep in machine:
        raise VersionError(f"{machine!r} is not an asv machine name usable as a folder")
    return Path(results) / RECORDS_DIR / machine / f"tf-{version}.jsonl"


def read_records(path: Path, allow_empty: bool = False) -> list[Record]:
    """Records of one file, migrated to the current schema (leakbench.analysis.schema).

    Raises VersionError for a file that cannot be read (jsonfile.read_text: no regular file, over
    jsonfile.MAX_BYTES, not UTF-8), a line that is not a record of a schema this leakbench reads,
    or (unless allow_empty) no records.
    """
    path = Path(path)
    try:
        lines = jsonfile.read_text(path).splitlines()
    except jsonfile.Unreadable as e:
        raise VersionError(str(e)) from None
    found = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            found.append(schema.loads(line))
        except schema.SchemaError as e:
            raise VersionError(f"{path}, line {n}: {e}") from None
    if not found and not allow_empty:
        raise VersionError(f"{path}: holds no records")
    return found


def version_key(version: str) -> tuple:
    """'2.9.1' < '2.12.1' < '2.22.0.dev20260204' <
    '2.22.0rc0': PEP 440 (leakbench.history.builds)."""
    return builds.sort_key(version)


def version_files(folder: Path) -> dict[str, Path]:
    return {m.group(1): p for p in folder.glob("tf-*.jsonl") if (m := _FILE.fullmatch(p.name))}
