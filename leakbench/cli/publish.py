"""`leakbench publish`: regenerate everything published, from nothing, resumably.

First the records (leakbench.publish.dataset: every pair on the releases and the newest nightly,
by this engine, under the reference machine's name), then every view of them
(leakbench.publish.views: asv's results, the matrix, compare, gate, causes, report-back, the
calibration summary, the run table). The committed dataset is this command's output; nothing else
writes a published records folder. Exit (leakbench.cli.exits) 0 done, 2 bad input, 3 a build
that could not be installed or measured (what was filed stays filed: run it again to resume).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click

from leakbench import catalog
from leakbench.cli import exits
from leakbench.cli.base import fail, main, say
from leakbench.cli.files import results_dir
from leakbench.history import registry, store
from leakbench.publish import dataset


@main.command(
    epilog=exits.epilog(
        DONE="done",
        BAD_INPUT="bad input",
        FAILED="an install or a measurement failed (the rest stays filed)",
    )
)
@click.option(
    "--machine",
    default=None,
    metavar="NAME",
    help="The reference machine's name. Default: results/reference.json's, else this machine's "
    "(asv's name).",
)
@click.option(
    "--nightly",
    default=None,
    metavar="VERSION",
    help="The dated nightly to measure (2.23.0.dev20261026). Default: the one results/reference"
    ".json names, else the newest the registry serves.",
)
@click.option(
    "--only",
    type=click.Choice(["all", "records", "views"]),
    default="all",
    show_default=True,
    help="records: measure the builds that are not done; views: regenerate the views from the "
    "records as they are; all: both.",
)
@click.option(
    "--build",
    "only_builds",
    multiple=True,
    metavar="VERSION",
    help="Measure only this build (a release of the dataset, or `nightly`); repeat it for more. "
    "The views still cover every build with records (the nightly job adds its column so).",
)
@click.option(
    "--dist",
    default=None,
    metavar="NAME",
    help="What pip installs for a release: e.g. 'tensorflow[and-cuda]' on a GPU runner. "
    "Default: tensorflow-cpu.",
)
@click.option(
    "--jobs",
    type=click.IntRange(1, 64),
    default=None,
    help="Variants measured at once, each in its own child. Default: the number of cores.",
)
@click.option(
    "--venv",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The virtualenv builds are installed into, one at a time. Default: "
    "~/.cache/leakbench/publish-venv.",
)
@click.option(
    "--results",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The results directory the dataset is written to. Default: the checkout's results/.",
)
def publish(machine, nightly, only, only_builds, dist, jobs, venv, results) -> None:
    """Regenerate the published dataset: records, asv, tables. Resumable.

    A build whose records are whole and by this engine is kept; run it again after an
    interruption. Runs in the background as `nohup leakbench publish > publish.log 2>&1 &`.
    """
    root = catalog.find_root()
    if catalog.is_shipped(root):
        fail("leakbench publish regenerates a checkout's results/: run it in a checkout")
    results = results_dir(results, writes=True)
    old = store.reference(results) or {}
    machine = machine or old.get("machine") or store.default_machine(results)[0]
    if store.is_local(machine):
        fail(f"--machine {machine}: a .local folder holds a user's runs, never published records")
    if nightly is None and "nightly" not in only_builds and old.get("machine") == machine:
        # a rerun resumes the dataset it was making: the nightly its manifest names
        nightly = next((b["version"] for b in old.get("builds", []) if "dev" in b["version"]), None)
    start = time.monotonic()
    try:
        wanted = dataset.builds_to_measure(nightly, dist)
    except (registry.RegistryError, dataset.PublishError) as e:
        fail(str(e))
    unknown = [b for b in only_builds if b != "nightly" and b not in {w.version for w in wanted}]
    if unknown:
        fail(f"--build {', '.join(unknown)}: not a build of the dataset ({wanted[0].version} …)")
    measured = [
        w
        for w in wanted
        if not only_builds
        or w.version in only_builds
        or ("nightly" in only_builds and "dev" in w.version)
    ]
    seconds = dict(old.get("seconds") or {})
    if only in ("all", "records"):
        venv = venv or Path.home() / ".cache" / "leakbench" / "publish-venv"
        try:
            took = dataset.sweep(
                root, results, machine, measured, venv, jobs or os.cpu_count() or 1
            )
        except (dataset.PublishError, store.VersionError) as e:
            say(f"leakbench publish: {e}")
            sys.exit(exits.FAILED)
        seconds.update({v: s for v, s in took.items() if s})
    reference = not old or old.get("machine") == machine
    if not reference:
        # another machine's records go under its own name; the reference moves only when the whole
        # dataset is made again with --machine naming it and the old manifest removed
        say(f"leakbench publish: {machine} is not the reference ({old['machine']}): manifest kept")
    views_seconds = old.get("views_seconds")
    if only in ("all", "views"):
        from leakbench.publish import views  # the views import asv and the site: only here

        began = time.monotonic()
        views.regenerate(root, results, machine, say)
        views_seconds = time.monotonic() - began
    if reference:
        content = dataset.manifest(results, machine, wanted, seconds, views_seconds)
        path = dataset.write_manifest(results, content)
        say(f"leakbench publish: {path} ({len(wanted)} builds, machine {machine})")
    say(f"leakbench publish: done in {(time.monotonic() - start) / 60:.1f} min")
