"""Files a command reads and writes: the checks an output file passes before anything is
measured (writable, apart), and the results folder and machine options (results_dir, machine_of).
Bad input ends in one line, exit 2 (leakbench.cli.base.fail)."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import click

from leakbench import catalog, jsonfile
from leakbench.cli.base import fail
from leakbench.contract import ContractError

# The longest name of one file or folder (NAME_MAX of ext4, xfs, btrfs, tmpfs), in bytes.
_NAME_MAX = 255


def writable(option: str, path: Path, create_folder: bool = False) -> None:
    """End here (one line, exit 2) unless `path` can be written, before anything is measured: its
    folder must exist (create_folder: a default folder of ours is made), it must be a regular file
    or nothing (not a folder, FIFO, device or socket, nor a symbolic link to one, a dangling link
    or a loop: jsonfile.special), and a file can be made beside it. Nothing is left behind by the
    probe, and nothing at `path` is opened."""
    kind = jsonfile.special(path)
    if kind is not None:
        fail(f"{option}: {path} is {kind}, not a regular file")
    folder = path.parent
    if create_folder:
        if any(
            len(os.fsencode(part)) > _NAME_MAX for part in path.parts
        ):  # else the folder is made, then refused
            shown = str(path) if len(str(path)) <= 80 else f"{str(path)[:80]}..."
            fail(f"{option}: {shown}: {os.strerror(errno.ENAMETOOLONG)}")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            fail(f"{option}: cannot create {folder}: {e.strerror or e}")
    if not folder.is_dir():
        fail(f"{option}: directory {folder} does not exist")
    if path.exists() and not os.access(path, os.W_OK):
        fail(f"{option}: {path} cannot be written")
    takes_a_file(option, folder)


def takes_a_file(option: str, folder: Path) -> None:
    """End here (one line, exit 2) unless a file can be made in `folder`; the probe leaves
    nothing."""
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".leakbench-probe-"):
            pass
    except OSError as e:
        fail(f"{option}: cannot write in {folder}: {e.strerror or e}")


def _identity(path: Path) -> tuple:
    """What makes two names one file: device and inode where it exists (a symbolic or hard
    link is the file it names), else the path with every link in it resolved."""
    try:
        found = os.stat(path)
        return ("inode", found.st_dev, found.st_ino)
    except OSError:
        return ("path", os.path.realpath(path))


def apart(outputs, inputs=()) -> None:
    """End here (one line, exit 2), before anything is measured, when an output is one of the
    command's inputs or the same file as another output.

    outputs, inputs: (option or what it is, path) pairs; a None path is passed over. Files are
    compared as _identity does, so a symbolic or hard link to an input is that input. An output
    that a command reads on purpose (repeat's and calibrate's --out, resumed) is not an input here.
    """
    seen: dict[tuple, tuple[str, Path]] = {}
    for what, path in inputs:
        if path is not None:
            seen.setdefault(_identity(Path(path)), (what, Path(path)))
    for option, path in outputs:
        if path is None:
            continue
        key = _identity(Path(path))
        if key in seen:
            what, other = seen[key]
            same = "" if Path(other) == Path(path) else f" ({other})"
            fail(f"{option}: {path} is {what}{same}; an output must be a file of its own")
        seen[key] = (f"{option}'s file too", Path(path))


def results_dir(results: Path | None) -> Path:
    """--results, else ./results, else results/ of the leakbench checkout."""
    if results is not None or Path("results").is_dir():
        return results or Path("results")
    try:
        return catalog.find_root() / "results"
    except ContractError:
        return Path("results")


RESULTS_OPTION = click.option(
    "--results",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="asv results directory holding records/<machine>/tf-<version>.jsonl. Default: ./results.",
)
MACHINE_OPTION = click.option(
    "--machine",
    default=None,
    metavar="NAME",
    help="asv machine whose records to read. Default: the only one in the results.",
)
FORMAT_OPTION = click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "json"]),
    default="markdown",
    show_default=True,
)


def machine_of(results: Path, machine: str | None) -> str:
    """--machine, or asv's machine name (ASV_MACHINE, asv's config); refused in one line (exit 2)
    where it cannot name a folder under results/ (a slash, "..", empty), before anything is made."""
    from leakbench.history import store

    name = machine or store.asv_machine(results)
    try:
        store.records_path(results, name, "none")
    except store.VersionError as e:
        fail(f"--machine: {e}")
    return name
