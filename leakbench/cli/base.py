"""The command group, and what its commands share: one-line errors, the
measurement options, the results options, progress lines.

Exit codes of every command: 0 as expected, 1 a verdict the variant should
not read (each command says which), 2 bad input (one line on stderr, nothing
run, nothing already recorded touched).
"""

from __future__ import annotations

import errno
import functools
import importlib.util
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

import click
from rich.console import Console

from leakbench import catalog, contract, jsonfile
from leakbench.analysis.schema import Record
from leakbench.cli.types import FINITE_SECONDS
from leakbench.contract import ContractError
from leakbench.contract_rules import MIN_SERIES
from leakbench.measure import Settings
from leakbench.units import parse_size

# Off a terminal (CI logs, pipes) rich would wrap the table at 80 columns.
out = Console(width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True)


def say(message: str) -> None:
    """One plain line on stderr (markup=False: messages
    hold paths and "[tf]", which rich reads as tags)."""
    err.print(message, highlight=False, markup=False, soft_wrap=True)


# What str.splitlines breaks a line at, written as
# escapes: bad input (a path, a pair name) may hold them.
_LINE_BREAKS = {
    c: repr(chr(c))[1:-1] for c in (0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x85, 0x2028, 0x2029)
}


def one_line(text: str) -> str:
    """A message of several lines (an exception's, a crashed child's log tail) whole on one line,
    its line breaks shown escaped."""
    return text.strip().translate(_LINE_BREAKS)


def fail(message: str) -> NoReturn:
    """Bad input: one line on stderr (line breaks in it escaped), exit 2."""
    say(f"leakbench: error: {message.translate(_LINE_BREAKS)}")
    sys.exit(2)


class _OneLineErrors(click.Group):
    """Click's usage errors (bad choice, unknown option) as one line and exit 2, like ours."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as e:  # bare `leakbench`: the help, as usual
            click.echo(e.format_message())
            sys.exit(2)
        except click.ClickException as e:
            fail(e.format_message().replace("\n", " "))
        except click.Abort:
            sys.exit(130)
        except OSError as e:
            if e.errno not in _BAD_NAMES:
                raise
            # a name given on the command line that no filesystem takes: bad input, told in one line
            fail(
                f"{str(e.filename)[:80]}{'...' if len(str(e.filename)) > 80 else ''}: {e.strerror}"
            )


# The errors of a path that cannot name a file (too long, a loop of links): the caller's input.
_BAD_NAMES = (errno.ENAMETOOLONG, errno.ELOOP)
# The longest name of one file or folder (NAME_MAX of ext4, xfs, btrfs, tmpfs), in bytes.
_NAME_MAX = 255


@click.group(cls=_OneLineErrors)
def main() -> None:
    """Reproducible, measured memory leaks in tf.data pipelines."""


SCALES_OPTION = click.option(
    "--scales",
    default="1,4",
    show_default=True,
    help="Multiples of the size parameter for peak scenarios, increasing.",
)


def measurement_options(scales: bool = False):
    """The options `run`, `check` and `repeat` share: repetitions, memory cap, timeouts, the
    flame graph's folder, and with scales --scales. The command gets them as one `settings`
    (settings_of, before its own body runs: a bad value ends there, one line, exit 2)."""
    options = [
        click.option(
            "--reps",
            type=click.IntRange(MIN_SERIES, 10_000),
            default=Settings.reps,
            show_default=True,
            help="Measured repetitions per child run.",
        ),
        click.option(
            "--warmup", type=click.IntRange(0, 10_000), default=Settings.warmup, show_default=True
        ),
        click.option(
            "--heap-reps",
            type=click.IntRange(0, 10_000),
            default=Settings.heap_reps,
            show_default=True,
            help=f"Repetitions of the memray heap pass (0: skip it; else at least {MIN_SERIES}).",
        ),
        click.option(
            "--cap",
            "cap",
            default=None,
            metavar="SIZE",
            help="Memory cap per child (RSS of its process tree), e.g. 4GiB. Default: half of RAM, "
            "or less where little is available or a cgroup limits memory.",
        ),
        click.option(
            "--timeout",
            type=FINITE_SECONDS,
            default=Settings.timeout_seconds,
            show_default=True,
            help="Seconds a child run may go without progress (a phase begun, "
            "a repetition done) before it is killed as a hang: per step, "
            "not for the whole run.",
        ),
        click.option(
            "--teardown-timeout",
            type=FINITE_SECONDS,
            default=Settings.teardown_timeout_seconds,
            show_default=True,
            help="Seconds a child may take to tear down once its measurement is in.",
        ),
        click.option(
            "--flamegraph-dir",
            type=click.Path(file_okay=False, path_type=Path),
            default=None,
            metavar="DIR",
            help="Also write memray's flame graph of the allocations the heap pass "
            "retained (memray flamegraph --leaks) to DIR/<pair>-<variant>.html.",
        ),
        *([SCALES_OPTION] if scales else []),
    ]

    def decorate(command):
        @functools.wraps(command)
        def measured(**given):
            # --scales first: scales_of's refusal comes before settings_of's, as it always has
            more = {"scales": scales_of(given.pop("scales"))} if scales else {}
            shared = [given.pop(o) for o in _SHARED]
            return command(settings=settings_of(*shared, **more), **given)

        for option in reversed(options):
            measured = option(measured)
        return measured

    return decorate


# measurement_options' parameters, in settings_of's order
_SHARED = ("reps", "warmup", "heap_reps", "cap", "timeout", "teardown_timeout", "flamegraph_dir")


def scales_of(text: str) -> tuple:
    """'1,4' -> (1.0, 4.0); bad input ends here (Settings says what scales may be)."""
    try:
        found = tuple(float(s) for s in text.split(","))
        bad = next(
            (s.strip() for s, number in zip(text.split(","), found) if not math.isfinite(number)),
            None,
        )
        if bad is not None:
            fail(f"--scales: {bad!r} is not a finite number")
        Settings(scales=found)
    except ValueError:
        fail(
            f"--scales: {text!r} is not two or more positive "
            "multiples in increasing order, e.g. 1,4"
        )
    return found


def sizes_fit(plans, scales) -> None:
    """End here (one line, exit 2) when a peak pair's size times a scale is past what a float
    holds (each finite, their product not): plans are (target, parameters) pairs."""
    from leakbench.measure import sizes

    for target, params in plans:
        try:
            sizes(target, params, scales)
        except ValueError as e:
            fail(f"--param/--scales: {target.scenario.name}: {e}")


def settings_of(
    reps, warmup, heap_reps, cap, timeout, teardown_timeout, flamegraph_dir, **more
) -> Settings:
    """Settings from the shared options; bad values end here with one line, exit 2."""
    try:
        cap_bytes = parse_size(cap) if cap is not None else 0  # "" is bad input, not the default
    except ValueError as e:
        fail(f"--cap: {e}")
    if 0 < heap_reps < MIN_SERIES:
        fail(
            f"--heap-reps: {heap_reps} is too few for a heap "
            f"trend; use 0 to skip the pass, or >= {MIN_SERIES}"
        )
    if flamegraph_dir is not None:
        if heap_reps == 0:
            fail(
                "--flamegraph-dir: the flame graph is drawn "
                "from the heap pass; --heap-reps 0 skips it"
            )
        try:
            flamegraph_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            fail(f"--flamegraph-dir: cannot write in {flamegraph_dir}: {e.strerror or e}")
        # a folder that exists but takes no file would fail only after the measurement
        takes_a_file("--flamegraph-dir", flamegraph_dir)
    return Settings(
        warmup=warmup,
        reps=reps,
        heap_reps=heap_reps,
        cap_bytes=cap_bytes,
        timeout_seconds=timeout,
        teardown_timeout_seconds=teardown_timeout,
        flamegraph_dir=str(flamegraph_dir) if flamegraph_dir is not None else None,
        **more,
    )


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


def targets_of(names, variant: str) -> list:
    """catalog targets for NAMES; an unknown name, or TensorFlow missing where needed, ends here."""
    try:
        found = catalog.targets(catalog.find_root(), list(names), variant)
    except ContractError as e:
        fail(str(e))
    if importlib.util.find_spec("tensorflow") is None and any(
        contract.imports_tensorflow(t.scenario.path) for t in found
    ):
        fail(
            f"TensorFlow is not installed for {sys.executable}; "
            "install it, e.g. pip install 'leakbench[tf]'"
        )
    return found


def progress(status, label: str, reps: int):
    """A child-message callback that shows the phase and repetition on a rich status line."""

    def show(message: dict) -> None:
        if "phase" in message:
            status.update(f"{label}: {message['phase']}")
        elif "sample" in message:
            status.update(f"{label}: repetition {message['rep'] + 1}/{reps}")

    return show


def flamegraph_note(rec: Record, folder: str | None) -> str:
    """Where the record's flame graph is (folder: Settings.flamegraph_dir), or why there is none;
    "" when none was asked for."""
    found = rec.get("flamegraph") or {}
    if "file" in found and folder is not None:
        return f"flame graph {Path(folder) / found['file']}"
    return f"no flame graph: {found['error']}" if "error" in found else ""


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
