"""`leakbench report-back`: for pairs from public reports, a markdown block to paste
into the upstream issue (rendering in leakbench.reporters.report_back)."""

from __future__ import annotations

import ast
from pathlib import Path

import click

from leakbench import catalog, jsonfile
from leakbench.cli import exits
from leakbench.cli.base import fail, main
from leakbench.cli.files import MACHINE_OPTION, RESULTS_OPTION, apart, results_dir, writable
from leakbench.contract import ContractError, read_metadata
from leakbench.history import matrix as tabulating
from leakbench.history import store
from leakbench.reporters import report_back as views


def report_pairs(root: Path, names: tuple) -> dict:
    """pair -> its scenario's metadata, for NAMES or every report pair; bad input ends here."""
    known = catalog.pair_names(root)
    for name in names:
        if name not in known:
            fail(f"unknown pair {name!r} (known: {', '.join(known)})")
    try:
        scenarios = {
            n: read_metadata(root / catalog.VARIANT_DIRS["leaky"] / f"{n}.py") for n in known
        }
    except ContractError as e:
        fail(str(e))
    reports = [n for n in known if views.is_report(scenarios[n])]
    for name in names:
        if name not in reports:
            fail(
                f"{name} is not a report pair (its SOURCE is {scenarios[name].source!r}, no public "
                f"issue); report pairs: {', '.join(reports)}"
            )
    return {n: scenarios[n] for n in (dict.fromkeys(names) if names else reports)}


@main.command(
    "report-back",
    epilog=exits.epilog(DONE="the blocks printed or written", BAD_INPUT="bad input"),
)
@click.argument("pairs", nargs=-1)
@RESULTS_OPTION
@MACHINE_OPTION
@click.option(
    "--out-dir",
    "out",
    type=click.Path(path_type=Path),
    default=None,
    metavar="DIR",
    help="Write DIR/<pair>.md, one per pair, and print the paths, instead of printing the blocks.",
)
def report_back(pairs, results, machine, out) -> None:
    """Write a block to paste into a pair's upstream issue.

    For pairs from public reports (SOURCE names an issue), a markdown block: the thread's claim,
    the verdict per TensorFlow release, the machine, how to reproduce it. PAIRS: default every
    report pair. Markdown is its one form: no --format.
    """
    try:
        root = catalog.find_root()
    except ContractError as e:
        fail(str(e))
    scenarios = report_pairs(root, pairs)
    where = results_dir(results)
    try:
        found = tabulating.matrix(where, machine)
        records = store.by_version(where, found["machine"])
    except store.VersionError as e:
        fail(str(e))
    blocks = {}
    for pair, scenario in scenarios.items():
        rows = {r["variant"]: r["cells"] for r in found["rows"] if r["pair"] == pair}
        if not rows:
            fail(f"no records of {pair} in {where} (machine {found['machine']}): measure it first")
        environments = [
            rec["environment"]
            for recs in records.values()
            for (p, _), rec in sorted(recs.items())
            if p == pair and rec.get("environment")
        ]
        docstring = ast.get_docstring(ast.parse(scenario.path.read_text()))
        blocks[pair] = views.block(
            pair,
            scenario,
            docstring,
            rows,
            found["versions"],
            environments,
            found["machine"],
            [b for b in found["bisected"] if b["pair"] == pair],
        )
    if out is None:
        click.echo("\n".join(blocks.values()), nl=False)
        return
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        fail(f"--out-dir: cannot create {out}: {e.strerror or e}")
    for pair in blocks:  # every file checked before the first is written
        writable("--out-dir", out / f"{pair}.md")
    read = [
        ("a records file it reads", p) for p in store.available(where, found["machine"]).values()
    ]
    read += [
        ("a pair's file", root / folder / f"{p}.py")
        for p in scenarios
        for folder in catalog.VARIANT_DIRS.values()
    ]
    apart([("--out-dir", out / f"{pair}.md") for pair in blocks], read)
    for pair, text in blocks.items():
        path = out / f"{pair}.md"
        try:
            jsonfile.write_text_atomic(path, text)
        except OSError as e:
            fail(f"--out-dir: cannot write {path}: {e.strerror or e}")
        click.echo(str(path))
