"""The record store: leakbench records per TensorFlow release and machine.

asv's results JSON holds numbers only, so the asv suite (benchmarks/) also
writes the full records of each environment to

    results/records/<machine>/tf-<version>.jsonl     one record per line

where <machine> is asv's machine name, as in asv's own results/<machine>/
(a record measured on one machine is never compared with another's numbers
by accident). compare, matrix and the site read those files, from the only
machine present or the one named. Every record is read through
leakbench.analysis.schema.loads, which migrates older schemas.

One machine name is one machine: a machine is its CPU model and its number of
logical cores, as each record's environment keeps them (environment.cpu,
environment.cores; this_machine for the running one). Reading a machine's
records (available, so by_version and resolve too) refuses a folder that holds
records of more than one, and write_records refuses to add records of another
to a folder; default_machine names the folder leakbench's own writes go to so
that neither happens. A record whose environment names no CPU model is left
out of both checks (nothing to compare). Every refusal is a VersionError, one line.
Reading one file, its path and which machines a folder holds: leakbench.history.record_files;
the machines and their names: leakbench.history.machines.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from leakbench import jsonfile
from leakbench.analysis import schema
from leakbench.analysis.record_type import Record
from leakbench.history import builds
from leakbench.history.machines import (
    asv_machine,
    describe,
    is_local,
    machine_of,
    machine_slug,
    name_beside,
    reference,
    this_machine,
)
from leakbench.history.record_files import (
    RECORDS_DIR,
    VersionError,
    files_word,
    machines_in,
    one_machine,
    read_records,
    records_path,
    version_files,
    version_key,
)


def default_machine(results: Path) -> tuple[str, str | None]:
    """The machine name this machine's records are known by, and why it is not asv's (None
    where it is). A user's runs file under its local() folder; `leakbench publish` under it.

    asv's name (asv_machine) when results/records/<that name>/ holds no record of another machine
    than this one (this_machine); else "<asv name>-<machine_slug>", e.g.
    "vm-intel-xeon-processor-2c", so that a default never mixes two machines in one folder.
    """
    asv = asv_machine(results)
    mine = this_machine()
    folder = Path(results) / RECORDS_DIR / asv
    others = [m for m in machines_in(folder) if m != mine] if folder.is_dir() else []
    if not others:
        return asv, None
    name = f"{asv}-{machine_slug(mine)}"
    why = (
        f"{folder} holds records of {', '.join(map(describe, others))}, not of this machine "
        f"({describe(mine)}): its records go under {name} (--machine names another)"
    )
    return name, why


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


def check_same_machine(
    path: Path, records: Iterable[Record], staying: Iterable[Record] = ()
) -> None:
    """Raise VersionError (one line) where `records`, to be written to `path` (a records file in
    its machine folder), are of several machines (machine_of), or of another than the records
    that stay in that folder: its other files', and `staying`, the records of `path` that they
    do not replace."""
    path = Path(path)
    ours = Counter(m for rec in records if (m := machine_of(rec)) is not None)
    if len(ours) > 1:
        raise VersionError(
            f"records to write to {path} are of {len(ours)} machines: "
            + "; ".join(f"{n} of {describe(m)}" for m, n in ours.items())
        )
    if ours:
        (mine,) = ours
        _refuse_other(path, mine, f"{sum(ours.values())} of {describe(mine)}", staying)


def check_writable(results: Path, machine: str, version: str) -> Path:
    """The records file write_records would write this machine's (this_machine) records of
    `version` to under `machine`, checked before anything is measured. Raises VersionError (one
    line) where write_records would: a machine name that is no folder, a file that cannot be
    read whole (existing), a folder holding another machine's records."""
    path = records_path(results, machine, version)
    mine = this_machine()
    _refuse_other(path, mine, f"records of {describe(mine)}", existing(path))
    return path


def _refuse_other(path: Path, mine: tuple, ours: str, staying: Iterable[Record]) -> None:
    """Raise VersionError where the folder of `path` (its other files, and `staying` for `path`)
    holds records of another machine than `mine`; `ours` says what was to be written."""
    theirs = machines_in(path.parent, skip=path.name) if path.parent.is_dir() else {}
    for m, n in Counter(m for rec in staying if (m := machine_of(rec)) is not None).items():
        theirs.setdefault(m, {})[path.name] = n
    held = "; ".join(
        f"{sum(files.values())} of {describe(m)} ({files_word(len(files))})"
        for m, files in theirs.items()
        if m != mine
    )
    if held:
        raise VersionError(
            f"{path.parent} holds records of another machine ({held}); {ours} would mix two "
            f"under one name: file them under a name of their own, "
            f"e.g. {name_beside(path.parent.name, mine)}"
        )


def write_records(results: Path, machine: str, version: str, records: list[Record]) -> Path:
    """Store one environment's records under its machine: replace those of the same
    pair and variant, keep the others, rewrite the file atomically (a rerun never
    appends duplicates; a run of a few pairs does not drop the rest). Records of an
    older schema in the file are kept, migrated. Returns the file written.

    Raises VersionError (before writing anything) for a bad machine name, a file that
    cannot be read whole (existing), or records of another machine than the folder's
    (check_same_machine)."""
    path = records_path(results, machine, version)
    old = {(r["pair"], r["variant"]): r for r in existing(path)}
    new = {(r["pair"], r["variant"]): r for r in records}
    check_same_machine(path, new.values(), [r for k, r in old.items() if k not in new])
    kept = {**old, **new}
    path.parent.mkdir(parents=True, exist_ok=True)
    jsonfile.write_text_atomic(
        path, "".join(schema.dumps(kept[key]) + "\n" for key in sorted(kept))
    )
    return path


def replace_records(results: Path, machine: str, version: str, records: list[Record]) -> Path:
    """Write one build's records under `machine` whole, dropping what the file held (leakbench
    publish: a build is measured whole, by one engine). Returns the file written. Raises
    VersionError for a bad machine name or records of another machine than the folder's."""
    path = records_path(results, machine, version)
    check_same_machine(path, records)
    path.parent.mkdir(parents=True, exist_ok=True)
    ordered = sorted(records, key=lambda r: (r["pair"], r["variant"]))
    jsonfile.write_text_atomic(path, "".join(schema.dumps(r) + "\n" for r in ordered))
    return path


def machines(results: Path, with_local: bool = True) -> list[str]:
    """asv machine names with records in `results` (folders of records/ holding
    tf-<version>.jsonl); with_local=False leaves out a user's own runs (LOCAL)."""
    folder = Path(results) / RECORDS_DIR
    if not folder.is_dir():
        return []
    return sorted(
        d.name
        for d in folder.iterdir()
        if d.is_dir() and version_files(d) and (with_local or not is_local(d.name))
    )


def pick_machine(results: Path, machine: str | None = None) -> str:
    """`machine` if `results` holds its records; else the only machine there; else, of several,
    the published dataset's machine (reference), else asv's machine (asv_machine) where it has
    records there.

    Raises VersionError (one line) when there is none, when `machine` is not
    there, or when several are there, none was named and asv's is not among them.
    """
    results = Path(results)
    # a name no filesystem takes raises OSError: the CLI's main group says it in one line
    if not results.is_dir():
        raise VersionError(f"no results directory at {results}")
    found = machines(results)
    if not found:
        if version_files(results / RECORDS_DIR):
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
        if len(found) == 1:
            return found[0]
        if (ref := reference(results)) and ref["machine"] in found:
            return ref["machine"]
        if (asv := asv_machine(results)) in found:
            return asv
        raise VersionError(
            f"{results} holds records of {len(found)} machines ({', '.join(found)}): "
            "pick one with --machine"
        )
    if machine not in found:
        raise VersionError(
            f"no records of machine {machine!r} in {results} (have: {', '.join(found)})"
        )
    return machine


def published_machine(results: Path) -> str:
    """The machine the published views of `results` read by default (causes --leave-one-out):
    the published dataset's, as its manifest (reference) names it; where there is no manifest,
    the only published machine (machines, with_local=False), else pick_machine's choice, which
    must be a published one (a user's own runs, LOCAL, are never the published dataset).

    Raises VersionError (one line) where `results` holds no records, where the manifest's
    machine has none there, or where no published machine can be chosen.
    """
    if (ref := reference(results)) is not None:
        return pick_machine(results, ref["machine"])
    published = machines(results, with_local=False)
    if len(published) == 1:
        return published[0]
    found = pick_machine(results)
    if is_local(found):
        raise VersionError(
            f"{results} holds no published records, only a user's own runs ({found}): "
            "pick one with --machine"
        )
    return found


def available(results: Path, machine: str | None = None) -> dict[str, Path]:
    """TF version -> records file of one machine in `results` (pick_machine), sorted by version.

    Raises VersionError when `results` is not a directory of leakbench records, or when the
    machine's folder holds records of several machines (CPU model and cores: the module
    docstring), naming them.
    """
    folder = Path(results) / RECORDS_DIR / pick_machine(results, machine)
    one_machine(folder, machines_in(folder))
    return dict(sorted(version_files(folder).items(), key=lambda kv: version_key(kv[0])))


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
        counts = Counter(m for r in recs if (m := machine_of(r)) is not None)
        one_machine(path, {m: {path.name: n} for m, n in counts.items()})
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
