"""Files a command reads and writes: the checks an output file passes before anything is
measured (writable, apart), the results folder and machine options (results_dir, machine_of), and
the one way a result is written: --format and --out FILE (format_option, OUT_OPTION, emit;
docs/cli.md). Bad input ends in one line, exit 2 (leakbench.cli.base.fail)."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import click

from leakbench import catalog, jsonfile
from leakbench.cli.base import fail, say
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


def results_dir(results: Path | None, writes: bool = False) -> Path:
    """--results, else ./results, else results/ of the root catalog.find_root finds: a checkout's,
    or the results shipped in the installed package, which are read and never written (`writes`:
    a command that files results there gets ./results instead)."""
    if results is not None or Path("results").is_dir():
        return results or Path("results")
    try:
        root = catalog.find_root()
    except ContractError:
        return Path("results")
    return Path("results") if writes and catalog.is_shipped(root) else root / "results"


def records_in(results: Path) -> list[tuple[str, Path]]:
    """Every records file under results/records/, as apart's inputs: an --out is none of them."""
    from leakbench.history import store

    found = sorted((results / store.RECORDS_DIR).glob("*/*.jsonl"))
    return [("a records file it reads", path) for path in found]


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


def format_option(**forms: str):
    """--format: the form of the command's result, one of `forms` (form -> what it is, for the
    help; the first is the default): json, markdown, table (docs/cli.md)."""
    shown = ", ".join(f"{form} ({what})" for form, what in forms.items())
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(list(forms)),
        default=next(iter(forms)),
        show_default=True,
        help=f"The result's form: {shown}. It goes to stdout, or to --out FILE.",
    )


OUT_OPTION = click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Write the result (in --format) to FILE, replaced whole, instead of stdout; stdout then "
    "shows what it shows by default.",
)


def emit(fmt: str, out: Path | None, text_of, show, shows: str) -> None:
    """The result in one place. show() prints the command's usual view on stdout (to a terminal
    in colour and at its width), which is the form `shows`; text_of(form) is the result as text.
    Without --out: show() where --format is that form, else text_of(fmt) on stdout. With --out:
    text_of(fmt) into it (replaced whole, one line on stderr naming it), then show(), so a log
    still reads the usual view. A file that cannot be written ends here, one line, exit 2
    (writable checked it before anything was measured)."""
    if out is None:
        if fmt == shows:
            show()
        else:
            click.echo(text_of(fmt), nl=False)
        return
    text = text_of(fmt)
    try:
        jsonfile.write_text_atomic(out, text)
    except OSError as e:
        fail(f"--out: cannot write {out}: {e.strerror or e}")
    show()
    say(f"leakbench: result written to {out}")


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
