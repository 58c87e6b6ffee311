"""`leakbench site`: the static site (logic in leakbench.site)."""

from __future__ import annotations

from pathlib import Path

import click

from leakbench.cli import exits
from leakbench.cli.base import fail, main
from leakbench.cli.files import MACHINE_OPTION, RESULTS_OPTION, results_dir
from leakbench.history.store import VersionError
from leakbench.units import KIB, format_bytes


@main.command(
    "site",
    epilog=exits.epilog(
        DONE="the site built",
        BAD_INPUT="bad input (the results, --out-dir), the previous site kept",
    ),
)
@RESULTS_OPTION
@MACHINE_OPTION
@click.option(
    "--out-dir",
    "out",
    type=click.Path(path_type=Path),
    default=Path("site"),
    show_default=True,
    metavar="DIR",
    help="A folder, not a file: the site is built beside it and replaces it whole.",
)
@click.option(
    "--asv/--no-asv",
    default=True,
    show_default=True,
    help="Also run `asv publish` of the same results into DIR/asv (--out-dir).",
)
def site_command(results, machine, out, asv) -> None:
    """Build the static site from the results.

    The leak matrix and one lesson per pair, as HTML pages in --out-dir (docs/site.md).
    """
    from leakbench.site import build as site

    try:
        built = site.build(results_dir(results), out, asv=asv, machine=machine)
    except (VersionError, site.SiteError) as e:
        fail(str(e))
    for rel, size in built.pages:
        click.echo(f"{out / rel}  {format_bytes(size, unit=KIB)}")
    for note in built.notes:
        click.echo(f"note: {note}")
    click.echo(
        f"{len(built.pages)} files{' and asv/' if built.asv else ''} in {built.seconds:.1f} s: "
        f"open {out / 'index.html'}"
    )
