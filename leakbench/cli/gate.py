"""`leakbench gate --baseline OLD --candidate NEW`: the release gate (docs/gate.md).

The comparison and its classification are leakbench.history.compare's, as `leakbench compare`'s
are; the sides, and measuring what they lack (--measure), leakbench.history.gate's; the views
leakbench.reporters.gate's (the summary), .history's (markdown) and .junit's (JUnit XML).

Exit (leakbench.cli.exits) 0: no regression (a leak fixed upstream included); 1: a regression;
2: bad input (one line, before anything is measured or written); 3: measuring that could not be
set up or filed (--measure: an install that failed, the disk budget reached).

The result (--format markdown: the summary, every compared metric in a file; json: the comparison,
classified) goes to stdout or --out FILE (leakbench.cli.files.emit); --junit FILE writes a CI's
test report beside it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import click

from leakbench import catalog, jsonfile
from leakbench.analysis.judge import decision, in_words
from leakbench.cli import exits
from leakbench.cli.base import fail, failed, main, say
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
from leakbench.contract import ContractError
from leakbench.history import bisect as bisecting
from leakbench.history import compare as comparing
from leakbench.history import gate as gating
from leakbench.history import installer, machines, registry, store
from leakbench.reporters import history as views
from leakbench.reporters import junit

_FILE = click.Path(dir_okay=False, path_type=Path)


@main.command(
    epilog=exits.epilog(
        DONE="no regression (a leak fixed upstream included)",
        VERDICT="a regression",
        BAD_INPUT="bad input",
        FAILED="with --measure, measuring that could not be set up or filed",
    )
)
@click.argument("pairs", nargs=-1, metavar="[PAIR]...")
@click.option(
    "--baseline",
    required=True,
    metavar="VERSION",
    help="The build gated against, e.g. the newest release, 2.21.0.",
)
@click.option(
    "--candidate",
    required=True,
    metavar="VERSION",
    help="The build gated: a release, a release candidate, or `nightly` (the newest nightly in "
    "the records; with --measure, the newest the registry serves).",
)
@click.option(
    "--measure",
    is_flag=True,
    help="First measure on this machine what either side lacks (installing its TensorFlow "
    "into a virtualenv of its own where it is not the running one), and file the records.",
)
@click.option(
    "--jobs",
    type=click.IntRange(1, 64),
    default=None,
    help="With --measure: variants measured at once. Default: the number of cores.",
)
@click.option(
    "--factor",
    type=FINITE_FLOAT,
    default=comparing.DEFAULT_FACTOR,
    show_default=True,
    help="A number changed past this ratio (and its floor) is a change; a peak pair's fix's peak "
    "past it, a regression.",
)
@click.option(
    "--details",
    is_flag=True,
    help="Show every compared metric after the summary (a markdown --out file always has them).",
)
@format_option(markdown="the summary", json="the comparison, classified")
@OUT_OPTION
@click.option(
    "--junit",
    "junit_path",
    type=_FILE,
    metavar="FILE",
    help="Also write JUnit XML to FILE, for a CI's test view: a test case per pair and variant, "
    "a regression a failure.",
)
@RESULTS_OPTION
@MACHINE_OPTION
def gate(
    pairs,
    baseline,
    candidate,
    measure,
    jobs,
    factor,
    details,
    fmt,
    out,
    junit_path,
    results,
    machine,
) -> None:
    """Gate a TensorFlow build on leaks against a baseline.

    Compares the candidate's records with the baseline's, on one machine, as `compare` does. A
    summary first: regressions (a fix or a declared no-leak that leaks, a new hang, error or
    over-cap, a peak pair's fix whose peak grew past the factor), then leaks fixed upstream,
    then changes that do not count. PAIRs: the pairs to gate (default: all).
    """
    clock = time.monotonic()
    outputs = [("--out", out), ("--junit", junit_path)]
    for option, path in outputs:
        if path is not None:
            writable(option, path)
    apart(outputs)
    if factor <= 1:
        fail(f"--factor must be above 1, got {factor}")
    where = results_dir(results, writes=measure)  # --measure files records there
    apart(outputs, records_in(where))
    names = _pairs(pairs)
    try:
        if measure:
            names = names or catalog.pair_names(catalog.find_root())
            machine, sides = _to_measure(where, machine, baseline, candidate, names)
        else:
            machine = store.pick_machine(where, machine or _this_machines(where))
            sides = [gating.recorded(where, machine, side, names) for side in (baseline, candidate)]
    except (store.VersionError, registry.RegistryError) as e:
        fail(str(e))
    measured = {s.version: [f"{p} ({v})" for p, v in s.missing] for s in sides if measure}
    if measure:
        _measure(where, machine, sides, jobs or os.cpu_count() or 1)
    old, new = sides
    try:  # both sides are one machine's folder (store.available): two machines cannot be here
        found = comparing.compare(
            old.label,
            old.records,
            new.label,
            new.records,
            factor,
            machine=machine,
            expected=gating.wanted(names),
            versions=(old.version, new.version),
        )
    except store.VersionError as e:
        fail(str(e))
    result = {
        "command": "gate",
        "baseline": baseline,
        "candidate": candidate,
        "measured": {v: which for v, which in measured.items() if which},
        "seconds": round(time.monotonic() - clock, 1),
        **found.as_dict(),
    }

    def markdown(every_metric: bool) -> str:
        return views.compare_markdown(found, "gate", every_metric) + "\n"

    def text_of(form: str) -> str:  # a file (--out) holds every metric; stdout, with --details
        if form == "json":
            return json.dumps(result, indent=2) + "\n"
        return markdown(details or out is not None)

    emit(fmt, out, text_of, lambda: click.echo(markdown(details), nl=False), "markdown")
    if junit_path is not None:
        jsonfile.write_text_atomic(junit_path, junit.document(found))
        say(f"leakbench gate: wrote {junit_path}")
    raise SystemExit(found.exit_code)


def _pairs(names) -> list[str]:
    """The pairs asked for, checked against the checkout's catalog (one line, exit 2)."""
    if not names:
        return []
    try:
        catalog.targets(catalog.find_root(), list(names), "both")
    except ContractError as e:
        fail(str(e))
    return list(dict.fromkeys(names))


def _this_machines(where: Path) -> str | None:
    """The folder `leakbench run` files this machine's records in (store.default_machine), where
    it holds records: a gate after `make run` reads them, not another CPU's filed under asv's
    name. None (store.pick_machine's own choice) where it holds none."""
    name = machines.local(store.default_machine(where)[0])
    return name if (where / store.RECORDS_DIR / name).is_dir() else None


def _to_measure(where: Path, machine, baseline: str, candidate: str, names: list[str]):
    """(machine, the two sides) to measure: --machine, else the folder this machine's records go
    to (store.default_machine); each side's records file checked before anything is measured."""
    if machine is None:
        machine, why = store.default_machine(where)
        if why:
            say(f"leakbench gate: {why}")
    machine = machines.local(machine)  # measured here: never into the published dataset
    store.records_path(where, machine, "none")  # a machine name that is no folder: one line
    served: list = []

    def builds() -> list[registry.Build]:  # the registry, read once, and only for `nightly`
        if not served:
            served.extend(registry.served(fetch=registry.fetch_index))
        return served

    sides = [
        gating.to_measure(where, machine, asked, names, builds) for asked in (baseline, candidate)
    ]
    for side in sides:
        if side.missing:
            store.check_writable(where, machine, side.version)
    return machine, sides


def _measure(where: Path, machine: str, sides: list, jobs: int) -> None:
    """Measure what the sides lack (gating.measure), one progress line per variant; what could not
    be set up or filed ends here, one line, exit 3 (exits.FAILED)."""
    todo = {s.version: s for s in sides if s.missing}
    if not todo:
        return
    workdir = gating.new_workdir()
    for s in todo.values():
        how = f"installs {s.build.requirement}" if s.build else "with the running interpreter"
        say(f"leakbench gate: {len(s.missing)} variants of TensorFlow {s.label} to measure ({how})")
    say(f"leakbench gate: {jobs} at a time; logs in {workdir}")

    def on_record(side, rec, done: int, total: int) -> None:
        words = in_words.words(decision.of(rec))
        say(f"  [{done}/{total}] {side.label} {rec['pair']} ({rec['variant']}): {words}")

    try:
        gating.measure(
            catalog.find_root(), where, machine, sides, jobs, workdir, on_record=on_record
        )
    except (installer.BudgetError, bisecting.InstallFailed) as e:
        failed(f"cannot set up the measurements: {e} (log in {workdir})")
    except store.VersionError as e:
        failed(str(e))
