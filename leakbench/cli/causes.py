"""`leakbench causes`: the known causes a record's evidence is nearest to, and how well that naming
works (logic in leakbench.check.causes and leakbench.check.leave_one_out, views in
leakbench.reporters.causes)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from leakbench.cli import exits
from leakbench.cli.base import fail, main
from leakbench.cli.files import (
    OUT_OPTION,
    RESULTS_OPTION,
    apart,
    emit,
    format_option,
    records_in,
    results_dir,
)
from leakbench.cli.files import writable as check_writable
from leakbench.history import store


@main.command(epilog=exits.epilog(DONE='an answer, "none matches" included', BAD_INPUT="bad input"))
@click.argument("record", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--leave-one-out",
    "loo",
    is_flag=True,
    help="Measure the naming on the committed records: each leaky pair's record held out and "
    "named by the others; the fixes must name none.",
)
@click.option(
    "--machine",
    default=None,
    metavar="NAME",
    help="The machine whose newest release's record is held out (--leave-one-out). Default: "
    "the published dataset's (results/reference.json), else the only published machine with "
    "records in --results, else the one compare, matrix and gate read by default (asv's "
    "machine among several). Never a hard-coded name.",
)
@RESULTS_OPTION
@format_option(
    table="the causes named as a terminal shows them; --leave-one-out: its markdown table",
    json="the causes named (check's diagnosis.causes); --leave-one-out: its figures",
)
@OUT_OPTION
def causes(record, loo, machine, results, fmt, out) -> None:
    """Name the known cause nearest to a record's evidence.

    Or, with --leave-one-out, measure how well the causes are named.

    RECORD is a JSON file holding one record (`leakbench check --format json`) or the first
    record of a .jsonl file; the causes named, best first, each with its lesson and the fix's
    diff, or why none is. --leave-one-out writes the leave-one-out table instead
    (results/causes-leave-one-out.md) from the records in --results.
    """
    from leakbench.analysis import schema
    from leakbench.check import causes as naming
    from leakbench.check import leave_one_out
    from leakbench.reporters import causes as view

    if (record is None) == (not loo):
        fail("give a RECORD file or --leave-one-out (one of the two)")
    where = results_dir(results)
    if out is not None:
        check_writable("--out", out)
        apart([("--out", out)], [*records_in(where), ("the record it reads", record)])
    if loo:
        if not (where / "records").is_dir():
            fail(f"--results: {where} holds no records/")
        try:
            machine = machine or store.published_machine(where)
        except store.VersionError as e:
            fail(f"--machine: {e}")
        found = leave_one_out.evaluate(where, machine)
        text = view.leave_one_out_markdown(found)
        data = {**asdict(found), "right": found.right, "fixes_named": len(found.fixes_named)}
    else:
        try:
            first = record.read_text().lstrip().splitlines()[0]
            rec = (
                schema.loads(first)
                if record.suffix == ".jsonl"
                else schema.loads(json.dumps(json.loads(record.read_text())))
            )
        except (OSError, IndexError, ValueError) as e:
            fail(f"RECORD: {record} is not a record: {e}")
        data = naming.for_diagnosis(rec)
        text = "\n".join(view.check_lines(data)) + "\n"

    def text_of(form: str) -> str:
        return json.dumps(data, indent=2) + "\n" if form == "json" else text

    emit(fmt, out, text_of, lambda: click.echo(text, nl=False), "table")
