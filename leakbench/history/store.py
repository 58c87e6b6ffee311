"""The record store: leakbench records per TensorFlow release and machine.

asv's results JSON holds numbers only, so the asv suite (benchmarks/) also
writes the full records of each environment to

    results/records/<machine>/tf-<version>.jsonl     one record per line

where <machine> is asv's machine name, as in asv's own results/<machine>/
(a record measured on one machine is never compared with another's numbers
by accident). compare, matrix and the site read those files, from the only
machine present or the one named. Every record is read through
leakbench.analysis.schema.loads, which migrates older schemas.
"""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path

from leakbench import jsonfile
from leakbench.analysis import schema
from leakbench.analysis.schema import Record
from leakbench.history import builds

RECORDS_DIR = "records"
_FILE = re.compile(r"tf-(.+)\.jsonl")


class VersionError(ValueError):
    """Bad input for compare/matrix, unreadable records,
    or a TensorFlow pin that did not hold. One line."""


def asv_machine(results: Path) -> str:
    """The asv machine name the running asv suite files its results under.

    asv does not tell a benchmark its machine, so, in order: $ASV_MACHINE (set
    it with `asv run --machine NAME`; the GitHub workflow does); else the
    machine whose results/<machine>/machine.json was written last (`asv run`
    rewrites it as it starts, before any benchmark runs); else asv's default
    name, the host name (platform.uname().node).
    """
    if os.environ.get("ASV_MACHINE"):
        return os.environ["ASV_MACHINE"]
    written = sorted(Path(results).glob("*/machine.json"), key=lambda p: p.stat().st_mtime)
    return written[-1].parent.name if written else platform.uname().node


def records_path(results: Path, machine: str, version: str) -> Path:
    """results/records/<machine>/tf-<version>.jsonl. Raises
    VersionError for a machine name that is no folder."""
    if not machine or machine in (".", "..") or "/" in machine or os.sep in machine:
        raise VersionError(f"{machine!r} is not an asv machine name usable as a folder")
    return Path(results) / RECORDS_DIR / machine / f"tf-{version}.jsonl"


def existing(path: Path) -> list[Record]:
    """The records already in `path` ([] if there is no file), to be kept by write_records.

    Raises VersionError when the file cannot be read whole (a corrupt line, a
    newer schema): writing would drop what it holds, so nothing is written.
    """
    if not Path(path).exists():
        return []
    try:
        return read_records(path, allow_empty=True)
    except VersionError as e:
        raise VersionError(
            f"{e}; it is kept as it is: repair or move it, then measure again"
        ) from None


def write_records(results: Path, machine: str, version: str, records: list[Record]) -> Path:
    """Store one environment's records under its machine: replace those of the same
    pair and variant, keep the others, rewrite the file atomically (a rerun never
    appends duplicates; a run of a few pairs does not drop the rest). Records of an
    older schema in the file are kept, migrated. Raises VersionError (before writing
    anything) for a bad machine name or a file that cannot be read whole (existing)."""
    path = records_path(results, machine, version)
    kept = {(r["pair"], r["variant"]): r for r in existing(path)}
    for rec in records:
        kept[(rec["pair"], rec["variant"])] = rec
    path.parent.mkdir(parents=True, exist_ok=True)
    jsonfile.write_text_atomic(
        path, "".join(schema.dumps(kept[key]) + "\n" for key in sorted(kept))
    )
    return path


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


def _version_files(folder: Path) -> dict[str, Path]:
    return {m.group(1): p for p in folder.glob("tf-*.jsonl") if (m := _FILE.fullmatch(p.name))}


def machines(results: Path) -> list[str]:
    """asv machine names with records in `results`
    (folders of records/ holding tf-<version>.jsonl)."""
    folder = Path(results) / RECORDS_DIR
    if not folder.is_dir():
        return []
    return sorted(d.name for d in folder.iterdir() if d.is_dir() and _version_files(d))


def pick_machine(results: Path, machine: str | None = None) -> str:
    """`machine` if `results` holds its records, else the only machine there.

    Raises VersionError (one line) when there is none, when `machine` is not
    there, or when several are there and none was named.
    """
    results = Path(results)
    # a name no filesystem takes raises OSError: the CLI's main group says it in one line
    if not results.is_dir():
        raise VersionError(f"no results directory at {results}")
    found = machines(results)
    if not found:
        if _version_files(results / RECORDS_DIR):
            raise VersionError(
                f"{results / RECORDS_DIR} holds records without a machine folder "
                f"(the layout before {RECORDS_DIR}/<machine>/tf-<version>.jsonl): "
                f"move them into {RECORDS_DIR}/<asv machine name>/"
            )
        raise VersionError(
            f"{results} holds no leakbench records ({RECORDS_DIR}/<machine>/tf-<version>.jsonl): "
            "run the asv suite first, or pass --results"
        )
    if machine is None:
        if len(found) > 1:
            raise VersionError(
                f"{results} holds records of {len(found)} machines ({', '.join(found)}): "
                "pick one with --machine"
            )
        return found[0]
    if machine not in found:
        raise VersionError(
            f"no records of machine {machine!r} in {results} (have: {', '.join(found)})"
        )
    return machine


def available(results: Path, machine: str | None = None) -> dict[str, Path]:
    """TF version -> records file of one machine in `results` (pick_machine), sorted by version.

    Raises VersionError when `results` is not a directory of leakbench records.
    """
    folder = Path(results) / RECORDS_DIR / pick_machine(results, machine)
    return dict(sorted(_version_files(folder).items(), key=lambda kv: version_key(kv[0])))


def by_version(results: Path, machine: str | None = None) -> dict[str, dict[tuple, Record]]:
    """TF version -> {(pair, variant): record} for one machine in `results`, versions in order."""
    return {
        v: {(r["pair"], r["variant"]): r for r in read_records(p)}
        for v, p in available(results, machine).items()
    }


def resolve(results: Path, what: str, machine: str | None = None) -> tuple[str, list[Record]]:
    """A label and the records for `what`: a TF version in `results` (of `machine`), "nightly" (the
    newest dated nightly there), or a records file. The label names a nightly by its build date
    (builds.label). Raises VersionError for a version, nightly or file that is not there."""
    path = Path(what)
    try:
        is_file = path.is_file()
    except OSError:  # too long a name for the filesystem, a loop: a version to look up, not a file
        is_file = False
    if what.endswith(".jsonl") or is_file:
        if not is_file:
            raise VersionError(f"no records file at {path}")
        recs = read_records(path)
        return builds.label(
            recs[0]["environment"].get("tensorflow") or path.stem[len("tf-") :]
        ), recs
    files = available(results, machine)
    if what == builds.NIGHTLY:
        what = builds.newest_nightly(files) or what
    found = next((v for v in files if builds.same_build(v, what)), None)
    if found is None:
        raise VersionError(f"TensorFlow {what} is not in {results} (have: {', '.join(files)})")
    return builds.label(found), read_records(files[found])
