"""The published dataset and a user's own runs, kept apart (no TensorFlow measured).

Which engine made a record (leakbench.version: identity, describe, the source hash over
ENGINE_SOURCES); the schema-4 migration (a schema-3 record names no engine); a user's runs under
results/records/<machine>.local/ (machines.local, is_local, label, machines, pick_machine and the
published manifest results/reference.json, replace_records); `leakbench run` at the default
settings leaving every published file as it was; `leakbench publish` refusing a .local machine and
an installed package; the calibration line quoting another machine's tables where this one has
none (committed.sensitivity). Every file read is a fixture under tests/data, never results/.
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest
from conftest import DATA, invoke, pure_python_checkout, refused, state

from leakbench import catalog, version
from leakbench.analysis import record_type, schema
from leakbench.calibrate import committed
from leakbench.cli import run as run_command
from leakbench.history import machines, pin, store
from leakbench.publish import dataset

FIXTURE = DATA / "results" / "records" / "fixture" / "tf-2.21.0.jsonl"
# the one table of machine vm for TensorFlow 2.21.0 (trimmed from the committed calibration)
CALIBRATION = DATA / "published" / "calibration" / "vm-tf-2.21.0.json"
SCHEMA3 = DATA / "schema3_record.jsonl"  # one record as schema 3 wrote it (no `engine`)
ENGINE = {"version": "0.2.0", "commit": "53b6a7e1c2d4", "source": "9f3a1c0b5e7d"}
AMD = ("AMD EPYC", 2)
INTEL = ("Intel(R) Xeon(R) Processor", 2)


def stamped(cpu_cores: tuple, pairs=None) -> list[dict]:
    """The fixture's records of 2.21.0 as measured on the machine `cpu_cores` (cpu, cores)."""
    cpu, cores = cpu_cores
    return [
        {**r, "environment": {**r["environment"], "cpu": cpu, "cores": cores}}
        for r in store.read_records(FIXTURE)
        if pairs is None or r["pair"] in pairs
    ]


# --- leakbench.version ---------------------------------------------------------------------------


def test_identity_is_the_version_and_source_of_the_engine_that_made_a_record():
    assert version.identity({"pair": "p", "engine": ENGINE}) == "0.2.0+9f3a1c0b5e7d"
    assert version.identity(ENGINE) == "0.2.0+9f3a1c0b5e7d"  # the `engine` value alone
    # the commit says where to read the code, not which engine: it is no part of the identity
    assert version.identity({"engine": {**ENGINE, "commit": None}}) == "0.2.0+9f3a1c0b5e7d"


@pytest.mark.parametrize(
    "rec",
    [{"pair": "p"}, {"pair": "p", "engine": None}, {"engine": {"version": "0.2.0"}}, None],
    ids=["no engine key", "engine None (migrated)", "no source", "not a record"],
)
def test_a_record_that_names_no_engine_is_unknown(rec):
    assert version.identity(rec) == version.UNKNOWN
    assert version.describe(rec) == "an engine that did not name itself (records before schema 4)"


def test_describe_names_the_commit_only_where_there_is_one():
    assert version.describe({"engine": ENGINE}) == (
        "leakbench 0.2.0 (engine 9f3a1c0b5e7d, commit 53b6a7e1c2d4)"
    )
    # a wheel has no commit
    assert version.describe({**ENGINE, "commit": None}) == "leakbench 0.2.0 (engine 9f3a1c0b5e7d)"


def test_this_engine_is_named_by_its_own_source_hash():
    found = version.engine()
    assert set(found) == {"version", "commit", "source"}
    assert found["source"] == version.source_hash() and len(found["source"]) == 12
    assert version.identity(found) == f"{found['version']}+{found['source']}"


def _package_copy(where: Path) -> Path:
    copy = where / "leakbench"
    shutil.copytree(version.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def test_the_source_hash_changes_with_an_engine_file_only(tmp_path):
    # source_hash is cached by path: __wrapped__ reads the copy again after each edit
    source_hash = version.source_hash.__wrapped__
    package = _package_copy(tmp_path)
    first = source_hash(package)
    assert first == version.source_hash()  # the copy hashes as the package does
    # outside ENGINE_SOURCES: a command's wording, a view, a new file elsewhere
    with (package / "cli" / "run.py").open("a") as f:
        f.write("\n# a comment in a command\n")
    (package / "reporters" / "new_view.py").write_text("X = 1\n")
    assert source_hash(package) == first
    # a file of ENGINE_SOURCES, by a glob (engine/*.py) and by name (metrics.py)
    for name in ("engine/runner.py", "metrics.py"):
        edited = _package_copy(tmp_path / name.replace("/", "-"))
        with (edited / name).open("a") as f:
            f.write("\n# a new rule\n")
        assert source_hash(edited) != first, name
    # a new module of the engine is a new engine too
    (package / "analysis" / "new_rule.py").write_text("X = 1\n")
    assert source_hash(package) != first


def test_the_online_judge_is_hashed_apart_from_the_engine_of_the_records(tmp_path):
    package = _package_copy(tmp_path)
    engine, online = version.source_hash.__wrapped__, version.online_hash.__wrapped__
    first, judge = engine(package), online(package)
    assert judge == version.online_hash()
    with (package / "analysis" / "judge" / "sequential.py").open("a") as f:
        f.write("\n# a sooner no-leak\n")
    assert engine(package) == first  # no record is made by it
    assert online(package) != judge


# --- which scenario files a published build was measured from -------------------------------


def test_the_catalog_hash_changes_with_a_scenario_or_fix_file_only(tmp_path):
    root = pure_python_checkout(tmp_path)
    first = catalog.source_hash(root)
    (root / "README.md").write_text("words\n")
    assert catalog.source_hash(root) == first
    with (root / "fixes" / "stateful_map.py").open("a") as f:
        f.write("\n# a bounded buffer\n")
    second = catalog.source_hash(root)
    assert second != first
    (root / "scenarios" / "new_pair.py").write_text("X = 1\n")
    assert catalog.source_hash(root) not in (first, second)


def test_a_build_is_done_only_from_the_scenario_files_it_was_measured_from(tmp_path):
    root = pure_python_checkout(tmp_path)
    results = tmp_path / "results"
    here = machines.this_machine()
    every = [
        {**r, "pair": t.scenario.name, "variant": t.variant, "engine": version.engine()}
        for t in catalog.targets(root, [], "both")
        for r in stamped(here)[:1]
    ]
    store.replace_records(results, "box", "2.21.0", every)
    # every pair by this engine, but no catalog filed beside them (a dataset from before it)
    assert not dataset.is_done(results, "box", "2.21.0", root)
    dataset.file_catalog(results, "box", "2.21.0", catalog.source_hash(root))
    assert dataset.is_done(results, "box", "2.21.0", root)
    assert dataset.catalogs(results, "box") == {"2.21.0": catalog.source_hash(root)}
    # a fix edited after the build was measured: the build is measured again
    with (root / "fixes" / "stateful_map.py").open("a") as f:
        f.write("\n# a bounded buffer\n")
    assert not dataset.is_done(results, "box", "2.21.0", root)
    # the file sits beside the records and is read as none of them
    assert list(store.available(results, "box")) == ["2.21.0"]


# --- the schema -------------------------------------------------------------------------------


def test_a_schema_3_record_reads_as_schema_4_naming_no_engine():
    line = SCHEMA3.read_text().splitlines()[0]
    raw = json.loads(line)
    assert raw["schema"] == 3 and "engine" not in raw  # the fixture is what schema 3 wrote
    rec = schema.loads(line)
    assert rec["schema"] == record_type.SCHEMA == 4
    assert rec["engine"] is None
    assert version.identity(rec) == version.UNKNOWN
    # the rest is as it was
    assert {k: v for k, v in rec.items() if k not in ("schema", "engine")} == {
        k: v for k, v in raw.items() if k != "schema"
    }


# --- store: a user's runs apart from the published records ---------------------------------------


def test_local_names_the_folder_of_a_users_runs():
    assert machines.local("vm") == "vm.local"
    assert machines.local("vm.local") == "vm.local"  # kept as it is, never vm.local.local
    assert machines.is_local("vm.local") and not machines.is_local("vm")
    assert not machines.is_local("vm-local")
    assert machines.label("vm") == "vm"
    assert machines.label("vm.local") == "vm.local (this machine's own runs, not published)"


def test_machines_can_leave_a_users_runs_out(tmp_path):
    results = tmp_path / "results"
    store.write_records(results, "vm", "2.21.0", stamped(AMD))
    store.write_records(results, "vm.local", "2.21.0", stamped(AMD))
    (results / "records" / "empty.local").mkdir()  # no records: no machine either way
    assert store.machines(results) == ["vm", "vm.local"]
    assert store.machines(results, with_local=False) == ["vm"]


def test_pick_machine_prefers_the_published_datasets_machine(tmp_path, monkeypatch):
    results = tmp_path / "results"
    for name in ("asvs", "published", "published.local"):
        store.write_records(results, name, "2.21.0", stamped(AMD))
    monkeypatch.setenv("ASV_MACHINE", "asvs")
    assert machines.reference(results) is None
    assert store.pick_machine(results) == "asvs"  # without a manifest: asv's machine
    (results / machines.REFERENCE_FILE).write_text(json.dumps({"machine": "published"}))
    assert machines.reference(results) == {"machine": "published"}
    assert store.pick_machine(results) == "published"
    assert store.pick_machine(results, "asvs") == "asvs"  # a named machine is taken as named
    # a manifest naming a machine with no records here does not decide
    (results / machines.REFERENCE_FILE).write_text(json.dumps({"machine": "gone"}))
    assert store.pick_machine(results) == "asvs"


@pytest.mark.parametrize(
    "text", ["not json", json.dumps(["vm"]), json.dumps({"machine": 3}), json.dumps({})]
)
def test_a_manifest_that_names_no_machine_is_none(tmp_path, text):
    (tmp_path / machines.REFERENCE_FILE).write_text(text)
    assert machines.reference(tmp_path) is None


def test_replace_records_drops_what_the_file_held(tmp_path):
    results = tmp_path / "results"
    store.write_records(results, "vm", "2.21.0", stamped(AMD))
    assert len(store.read_records(store.records_path(results, "vm", "2.21.0"))) == 8
    path = store.replace_records(results, "vm", "2.21.0", stamped(AMD, pairs={"growing"}))
    assert path == store.records_path(results, "vm", "2.21.0")
    # write_records would have kept the other pairs; a published build is one measurement whole
    assert [(r["pair"], r["variant"]) for r in store.read_records(path)] == [
        ("growing", "fixed"),
        ("growing", "leaky"),
    ]


def test_replace_records_refuses_another_machines_records(tmp_path):
    results = tmp_path / "results"
    store.write_records(results, "vm", "2.13.1", stamped(AMD))
    with pytest.raises(store.VersionError, match="holds records of another machine"):
        store.replace_records(results, "vm", "2.21.0", stamped(INTEL))
    assert not store.records_path(results, "vm", "2.21.0").exists()
    # nor two machines at once
    with pytest.raises(store.VersionError, match="are of 2 machines"):
        store.replace_records(results, "new", "2.21.0", stamped(AMD) + stamped(INTEL)[:1])
    assert not (results / "records" / "new").exists()


# --- leakbench run: into .local, the published files untouched ------------------------------------


@pytest.fixture
def published_checkout(tmp_path, monkeypatch) -> Path:
    """pure_python_checkout as LEAKBENCH_ROOT, tmp_path as cwd, results/ holding a published
    dataset of this machine under asv's name `box` (records, the manifest, a table); TensorFlow
    2.21.0 installed; `measure` returning the fixture's record for each target, measured here
    (a pure-Python child imports no TensorFlow, and the pin refuses records without it)."""
    root = pure_python_checkout(tmp_path)
    monkeypatch.setenv("LEAKBENCH_ROOT", str(root))
    monkeypatch.setenv("ASV_MACHINE", "box")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(pin, "installed_tf_version", lambda: "2.21.0")
    here = machines.this_machine()
    results = tmp_path / "results"
    for build in ("2.13.1", "2.21.0"):
        store.write_records(results, "box", build, stamped(here))
    (results / machines.REFERENCE_FILE).write_text(json.dumps({"machine": "box"}) + "\n")
    (results / "matrix-box.md").write_text("# the published matrix\n")
    template = store.read_records(FIXTURE)[0]

    def measure(target, params, settings, on_message=None):
        return {
            **template,
            "pair": target.scenario.name,
            "variant": target.variant,
            "path": str(target.scenario.path),
            "settings": settings.stored(),
            "environment": {**template["environment"], "cpu": here[0], "cores": here[1]},
        }

    monkeypatch.setattr(run_command, "measure", measure)
    return results


def test_run_files_its_records_under_local_and_leaves_the_published_files(published_checkout):
    results = published_checkout
    published = [p for p in results.iterdir() if p.name != "records"]
    published += [results / "records" / "box"]
    before = state(*published)
    done = invoke("run", "pyleak")
    assert done.exit_code in (0, 1), done.stderr  # 1: a leak found
    mine = Path("results", "records", "box.local", "tf-2.21.0.jsonl")
    assert f"leakbench: 2 records written to {mine}" in done.stderr
    assert [(r["pair"], r["variant"]) for r in store.read_records(mine)] == [
        ("pyleak", "fixed"),
        ("pyleak", "leaky"),
    ]
    assert state(*published) == before
    assert sorted(p.name for p in (results / "records").iterdir()) == ["box", "box.local"]
    # --machine names the machine; its runs still go to its .local folder
    done = invoke("run", "pyleak", "--variant", "leaky", "--machine", "laptop")
    assert done.exit_code in (0, 1), done.stderr
    laptop = results / "records" / "laptop.local" / "tf-2.21.0.jsonl"
    assert [(r["pair"], r["variant"]) for r in store.read_records(laptop)] == [("pyleak", "leaky")]
    assert not (results / "records" / "laptop").exists()
    assert state(*published) == before


# --- leakbench publish: bad input ----------------------------------------------------------------


def test_publish_refuses_a_local_machine(published_checkout):
    before = state(published_checkout)
    line = refused(invoke("publish", "--machine", "box.local"), "--machine box.local")
    assert "a .local folder holds a user's runs, never published records" in line
    assert state(published_checkout) == before


def test_publish_refuses_an_installed_package(shipped):
    refused(invoke("publish"), "leakbench publish regenerates a checkout's results/")
    assert sorted(p.name for p in shipped.joinpath("results").rglob("*")) == []
    assert not Path("results").exists()


# --- the calibration line -------------------------------------------------------------------------


@pytest.fixture
def calibrations(tmp_path) -> Path:
    """A calibration folder holding one table, machine `ref`'s, for TensorFlow 2.21.0."""
    folder = tmp_path / "calibration"
    folder.mkdir()
    shutil.copy(CALIBRATION, folder / "ref-tf-2.21.0.json")
    return folder


def test_a_machine_with_its_own_calibration_quotes_it(calibrations):
    line = committed.sensitivity(calibrations, "ref", "2.21.0", quoted="other")
    assert line.startswith("no-leak means held memory grew by less than ")
    assert f"on ref, TensorFlow 2.21.0 ({calibrations / 'ref-tf-2.21.0.json'})" in line
    assert "has no calibration of its own" not in line


def test_a_machine_without_its_own_calibration_quotes_the_published_machines(calibrations):
    # another machine's table, first by name, that is not the one quoted
    shutil.copy(CALIBRATION, calibrations / "aaa-tf-2.21.0.json")
    line = committed.sensitivity(calibrations, "mine", "2.21.0", quoted="ref")
    assert line.startswith("no-leak means held memory grew by less than ")
    assert f"on ref, TensorFlow 2.21.0 ({calibrations / 'ref-tf-2.21.0.json'})" in line
    assert line.endswith("; mine has no calibration of its own")
    # no machine quoted: the first other machine with a table
    line = committed.sensitivity(calibrations, "mine", "2.21.0")
    assert f"on aaa, TensorFlow 2.21.0 ({calibrations / 'aaa-tf-2.21.0.json'})" in line
    assert line.endswith("; mine has no calibration of its own")


def test_no_calibration_of_this_tensorflow_anywhere_says_so(calibrations):
    line = committed.sensitivity(calibrations, "mine", "2.20.0", quoted="ref")
    assert line.startswith("no-leak means: not calibrated on mine for TensorFlow 2.20.0")


# Modules the measurement imports that do not measure or decide: what a change to them cannot move
NOT_ENGINE = {
    "__init__.py": "the package's marker",
    "version.py": "names the engine: the hash is over the others",
    "catalog.py": "finds a target's scenario file by name",
    "expectation.py": "what each variant should read: compared with a verdict, never part of it",
    "jsonfile.py": "reads and writes files whole, bounded: no number passes through it changed",
}


def _imported(module: str, seen: set[Path]) -> None:
    """Add to `seen` the file of `module` (leakbench.x.y) and of every leakbench module it imports,
    late imports included."""
    parts = module.split(".")[1:]
    base = version.PACKAGE.joinpath(*parts)
    path = base.with_suffix(".py") if base.with_suffix(".py").exists() else base / "__init__.py"
    if not path.exists() or path in seen:
        return
    seen.add(path)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("leakbench"):
            _imported(node.module, seen)
            for alias in node.names:
                _imported(f"{node.module}.{alias.name}", seen)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("leakbench"):
                    _imported(alias.name, seen)


def test_every_module_the_measurement_imports_is_hashed_into_the_engine():
    """A module split out of an engine module (a new file beside it) must join ENGINE_SOURCES, or a
    change to it would leave the records naming an engine that no longer measures as it did."""
    seen: set[Path] = set()
    _imported("leakbench.measure", seen)
    hashed = {p for pattern in version.ENGINE_SOURCES for p in version.PACKAGE.glob(pattern)}
    online = {version.PACKAGE / name for name in version.ONLINE_SOURCES}
    assert online <= hashed - seen  # files of the judge's folder that no record's making imports
    left = sorted(str(p.relative_to(version.PACKAGE)) for p in seen - hashed)
    assert left == sorted(NOT_ENGINE)
    # the online judge reads the engine's own rules: each module it imports is hashed
    judged: set[Path] = set()
    _imported("leakbench.analysis.judge.sequential", judged)
    assert sorted(str(p.relative_to(version.PACKAGE)) for p in judged - hashed) == sorted(
        n for n in NOT_ENGINE if version.PACKAGE / n in judged
    )
