"""`leakbench list` and `leakbench run`.

run's exit code: 0 when every variant reads what its contract says it should
(leakbench.expectation), 1 when some does not, 2 on bad input.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from leakbench import catalog, expectation, jsonfile
from leakbench.analysis.schema import Record
from leakbench.calibrate import committed
from leakbench.cli.base import (
    err,
    fail,
    flamegraph_note,
    main,
    one_line,
    out,
    progress,
    say,
    targets_of,
)
from leakbench.cli.files import apart, results_dir, writable
from leakbench.cli.options import measurement_options, sizes_fit
from leakbench.contract import ContractError
from leakbench.history.store import asv_machine
from leakbench.measure import measure
from leakbench.reporters import table


@main.command("list")
def list_pairs() -> None:
    """List the scenario pairs: name, kind, seed source, size parameter, title."""
    try:
        targets = catalog.targets(catalog.find_root(), [], "leaky")
    except ContractError as e:
        fail(str(e))
    out.print(table.listing([t.scenario for t in targets]))


def _overrides(params) -> dict:
    found = {}
    for item in params:
        key, sep, value = item.partition("=")
        if not sep or not key:
            fail(f"--param {item!r} is not NAME=VALUE")
        found[key] = value
    return found


@main.command()
@click.argument("names", nargs=-1)
@click.option(
    "--variant", type=click.Choice(["leaky", "fixed", "both"]), default="both", show_default=True
)
@measurement_options(scales=True)
@click.option(
    "--param", "params", multiple=True, metavar="NAME=VALUE", help="Override a scenario parameter."
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Append one JSON record per line to this file.",
)
@click.option(
    "--markdown",
    "markdown_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the wide table in markdown to this file (e.g. results/run-<machine>-tf-<v>.md).",
)
@click.option(
    "--wide", is_flag=True, help="Print every metric, not only the columns the verdict rests on."
)
def run(names, variant, settings, params, json_path, markdown_path, wide) -> None:
    """Measure scenario pairs (all by default), each run in a capped, timed subprocess.

    NAMES are pair names from `leakbench list` or paths to scenario files.
    """
    overrides = _overrides(params)
    targets = targets_of(names, variant)
    try:
        plans = [
            (
                t,
                t.scenario.with_params(
                    {k: v for k, v in overrides.items() if k in t.scenario.params}
                ),
            )
            for t in targets
        ]
    except ContractError as e:
        fail(str(e))
    unused = set(overrides) - {k for t in targets for k in t.scenario.params}
    if unused:
        fail(f"--param {', '.join(sorted(unused))}: no selected scenario has such a parameter")
    sizes_fit(plans, settings.scales)
    for option, path in (("--json", json_path), ("--markdown", markdown_path)):
        if path:
            writable(option, path)
    apart(
        [("--json", json_path), ("--markdown", markdown_path)],
        [("a scenario file it measures", t.scenario.path) for t in targets],
    )

    records = []
    with err.status("starting") as status:
        for i, (target, run_params) in enumerate(plans, 1):
            label = f"[{i}/{len(plans)}] {target.scenario.name} ({target.variant})"
            rec = measure(
                target, run_params, settings, on_message=progress(status, label, settings.reps)
            )
            records.append(rec)
            if json_path:
                _append(json_path, rec)
            note = flamegraph_note(rec, settings.flamegraph_dir)
            say(f"{label}: {rec['verdict']} in {rec['seconds']:.1f} s{'; ' + note if note else ''}")
    out.print(table.table(records, wide=wide))
    tf = next(
        (r["environment"]["tensorflow"] for r in records if r["environment"]["tensorflow"]), None
    )
    results = results_dir(None)
    say(committed.sensitivity(results / "calibration", asv_machine(results), tf))
    if markdown_path:
        jsonfile.write_text_atomic(
            markdown_path,
            table.markdown(records, f"leakbench run: TensorFlow {tf or 'not imported'}"),
        )
    for rec in records:
        if rec["error"]:
            say(
                f"{rec['pair']} ({rec['variant']}): {rec['verdict']} "
                f"in {rec['phase']}: {one_line(rec['error'])}"
            )
        elif rec.get("skip_reason"):  # a GPU or a preloaded library the machine lacks: no failure
            say(f"{rec['pair']} ({rec['variant']}): skipped: {rec['skip_reason']}")
    sys.exit(0 if all(expectation.accepts(r) for r in records) else 1)


def _append(path: Path, rec: Record) -> None:
    """One record per line, flushed to disk, so records written before a crash stay valid."""
    with open(path, "a") as f:
        f.write(json.dumps(rec) + "\n")
        f.flush()
        os.fsync(f.fileno())
