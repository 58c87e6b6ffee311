"""The two sides of `leakbench gate` on one machine, and measuring what they lack.

A side is a TensorFlow build (a release such as 2.21.0, or "nightly") and its records on one
machine: results/records/<machine>/tf-<version>.jsonl (leakbench.history.store). The comparison
and its classification are leakbench.history.compare's, the same as `leakbench compare`'s.

Without measuring, a side is what the records hold ("nightly": the newest nightly there); a
variant one side lacks is "not measured", which never counts.

With measuring (`--measure`), "nightly" is the newest nightly the registry serves
(leakbench.history.registry), and the variants each side lacks among the pairs asked are measured
on this machine first, each filed as soon as it is measured (store.write_records: a gate stopped
half-way keeps what it measured, and the next one measures the rest). A side whose build is the
running interpreter's TensorFlow is measured by that interpreter; any other build is installed
into a virtualenv of its own (leakbench.history.installer, as `leakbench bisect` does: the
checkout's code, the build's TensorFlow), both sides' virtualenvs made at once. Then every
missing variant is one `leakbench run PAIR --variant V` in its side's environment, `jobs` at a
time, the two sides interleaved (so both are measured in the same run), each capped and timed as
the asv suite's runs are (settings.FIXED_CAP_BYTES, the default timeout). A run that ends without a
record reads "error" in this comparison and is not filed.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from leakbench.analysis import record_type, schema
from leakbench.analysis.record_type import Record
from leakbench.catalog import VARIANT_DIRS
from leakbench.history import builds, installer, pin, registry, store
from leakbench.settings import FIXED_CAP_BYTES, Settings
from leakbench.units import GIB

VENV_BUDGET_BYTES = 6 * GIB  # per side's virtualenv, as bisect's default --disk-budget


@dataclass
class Side:
    """One side of the gate. asked: as given ("nightly", "2.21.0"); version: the build
    ("2.23.0.dev20261026"); records: what the records file holds (and, after measuring, what was
    measured); missing: (pair, variant) asked for and not in records; build: what to install to
    measure it (None: the running interpreter has it)."""

    asked: str
    version: str
    records: list[Record]
    missing: list[tuple[str, str]] = field(default_factory=list)
    build: registry.Build | None = None

    @property
    def label(self) -> str:
        return builds.label(self.version)


def wanted(pairs: Iterable[str]) -> list[tuple[str, str]]:
    """(pair, variant) of every variant of `pairs`, leaky first."""
    return [(p, v) for p in pairs for v in VARIANT_DIRS]


def recorded(results: Path, machine: str, asked: str, pairs: list[str]) -> Side:
    """A side as the records of `machine` hold it: "nightly" the newest nightly there, a version
    the file of the same build (builds.same_build). pairs: the pairs to gate (every pair in the
    records when empty); those without a record are `missing`. Raises VersionError (one line) for
    a build that is not there, naming --measure."""
    files = store.available(results, machine)
    if asked == builds.NIGHTLY:
        version = builds.newest_nightly(files)
    else:
        version = next((v for v in files if builds.same_build(v, asked)), None)
    if version is None:
        raise store.VersionError(
            f"TensorFlow {asked} is not in {results} for machine {machine} "
            f"(have: {', '.join(files)}); `leakbench gate --measure` measures it on this machine"
        )
    return _side(asked, version, store.read_records(files[version]), pairs)


def to_measure(
    results: Path,
    machine: str,
    asked: str,
    pairs: list[str],
    served: Callable[[], list[registry.Build]],
) -> Side:
    """A side to measure on this machine: "nightly" the newest nightly `served` (the registry's
    builds, registry.served) lists; the records it has under `machine` (none without a file);
    what it lacks among `pairs` (all the checkout's pairs); and the build to install for it,
    None where the running interpreter's TensorFlow is that build. Raises VersionError for
    something that is no version, a records file that cannot be read whole, and
    registry.RegistryError for a registry that cannot be read."""
    if asked == builds.NIGHTLY:
        version = builds.newest_nightly([b.version for b in served()])
        if version is None:
            raise store.VersionError("the registry serves no nightly build for this interpreter")
    elif (parsed := builds.parse(asked)) is None:
        raise store.VersionError(f"{asked!r} is not a TensorFlow version (PEP 440) nor 'nightly'")
    else:
        version = str(parsed)  # as pip spells it, and so its records file: 2.23.0.dev20261026
    side = _side(
        asked, version, store.existing(store.records_path(results, machine, version)), pairs
    )
    if not builds.same_build(pin.installed_tf_version(), version):
        dist = registry.NIGHTLY_DIST if builds.is_nightly(version) else registry.RELEASE_DIST
        side.build = registry.Build(version, dist, None)
    return side


def _side(asked: str, version: str, records: list[Record], pairs: list[str]) -> Side:
    if pairs:
        records = [r for r in records if r["pair"] in pairs]
    have = {(r["pair"], r["variant"]) for r in records}
    return Side(asked, version, records, [k for k in wanted(pairs) if k not in have])


class _Running(installer.Venv):
    """The running interpreter, measuring as a bisect virtualenv does (nothing installed)."""

    @property
    def python(self) -> Path:
        return Path(sys.executable)


def new_workdir() -> Path:
    """A new folder for one gate's virtualenvs and their logs, beside bisect's virtualenv
    (installer.default_venv: ~/.cache/leakbench/)."""
    cache = installer.default_venv().parent
    cache.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="gate-", dir=cache))


def measure(
    root: Path,
    results: Path,
    machine: str,
    sides: list[Side],
    jobs: int,
    workdir: Path,
    on_record: Callable[[Side, Record, int, int], None] = lambda *_: None,
) -> None:
    """Measure every side's missing variants (see the module docstring), file each record, and add
    it to its side's records (the error record of a run that gave none too, unfiled).

    workdir: where the virtualenvs and their logs go (new_workdir); the virtualenvs are deleted
    at the end, the logs stay. on_record(side, record, done, total) after each measurement.
    Raises installer.BudgetError, bisect.InstallFailed (a virtualenv that cannot be set up) and
    VersionError (a pin that did not hold, records that cannot be filed); what was filed stays."""
    todo = [s for s in sides if s.missing]
    unique = {s.version: s for s in todo}  # one measurement serves both sides of the same build
    if not unique:
        return
    envs: dict[str, installer.Venv] = {}
    try:
        with ThreadPoolExecutor(len(unique)) as pool:
            made = pool.map(lambda s: _environment(root, s, workdir), unique.values())
            envs = dict(zip(unique, made))
        tasks = _interleaved(list(unique.values()))
        lock, done = threading.Lock(), [0]

        def one(side: Side, pair: str, variant: str) -> None:
            found = envs[side.version].measure(
                root, pair, variant, FIXED_CAP_BYTES, Settings.timeout_seconds
            )
            rec, filed = _record(found, pair, variant)
            with lock:
                if filed:
                    pin.check_tf_version([rec], side.version)
                    store.write_records(results, machine, side.version, [rec])
                for s in sides:
                    if s.version == side.version:
                        s.records.append(rec)
                done[0] += 1
                on_record(side, rec, done[0], len(tasks))

        with ThreadPoolExecutor(max(1, jobs)) as pool:
            futures = [pool.submit(one, *task) for task in tasks]
            finished, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = next((f for f in finished if f.exception() is not None), None)
            if failed is not None:
                pool.shutdown(cancel_futures=True)
                raise failed.exception()  # type: ignore[misc]
    finally:
        for env in envs.values():
            env.remove()
    for side in todo:
        side.missing = []


def _environment(root: Path, side: Side, workdir: Path) -> installer.Venv:
    """The environment measuring `side`: the running interpreter, or a new virtualenv in
    workdir with leakbench's dependencies and the side's build."""
    log = workdir / f"tf-{side.version}.log"
    if side.build is None:
        return _Running(workdir / "running", 0, log)
    env = installer.Venv(workdir / f"tf-{side.version}", VENV_BUDGET_BYTES, log)
    env.ensure(root)
    env.install(side.build)
    return env


def _interleaved(sides: list[Side]) -> list[tuple[Side, str, str]]:
    """(side, pair, variant) to measure, the sides taking turns: both are measured at once."""
    tasks = []
    for i in range(max(len(s.missing) for s in sides)):
        tasks += [(s, *s.missing[i]) for s in sides if i < len(s.missing)]
    return tasks


def _record(found: dict, pair: str, variant: str) -> tuple[Record, bool]:
    """(the record, whether to file it) of one `leakbench run`: its record, checked by the schema;
    else (a run that wrote none, or one the schema refuses) a record reading its error, unfiled."""
    if "schema" in found:
        try:
            return schema.loads(json.dumps(found)), True
        except schema.SchemaError as e:
            found = {"verdict": "error", "phase": "run", "error": f"its record is refused: {e}"}
    failed: Record = {
        "schema": record_type.SCHEMA,
        "pair": pair,
        "variant": variant,
        "verdict": found.get("verdict", "error"),
        "signals": [],
        "metrics": {},
        "environment": {},
        "phase": found.get("phase"),
        "error": found.get("error"),
    }
    return failed, False
