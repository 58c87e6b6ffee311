"""`leakbench list` and `leakbench run`.

run measures `--jobs` variants at once (default: the number of cores), each in
its own capped, timed child (leakbench.measure; the default cap is divided
between them, leakbench.history.rounds.shared_cap), and prints the table in the
catalog's order whatever ends first. At the default settings (no measurement
option, no --param) it files the records of the pairs it measured in
results/records/<machine>.local/tf-<installed TensorFlow>.jsonl, a folder git
ignores (only `leakbench publish` writes the published records;
leakbench.cli.run_records, on leakbench.history.store.write_records, which
replaces those pairs and keeps the rest); at other settings it says so in
one line and writes none, since records are compared across versions at the
defaults.

run's exit code (leakbench.cli.exits): 0 when every variant reads what its contract says it
should (leakbench.expectation), 1 when some does not, 2 on bad input (a records file or machine
folder that cannot take the records included, before anything is measured), 3 when a
measurement could not run (a record reading "error") or the records cannot be filed under the
installed TensorFlow.

The result is the table (--format table, markdown: the wide table) or the records (json: one per
line, as a records file holds them), on stdout or in --out FILE (leakbench.cli.files.emit). With
--format json --out FILE, FILE is replaced after each record comes in by the records so far in
the catalog's order, so a run killed mid-way leaves every record it finished (bisect's installer
and publish read a run that way).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from leakbench import catalog, expectation, jsonfile
from leakbench.analysis.record_type import Record
from leakbench.calibrate import committed
from leakbench.catalog import VARIANT_DIRS, Target
from leakbench.cli import exits, run_records
from leakbench.cli.base import (
    as_text,
    err,
    fail,
    flamegraph_note,
    main,
    one_line,
    progress,
    say,
    targets_of,
)
from leakbench.cli.base import out as terminal
from leakbench.cli.files import OUT_OPTION, apart, emit, format_option, results_dir, writable
from leakbench.cli.options import (
    VARIANT_OPTION,
    measurement_options,
    sizes_fit,
)
from leakbench.contract import ContractError
from leakbench.history import rounds, store
from leakbench.measure import measure
from leakbench.reporters import table
from leakbench.settings import Settings


@main.command(
    "list",
    epilog=exits.epilog(
        DONE="the pairs listed",
        BAD_INPUT="bad input, or a checkout whose catalog cannot be read (no checkout, a "
        "scenario that breaks the contract)",
    ),
)
@format_option(table="one row per pair", json="one object per pair, a list")
@OUT_OPTION
def list_pairs(fmt, out) -> None:
    """List the scenario pairs.

    One line per pair: name, kind, seed source, size parameter and its default, title.
    """
    if out:
        writable("--out", out)
    try:
        scenarios = [t.scenario for t in catalog.targets(catalog.find_root(), [], "leaky")]
    except ContractError as e:
        fail(str(e))
    fields = ("name", "kind", "source", "size_param", "requires", "title")

    def text_of(form: str) -> str:
        if form == "json":
            found = [
                {**{f: getattr(s, f) for f in fields}, "size": s.params[s.size_param]}
                for s in scenarios
            ]
            return json.dumps(found, indent=1) + "\n"
        return as_text(table.listing(scenarios))

    emit(fmt, out, text_of, lambda: terminal.print(table.listing(scenarios)), "table")


def _overrides(params) -> dict:
    found = {}
    for item in params:
        key, sep, value = item.partition("=")
        if not sep or not key:
            fail(f"--param {item!r} is not NAME=VALUE")
        found[key] = value
    return found


@main.command(
    epilog=exits.epilog(
        DONE="every variant reads what it should",
        VERDICT="some variant does not (a leak, a hang, an over-cap where it should not)",
        BAD_INPUT="bad input",
        FAILED="a measurement that could not run (a record reading error), or records that "
        "cannot be filed under the installed TensorFlow",
    )
)
@click.argument("names", nargs=-1)
@VARIANT_OPTION
@measurement_options(scales=True)
@click.option(
    "--param", "params", multiple=True, metavar="NAME=VALUE", help="Override a scenario parameter."
)
@format_option(
    table="the tables a terminal shows",
    markdown="the wide table",
    json="the records, one JSON object per line, as in a records file",
)
@OUT_OPTION
@click.option(
    "--wide",
    is_flag=True,
    help="Show every metric in the table, not only the columns the verdict rests on (markdown "
    "always does).",
)
@click.option(
    "--jobs",
    type=click.IntRange(1, 64),
    default=None,
    help="Variants measured at once, each in its own child (the default cap is divided "
    "between them). Default: the number of cores.",
)
@click.option(
    "--records/--no-records",
    "filing",
    default=True,
    show_default=True,
    help="File the pairs' records in results/records/<machine>.local/tf-<installed "
    "TensorFlow>.jsonl, which git ignores (at the default settings only: no measurement option, "
    "no --param).",
)
@click.option(
    "--machine",
    default=None,
    metavar="NAME",
    help="Machine name of the records (their folder is NAME.local). Default: asv's machine "
    "name, or <name>-<cpu>-<cores>c where that folder holds another machine's records.",
)
def run(names, variant, settings, params, fmt, out, wide, jobs, filing, machine) -> None:
    """Measure scenario pairs and file their records.

    Each variant runs in a capped, timed subprocess, --jobs at once; all pairs by default. NAMES
    are pair names from `leakbench list` or paths to scenario files. The table keeps the
    catalog's order. With --format json --out FILE, FILE holds the records finished so far as
    each comes in.
    """
    overrides = _overrides(params)
    targets = targets_of(names, variant)
    plans = _plans(targets, overrides, settings)
    if out:
        writable("--out", out)
    apart([("--out", out)], [("a scenario file it measures", t.scenario.path) for t in targets])

    results = results_dir(None, writes=True)
    filed = (
        run_records.destination(results, machine, targets, settings, overrides) if filing else None
    )
    jobs = jobs or store.this_machine()[1] or 1
    shared = rounds.shared_cap(settings, jobs)  # the default cap, divided between the children
    found: list[Record | None] = [None] * len(plans)
    # --format json --out: the records so far, in the catalog's order, each as soon as it can
    so_far = 0
    with err.status("starting") as status:

        def one(i: int) -> Record:
            target, run_params = plans[i]
            return measure(
                target,
                run_params,
                shared,
                on_message=progress(status, _label(i, plans), settings.reps),
            )

        def done(_, i: int, rec: Record) -> None:
            nonlocal so_far
            found[i] = rec
            ready = so_far
            while ready < len(found) and found[ready] is not None:
                ready += 1
            if fmt == "json" and out and ready > so_far:
                so_far = ready
                _replace(out, found[:ready])
            note = flamegraph_note(rec, settings.flamegraph_dir)
            say(
                f"{_label(i, plans)}: {rec['verdict']} in {rec['seconds']:.1f} s"
                f"{'; ' + note if note else ''}"
            )

        rounds.measure_each(list(range(len(plans))), one, jobs, done)
    records = [rec for rec in found if rec is not None]  # every one: measure_each ran them all
    tf = next(
        (r["environment"]["tensorflow"] for r in records if r["environment"]["tensorflow"]), None
    )

    def text_of(form: str) -> str:
        if form == "json":
            return "".join(json.dumps(rec) + "\n" for rec in records)
        if form == "markdown":
            return table.markdown(records, f"leakbench run: TensorFlow {tf or 'not imported'}")
        return as_text(table.table(records, wide=wide))

    emit(fmt, out, text_of, lambda: terminal.print(table.table(records, wide=wide)), "table")
    here = store.default_machine(results)[0]
    quoted = (store.reference(results) or {}).get("machine")
    say(committed.sensitivity(results / "calibration", here, tf, quoted))
    if filed is not None:
        run_records.write(results, *filed, [r for r in records if r["variant"] in VARIANT_DIRS])
    _say_unmeasured(records)
    sys.exit(_exit_code(records))


def _plans(targets: list[Target], overrides: dict, settings: Settings) -> list[tuple[Target, dict]]:
    """Each target with its run parameters: its scenario's, with the --param values it has a
    parameter for. Ends here (one line, exit 2) on a value its scenario refuses, a --param no
    selected scenario has, or sizes the settings' scales do not fit (options.sizes_fit)."""
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
    return plans


def _say_unmeasured(records: list[Record]) -> None:
    """A line per record that could not run (its phase and error's last words) or was skipped."""
    for rec in records:
        if rec["error"]:
            say(
                f"{rec['pair']} ({rec['variant']}): {rec['verdict']} "
                f"in {rec['phase']}: {one_line(rec['error'])}"
            )
        elif rec.get("skip_reason"):  # a GPU or a preloaded library the machine lacks: no failure
            say(f"{rec['pair']} ({rec['variant']}): skipped: {rec['skip_reason']}")


def _exit_code(records: list[Record]) -> int:
    """exits.FAILED where a measurement could not run (a record reading "error"), else
    exits.VERDICT where some variant reads what it should not, else exits.DONE."""
    if any(r["verdict"] == "error" for r in records):
        return exits.FAILED
    return exits.DONE if all(expectation.accepts(r) for r in records) else exits.VERDICT


def _label(i: int, plans: list) -> str:
    """'[3/44] stateful_map (leaky)': the i-th variant (from 0) in the catalog's order."""
    target = plans[i][0]
    return f"[{i + 1}/{len(plans)}] {target.scenario.name} ({target.variant})"


def _replace(path: Path, records: list) -> None:
    """`records` one per line, replacing `path` whole (jsonfile.write_text_atomic), so a run killed
    mid-way leaves a file of valid records. A file that cannot be written ends here (one line,
    exit 2: writable checked it before anything was measured)."""
    try:
        jsonfile.write_text_atomic(path, "".join(json.dumps(rec) + "\n" for rec in records))
    except OSError as e:
        fail(f"--out: cannot write {path}: {e.strerror or e}")
