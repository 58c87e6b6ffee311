"""`leakbench compare` and `leakbench matrix`: TensorFlow releases' records (logic in
leakbench.history; compare classifies as `leakbench gate` does, leakbench.cli.gate)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from leakbench.cli import exits
from leakbench.cli.base import fail, main
from leakbench.cli.files import (
    MACHINE_OPTION,
    OUT_OPTION,
    RESULTS_OPTION,
    apart,
    emit,
    format_option,
    records_in,
    results_dir,
    writable,
)
from leakbench.cli.types import FINITE_FLOAT
from leakbench.history import compare as comparing
from leakbench.history import gate as gating
from leakbench.history import matrix as tabulating
from leakbench.history import store
from leakbench.reporters import history as views


@main.command(
    epilog=exits.epilog(
        DONE="no regression",
        VERDICT="a regression (a fix or a declared no-leak that leaks, a new hang, error or "
        "over-cap, a peak pair's fix whose peak grew past the factor)",
        BAD_INPUT="bad input (two machines' records without --across-machines included)",
    )
)
@click.argument("old")
@click.argument("new")
@click.option(
    "--factor",
    type=FINITE_FLOAT,
    default=comparing.DEFAULT_FACTOR,
    show_default=True,
    help="Mark a metric regressed or improved past this ratio.",
)
@click.option(
    "--across-machines",
    is_flag=True,
    help="Compare records measured on two different machines (CPU model or cores) all the same; "
    "the summary says so first. Without it, two machines are refused (exit 2).",
)
@RESULTS_OPTION
@MACHINE_OPTION
@format_option(markdown="the summary, then every metric", json="the comparison, classified")
@OUT_OPTION
def compare(old, new, factor, across_machines, results, machine, fmt, out) -> None:
    """Compare two TensorFlow builds' records, without measuring.

    The release gate on records already filed (`leakbench gate`). OLD and NEW are TF versions in
    the results (2.13.1, `nightly`) or records files (.jsonl). A summary first (regressions, fixed
    upstream, changes that do not count: docs/gate.md), then per pair, variant and metric. Both
    sides must be measured on one machine (CPU model and cores) unless --across-machines.
    """
    if out is not None:
        writable("--out", out)
    try:
        where = results_dir(results)
        from_files = all(w.endswith(".jsonl") or _is_file(w) for w in (old, new))
        if not from_files:
            machine = store.pick_machine(where, machine)
        (old_label, old_recs, old_v), (new_label, new_recs, new_v) = (
            _side(where, what, machine) for what in (old, new)
        )
        found = comparing.compare(
            old_label,
            old_recs,
            new_label,
            new_recs,
            factor,
            machine=None if from_files else machine,
            versions=(old_v, new_v),
            across_machines=across_machines,
            names=(old, new),
        )
    except store.VersionError as e:
        fail(str(e))
    given = [("a records file it reads", Path(w)) for w in (old, new) if from_files]
    apart([("--out", out)], records_in(where) + given)

    def text_of(form: str) -> str:
        if form == "json":
            return json.dumps(found.as_dict(), indent=2) + "\n"
        return views.compare_markdown(found) + "\n"

    emit(fmt, out, text_of, lambda: click.echo(text_of("markdown"), nl=False), "markdown")
    raise SystemExit(found.exit_code)


def _side(where: Path, what: str, machine: str | None) -> tuple[str, list, str | None]:
    """(label, records, version) of one side: a records file (store.resolve; no version), else a
    version of the machine's records, as the gate reads it (leakbench.history.gate.recorded)."""
    if what.endswith(".jsonl") or _is_file(what):
        return (*store.resolve(where, what, machine), None)
    assert machine is not None  # picked where a side is no file
    side = gating.recorded(where, machine, what, [])
    return side.label, side.records, side.version


@main.command(
    epilog=exits.epilog(
        DONE="the table written", BAD_INPUT="bad input (no records, a machine not found)"
    )
)
@RESULTS_OPTION
@MACHINE_OPTION
@format_option(markdown="the table and the changes", json="the table's data and the changes")
@OUT_OPTION
def matrix(results, machine, fmt, out) -> None:
    """The pair × TensorFlow build table of verdicts.

    Every pair's verdict (and growth) per build in the results, and every verdict that changed.
    """
    if out is not None:
        writable("--out", out)
    where = results_dir(results)
    try:
        found = tabulating.matrix(where, machine)
    except store.VersionError as e:
        fail(str(e))
    apart([("--out", out)], records_in(where))

    def text_of(form: str) -> str:
        if form == "json":  # the table's data and the list of changes above it
            return json.dumps({**found, "changes": tabulating.changes(found)}, indent=2) + "\n"
        return views.matrix_markdown(found) + "\n"

    emit(fmt, out, text_of, lambda: click.echo(text_of("markdown"), nl=False), "markdown")


def _is_file(name: str) -> bool:
    """Path(name).is_file(), False where the name cannot
    be a file (too long, a loop): a version then."""
    try:
        return Path(name).is_file()
    except OSError:
        return False
