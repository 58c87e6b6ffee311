"""The command group, and what its commands share: one-line errors, the scenarios named,
progress lines. The measurement options are leakbench.cli.options'; the output files' checks and
the results options leakbench.cli.files'.

Exit codes: leakbench.cli.exits, one table every command follows; each command's help says
which it can return (docs/cli.md).
"""

from __future__ import annotations

import errno
import importlib.util
import io
import sys
from pathlib import Path
from typing import NoReturn

import click
from rich.console import Console

from leakbench import catalog, scenario_source
from leakbench.analysis.record_type import Record
from leakbench.cli import exits
from leakbench.contract import ContractError

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
    """Bad input: one line on stderr (line breaks in it escaped), exit 2 (exits.BAD_INPUT)."""
    say(f"leakbench: error: {message.translate(_LINE_BREAKS)}")
    sys.exit(exits.BAD_INPUT)


def failed(message: str) -> NoReturn:
    """A failure while the command ran (an install, a measurement that could not run): one line on
    stderr (line breaks escaped), exit 3 (exits.FAILED)."""
    say(f"leakbench: error: {message.translate(_LINE_BREAKS)}")
    sys.exit(exits.FAILED)


class _WholeFirstSentence(click.Command):
    """A command whose line in `leakbench --help` is its docstring's first sentence whole, wrapped
    as need be: click would cut it at the terminal's width, mid-sentence, with "..."."""

    def get_short_help_str(self, limit: int = 45) -> str:
        return super().get_short_help_str(limit=10_000)


class _OneLineErrors(click.Group):
    """Click's usage errors (bad choice, unknown option) as one line and exit 2, like ours."""

    command_class = _WholeFirstSentence

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as e:  # bare `leakbench`: the help, as usual
            click.echo(e.format_message())
            sys.exit(exits.BAD_INPUT)
        except click.ClickException as e:
            fail(e.format_message().replace("\n", " "))
        except click.Abort:
            sys.exit(exits.INTERRUPTED)
        except OSError as e:
            if e.errno not in _BAD_NAMES:
                raise
            # a name given on the command line that no filesystem takes: bad input, told in one line
            fail(
                f"{str(e.filename)[:80]}{'...' if len(str(e.filename)) > 80 else ''}: {e.strerror}"
            )


# The errors of a path that cannot name a file (too long, a loop of links): the caller's input.
_BAD_NAMES = (errno.ENAMETOOLONG, errno.ELOOP)


def _version(ctx: click.Context, _param, value: bool) -> None:
    """--version: leakbench's version, its engine (leakbench.version) and the TensorFlow a run
    would measure here (pip's metadata: nothing imported)."""
    if not value or ctx.resilient_parsing:
        return
    from leakbench import version
    from leakbench.history import pin

    tf = pin.installed_tf_version()
    click.echo(
        f"leakbench {version.package_version()} (engine {version.source_hash()}); "
        f"measures TensorFlow {tf or 'none: no TensorFlow installed here'}"
    )
    ctx.exit()


@click.group(
    cls=_OneLineErrors,
    epilog=exits.epilog(**{exits.name(code): what for code, what in exits.TABLE.items()}),
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_version,
    help="Show leakbench's version, its engine and the TensorFlow it would measure, and exit.",
)
def main() -> None:
    """Reproducible, measured memory leaks in tf.data pipelines.

    A command writes its result on stdout, or with --out FILE into FILE, in the form --format
    names (a folder of files: --out-dir DIR); progress and notes go to stderr. Every command
    exits by one table (docs/cli.md); its help says which codes it can return.
    """


def targets_of(names, variant: str) -> list:
    """catalog targets for NAMES; an unknown name, or TensorFlow missing where needed, ends here."""
    try:
        found = catalog.targets(catalog.find_root(), list(names), variant)
    except ContractError as e:
        fail(str(e))
    if importlib.util.find_spec("tensorflow") is None and any(
        scenario_source.imports_tensorflow(t.scenario.path) for t in found
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


def as_text(*parts) -> str:
    """Rich renderables (tables, text) as plain text without colour, 200 columns wide, as `out`
    prints them off a terminal: the `table` form of a result written to a file (--out)."""
    text = io.StringIO()
    console = Console(file=text, width=200, color_system=None, soft_wrap=False)
    for part in parts:
        console.print(part, highlight=False)
    return text.getvalue()


def flamegraph_note(rec: Record, folder: str | None) -> str:
    """Where the record's flame graph is (folder: Settings.flamegraph_dir), or why there is none;
    "" when none was asked for."""
    found = rec.get("flamegraph") or {}
    if "file" in found and folder is not None:
        return f"flame graph {Path(folder) / found['file']}"
    return f"no flame graph: {found['error']}" if "error" in found else ""
