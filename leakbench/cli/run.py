"""`leakbench list` and `leakbench run`.

run measures `--jobs` variants at once (default: the number of cores), each in
its own capped, timed child (leakbench.measure; the default cap is divided
between them, leakbench.history.rounds.shared_cap), and prints the table in the
catalog's order whatever ends first. At the default settings (no measurement
option, no --param) it files the records of the pairs it measured in
results/records/<machine>.local/tf-<installed TensorFlow>.jsonl, a folder git
ignores (only `leakbench publish` writes the published records;
leakbench.history.store.write_records, which replaces those pairs and keeps
the rest); at other settings it says so in one line and writes none, since
records are compared across versions at the defaults.

run's exit code: 0 when every variant reads what its contract says it should
(leakbench.expectation), 1 when some does not, 2 on bad input (a records file
or machine folder that cannot take the records included, before anything is
measured) or when the records cannot be filed under the installed TensorFlow.

The result is the table (--format table, markdown: the wide table) or the records (json: one per
line, as a records file holds them), on stdout or in --out FILE (leakbench.cli.files.emit). The
old spellings stay, hidden: --json FILE appends the records as they come in (bisect's installer
reads a run that way), --markdown FILE writes the wide table.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import fields
from pathlib import Path

import click

from leakbench import catalog, expectation, jsonfile
from leakbench.analysis.schema import Record
from leakbench.calibrate import committed
from leakbench.catalog import VARIANT_DIRS
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
    OPTION_NAMES,
    VARIANT_OPTION,
    measurement_options,
    sizes_fit,
)
from leakbench.contract import ContractError
from leakbench.history import pin, rounds, store
from leakbench.measure import measure
from leakbench.reporters import table
from leakbench.settings import Settings


@main.command("list")
@format_option(table="one row per pair", json="one object per pair, a list")
@OUT_OPTION
def list_pairs(fmt, out) -> None:
    """List the scenario pairs.

    One line per pair: name, kind, seed source, size parameter and its default, title.

    Exit 0, 2 where the checkout's catalog cannot be read (no checkout, a scenario that breaks
    the contract).
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


@main.command()
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
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    hidden=True,
    help="Deprecated (--format json --out FILE replaces the file): append one JSON record per "
    "line to FILE as each comes in, in the catalog's order.",
)
@click.option(
    "--markdown",
    "markdown_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    hidden=True,
    help="Deprecated: --format markdown --out FILE (the wide table in markdown).",
)
def run(
    names,
    variant,
    settings,
    params,
    fmt,
    out,
    wide,
    jobs,
    filing,
    machine,
    json_path,
    markdown_path,
) -> None:
    """Measure scenario pairs and file their records.

    Each variant runs in a capped, timed subprocess, --jobs at once; all pairs by default. NAMES
    are pair names from `leakbench list` or paths to scenario files. The table keeps the
    catalog's order.

    Exit 0 every variant reads what it should, 1 some variant does not, 2 bad input, or records
    that cannot be filed under the installed TensorFlow.
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
    outputs = [("--out", out), ("--json", json_path), ("--markdown", markdown_path)]
    for option, path in outputs:
        if path:
            writable(option, path)
    apart(outputs, [("a scenario file it measures", t.scenario.path) for t in targets])

    results = results_dir(None, writes=True)
    filed = _records_file(results, machine, targets, settings, overrides) if filing else None
    jobs = jobs or store.this_machine()[1] or 1
    shared = rounds.shared_cap(settings, jobs)  # the default cap, divided between the children
    found: list[Record | None] = [None] * len(plans)
    appended = 0  # --json gets the records in the catalog's order, each as soon as it can
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
            nonlocal appended
            found[i] = rec
            while json_path and appended < len(found) and (ready := found[appended]) is not None:
                _append(json_path, ready)
                appended += 1
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
    if markdown_path:
        jsonfile.write_text_atomic(markdown_path, text_of("markdown"))
    if filed is not None:
        _file(results, *filed, [r for r in records if r["variant"] in VARIANT_DIRS])
    for rec in records:
        if rec["error"]:
            say(
                f"{rec['pair']} ({rec['variant']}): {rec['verdict']} "
                f"in {rec['phase']}: {one_line(rec['error'])}"
            )
        elif rec.get("skip_reason"):  # a GPU or a preloaded library the machine lacks: no failure
            say(f"{rec['pair']} ({rec['variant']}): skipped: {rec['skip_reason']}")
    sys.exit(0 if all(expectation.accepts(r) for r in records) else 1)


def _label(i: int, plans: list) -> str:
    """'[3/44] stateful_map (leaky)': the i-th variant (from 0) in the catalog's order."""
    target = plans[i][0]
    return f"[{i + 1}/{len(plans)}] {target.scenario.name} ({target.variant})"


def _records_file(
    results: Path, machine: str | None, targets: list, settings: Settings, overrides: dict
) -> tuple[str, str] | None:
    """(machine, TensorFlow version) the records will be filed under, checked before anything is
    measured (store.check_writable; a refusal ends here, one line, exit 2), or None, said in one
    line: settings other than the defaults (a flame graph's folder aside), no pair of the catalog
    among the targets, no TensorFlow installed."""
    given = [
        OPTION_NAMES.get(f.name, f.name)
        for f in fields(Settings)
        if f.name != "flamegraph_dir" and getattr(settings, f.name) != getattr(Settings(), f.name)
    ]
    given += ["--param"] if overrides else []
    if given:
        say(
            f"leakbench: records not written: {', '.join(given)} set; records are compared "
            "across TensorFlow versions at the default settings"
        )
        return None
    if not any(t.variant in VARIANT_DIRS for t in targets):
        say("leakbench: records not written: no pair of the catalog measured (a file by path)")
        return None
    version = pin.installed_tf_version()
    if version is None:
        say("leakbench: records not written: no TensorFlow installed to file them under")
        return None
    if machine is None:
        machine, why = store.default_machine(results)
        if why:
            say(f"leakbench: {why}")
    machine = store.local(machine)  # a user's run never edits the published dataset
    try:
        store.check_writable(results, machine, version)
    except store.VersionError as e:
        fail(str(e))
    return machine, version


def _file(results: Path, machine: str, version: str, records: list[Record]) -> None:
    """The pairs' records into their file (store.write_records); a pin that did not hold
    (pin.check_tf_version) ends here, one line, exit 2, the file untouched."""
    try:
        pin.check_tf_version(records, version)
        path = store.write_records(results, machine, version, records)
    except store.VersionError as e:
        fail(f"records not written: {e}")
    say(f"leakbench: {len(records)} records written to {path}")


def _append(path: Path, rec: Record) -> None:
    """One record per line, flushed to disk, so records written before a crash stay valid."""
    with open(path, "a") as f:
        f.write(json.dumps(rec) + "\n")
        f.flush()
        os.fsync(f.fileno())
