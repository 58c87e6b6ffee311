"""The published dataset's records: every pair on every build, measured by this engine on this
machine, filed under the reference machine's name.

One build at a time goes into one reused virtualenv (leakbench.history.installer.Venv: the
previous TensorFlow uninstalled, the build installed, pip resolving numpy for it). The checkout's
own `leakbench run --jobs N` then measures every pair in that venv's interpreter, as `make run`
does, and its records are filed here, whole, replacing the build's file. A build whose file holds
every pair and variant of the catalog, each made by this engine (leakbench.version.identity),
from the catalog's files as they are (catalog.source_hash, filed beside the records in
CATALOG_FILE), is done: a second call resumes at the first build that is not.

This is the one measurement of a build: asv's results, the matrix, compare, gate and the site are
all read from these records afterwards (leakbench.publish.regenerate).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from leakbench import catalog, jsonfile, version
from leakbench.analysis import schema
from leakbench.history import builds, machines, pin, registry, store
from leakbench.history.installer import Venv
from leakbench.settings import FIXED_CAP_BYTES
from leakbench.units import GIB

# The run of one build (44 variants, 2 at a time) takes 5-25 minutes here, quiet to busy
# (docs/measurements.md, "Run time"); past this it is ended and said, never waited for.
BUILD_TIMEOUT_SECONDS = 3 * 3600
VENV_BUDGET_BYTES = 8 * GIB  # one TensorFlow at a time: a nightly unpacks to 2.1 GiB
# Beside a machine's records: build version -> catalog.source_hash of the scenario and fix files
# its records were measured from (records name their engine, not their scenario's source).
CATALOG_FILE = "catalog.json"


class PublishError(RuntimeError):
    """A build could not be installed, measured or filed. One line."""


def builds_to_measure(
    nightly: str | None = None, dist: str | None = None, fetch=registry.fetch_index
) -> list:
    """The dataset's builds (registry.Build): builds.RELEASES, then `nightly` (a dated nightly,
    2.23.0.dev20261026), or the newest the registry serves where None. dist: what pip installs
    for a release, e.g. 'tensorflow[and-cuda]' on a GPU runner (default tensorflow-cpu). Raises
    registry.RegistryError where the registry cannot be read, PublishError for a build it lacks."""
    served = {b.version: b for b in registry.served(fetch=fetch)}
    nightlies = [v for v in served if builds.is_nightly(v)]
    wanted = [*builds.RELEASES, nightly or (nightlies[-1] if nightlies else "")]
    missing = [v for v in wanted if v not in served]
    if missing:
        raise PublishError(f"the registry serves no installable build of {', '.join(missing)}")
    found = [served[v] for v in wanted]
    return [replace(b, dist=dist) if dist and not b.nightly else b for b in found]


def catalogs_path(results: Path, machine: str) -> Path:
    """results/records/<machine>/catalog.json: which catalog each build was measured from."""
    return Path(results) / store.RECORDS_DIR / machine / CATALOG_FILE


def catalogs(results: Path, machine: str) -> dict[str, str]:
    """Build version -> catalog.source_hash its records were measured from; {} where none was
    filed (a dataset from before the file, or a folder publish did not write)."""
    path = catalogs_path(results, machine)
    try:
        found = jsonfile.load(path) if path.exists() else {}
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def file_catalog(results: Path, machine: str, build_version: str, digest: str) -> None:
    """Record that `build_version`'s records were measured from catalog hash `digest`."""
    found = {**catalogs(results, machine), build_version: digest}
    jsonfile.write_atomic(catalogs_path(results, machine), dict(sorted(found.items())))


def is_done(results: Path, machine: str, build_version: str, root: Path) -> bool:
    """Whether the build's records file holds every pair and variant of the catalog at `root`,
    each made by this engine (version.identity), from the catalog's files as they are now."""
    if catalogs(results, machine).get(build_version) != catalog.source_hash(root):
        return False
    path = store.records_path(results, machine, build_version)
    try:
        recs = store.read_records(path) if path.exists() else []
    except store.VersionError:
        return False
    wanted = {(t.scenario.name, t.variant) for t in catalog.targets(root, [], "both")}
    mine = version.identity(version.engine())
    found = {(r["pair"], r["variant"]) for r in recs if version.identity(r) == mine}
    return wanted <= found


def measure_build(venv: Venv, root: Path, build, jobs: int, flamegraphs: Path) -> list:
    """Install `build` into `venv` and measure every pair there with `leakbench run` (the
    checkout at `root` on PYTHONPATH); its flame graphs into `flamegraphs`. Returns the records
    (record_type.Record), checked against the pin. Raises PublishError (install, run, pin)."""
    try:
        venv.install(build)
    except Exception as e:  # InstallFailed, BudgetError: one line either way
        raise PublishError(f"{build.requirement}: {e}") from None
    with tempfile.TemporaryDirectory(prefix="leakbench-publish-") as tmp:
        out = Path(tmp) / "records.jsonl"
        flamegraphs.mkdir(parents=True, exist_ok=True)
        args = [str(venv.python), "-m", "leakbench", "run", "--jobs", str(jobs)]
        # the fixed cap, so that no published record depends on this machine's RAM (run's
        # default cap is half of it)
        args += [
            "--cap",
            str(FIXED_CAP_BYTES),
            "--no-records",
            "--format",
            "json",
            "--out",
            str(out),
        ]
        args += ["--flamegraph-dir", str(flamegraphs)]
        env = {**os.environ, "LEAKBENCH_ROOT": str(root), "PYTHONPATH": str(root)}
        try:
            done = subprocess.run(args, env=env, cwd=root, timeout=BUILD_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            raise PublishError(f"{build.version}: leakbench run outlived its timeout") from None
        # leakbench.cli.exits: 1 some variant read otherwise, 3 some could not run (its record,
        # reading error, is data here); 2 and anything else, no dataset
        if done.returncode not in (0, 1, 3) or not out.exists():
            raise PublishError(f"{build.version}: leakbench run exited {done.returncode}")
        recs = [schema.loads(line) for line in out.read_text().splitlines() if line.strip()]
    try:
        pin.check_tf_version(recs, build.version)
    except store.VersionError as e:
        raise PublishError(f"{build.version}: {e}") from None
    return recs


def sweep(
    root: Path,
    results: Path,
    machine: str,
    wanted: list,
    venv_path: Path,
    jobs: int,
    say: Callable[[str], None] = print,
) -> dict[str, float]:
    """Measure each build of `wanted` that is not done (is_done), in order, and file its records
    whole under `machine` (store.replace_records). Returns build version -> seconds it took
    (0.0 for a build already done). Raises PublishError, store.VersionError."""
    venv = Venv(venv_path, VENV_BUDGET_BYTES, venv_path.parent / "publish-venv.log")
    venv_path.parent.mkdir(parents=True, exist_ok=True)
    seconds: dict[str, float] = {}
    for i, build in enumerate(wanted, 1):
        head = f"[{i}/{len(wanted)}] TensorFlow {build.version}"
        if is_done(results, machine, build.version, root):
            say(f"{head}: done already (every pair, this engine, these scenario files)")
            seconds[build.version] = 0.0
            continue
        say(f"{head}: installing {build.requirement}, then measuring every pair")
        start = time.monotonic()
        try:
            venv.ensure(root)
        except Exception as e:  # InstallFailed, BudgetError
            raise PublishError(f"the publish venv: {e}") from None
        measured_from = catalog.source_hash(root)  # before the run: an edit meanwhile re-measures
        recs = measure_build(
            venv, root, build, jobs, results / "flamegraphs" / f"tf-{build.version}"
        )
        path = store.replace_records(results, machine, build.version, recs)
        file_catalog(results, machine, build.version, measured_from)
        seconds[build.version] = time.monotonic() - start
        say(f"{head}: {len(recs)} records in {seconds[build.version] / 60:.1f} min -> {path}")
    return seconds


def manifest(
    results: Path, machine: str, wanted: list, seconds: dict, views_seconds: float | None
) -> dict:
    """results/reference.json's content (machines.reference): the machine (name, CPU model, cores),
    the engines that made its records (one, where the dataset is whole), the builds (their
    dates: results/builds.json, leakbench.publish.asv_builds), the seconds each build took when
    it was last measured, and the seconds the views took."""
    engines: dict[str, dict] = {}
    for build in wanted:
        path = store.records_path(results, machine, build.version)
        for rec in store.read_records(path) if path.exists() else []:
            engines.setdefault(version.identity(rec), rec.get("engine") or {})
    cpu, cores = machines.this_machine()
    return {
        "machine": machine,
        "cpu": cpu,
        "cores": cores,
        "engines": list(engines.values()),
        "builds": [{"version": b.version, "dist": b.dist} for b in wanted],
        "seconds": seconds,
        "views_seconds": views_seconds,
    }


def write_manifest(results: Path, content: dict) -> Path:
    """Write results/reference.json whole."""
    path = Path(results) / machines.REFERENCE_FILE
    path.write_text(json.dumps(content, indent=2, sort_keys=True) + "\n")
    return path
