"""`leakbench run --jobs N` and the records it files (leakbench.cli.run). No TensorFlow needed.

--jobs runs variants at once, each in its own capped, timed child, and keeps the catalog's order
in the table and in --format json --out FILE (real children of a pure-Python pair, as in
test_cli). The records (store.write_records) are tested with the measurement replaced by fixture
records: they land in results/records/<machine>.local/tf-<installed TensorFlow>.jsonl
(machines.local: a user's own runs, never the published results/records/<machine>/) at the default
settings only, replace the pairs measured, and go under a name of their own where asv's folder
holds another machine.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from conftest import invoke, pair_checkout

from leakbench.cli import run as run_command
from leakbench.history import pin, store
from tests.test_cli import DATA, FAST

FIXTURE = DATA / "results" / "records" / "fixture" / "tf-2.21.0.jsonl"
INTEL = ("Intel(R) Xeon(R) Processor", 2)
AMD = ("AMD EPYC", 2)
SETUP_SECONDS = 2  # the slow leaky variant's setup: its child outlasts the fixed one's start


# --- two children at once, real ones -----------------------------------------------------


@pytest.mark.timeout(180)
def test_jobs_two_runs_variants_at_once_and_keeps_the_catalog_order(tmp_path, monkeypatch):
    root = pair_checkout(tmp_path)
    slow = (DATA / "python_leak.py").read_text()
    slow = slow.replace(
        "def setup(bytes_per_rep):\n",
        f"def setup(bytes_per_rep):\n    __import__('time').sleep({SETUP_SECONDS})\n",
    )
    (root / "scenarios" / "pyleak.py").write_text(slow)
    spans: dict[str, list[float]] = {}
    real = run_command.measure

    def timed(target, params, settings, on_message=None):
        start = time.monotonic()
        rec = real(target, params, settings, on_message=on_message)
        spans[target.variant] = [start, time.monotonic()]
        return rec

    monkeypatch.setattr(run_command, "measure", timed)
    done = invoke(
        "run",
        "pyleak",
        *FAST,
        "--jobs",
        "2",
        "--format",
        "json",
        "--out",
        "out.jsonl",
        env={"LEAKBENCH_ROOT": root},
        cwd=tmp_path,
        catch_exceptions=False,
    )
    out, err = done.stdout, done.stderr
    assert done.exit_code == 0, err
    # both children ran at once: each started before the other ended
    assert spans["leaky"][0] < spans["fixed"][1] and spans["fixed"][0] < spans["leaky"][1]
    rows = [line for line in out.splitlines() if "pyleak" in line]
    assert [("leaky" in r, "fixed" in r) for r in rows] == [(True, False), (False, True)]
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert [json.loads(line)["variant"] for line in lines] == ["leaky", "fixed"]
    assert all(json.loads(line)["settings"]["cap_bytes"] == 1 << 30 for line in lines)
    assert "records not written: --warmup, --reps, --heap-reps, --cap, --timeout set" in err


# --- the records, with the measurement replaced ------------------------------------------


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A checkout with the pair `pyleak` as LEAKBENCH_ROOT, tmp_path the working folder (results/
    in it; the runs below are `invoke("run", ...)` there), asv machine `box`,
    TensorFlow 2.21.0 installed, this machine an Intel Xeon of 2 cores, and `measure` returning
    a fixture record (after a short sleep) as measured here; measured: the targets measured,
    most: the most measured at once."""
    root = pair_checkout(tmp_path)
    (tmp_path / "results").mkdir()
    monkeypatch.setenv("LEAKBENCH_ROOT", str(root))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ASV_MACHINE", "box")
    monkeypatch.setattr(pin, "installed_tf_version", lambda: "2.21.0")
    monkeypatch.setattr(store, "this_machine", lambda: INTEL)
    template = store.read_records(FIXTURE)[0]
    seen = {"measured": [], "running": 0, "most": 0}
    lock = threading.Lock()

    def measure(target, params, settings, on_message=None):
        with lock:
            seen["measured"].append((target.scenario.name, target.variant))
            seen["running"] += 1
            seen["most"] = max(seen["most"], seen["running"])
        time.sleep(0.2)
        with lock:
            seen["running"] -= 1
        cpu, cores = INTEL
        return {
            **template,
            "pair": target.scenario.name,
            "variant": target.variant,
            "path": str(target.scenario.path),
            "settings": settings.stored(),
            "environment": {**template["environment"], "cpu": cpu, "cores": cores},
        }

    monkeypatch.setattr(run_command, "measure", measure)
    return root, tmp_path, seen


def records_of(path: Path) -> list[tuple]:
    return [(r["pair"], r["variant"]) for r in store.read_records(path)]


def test_default_settings_file_the_records(fake):
    _, cwd, seen = fake
    done = invoke("run", catch_exceptions=False)
    assert done.exit_code in (0, 1), done.stderr
    path = cwd / "results" / "records" / "box.local" / "tf-2.21.0.jsonl"
    written = Path("results/records/box.local/tf-2.21.0.jsonl")
    assert f"leakbench: 2 records written to {written}" in done.stderr
    assert not (cwd / "results" / "records" / "box").exists()  # never the published folder
    assert records_of(path) == [("pyleak", "fixed"), ("pyleak", "leaky")]
    assert seen["most"] == 2  # the default --jobs: this machine's cores
    # a run of one variant replaces that one and keeps the other
    before = {(r["pair"], r["variant"]): r for r in store.read_records(path)}
    done = invoke("run", "pyleak", "--variant", "leaky", "--jobs", "1", catch_exceptions=False)
    after = {(r["pair"], r["variant"]): r for r in store.read_records(path)}
    assert (
        after.keys() == before.keys() and after[("pyleak", "fixed")] == before[("pyleak", "fixed")]
    )
    assert "leakbench: 1 records written to" in done.stderr


@pytest.mark.parametrize(
    "args, named",
    [
        (["--reps", "6"], "--reps"),
        (["--warmup", "1"], "--warmup"),
        (["--cap", "1GiB"], "--cap"),
        (["--scales", "1,2"], "--scales"),
        (["--param", "bytes_per_rep=1024"], "--param"),
    ],
)
def test_other_settings_file_no_records(fake, args, named):
    _, cwd, seen = fake
    done = invoke("run", "pyleak", *args, catch_exceptions=False)
    assert done.exit_code in (0, 1), done.stderr
    assert seen["measured"]  # measured all the same
    lines = [line for line in done.stderr.splitlines() if "records not written" in line]
    assert lines == [
        f"leakbench: records not written: {named} set; records are compared across "
        "TensorFlow versions at the default settings"
    ]
    assert not (cwd / "results" / "records").exists()


def test_no_records_writes_none(fake):
    _, cwd, seen = fake
    done = invoke("run", "--no-records", catch_exceptions=False)
    assert seen["measured"] and not (cwd / "results" / "records").exists()
    assert "records" not in done.stderr


def test_machine_option_names_the_folder(fake):
    _, cwd, _ = fake
    invoke("run", "--machine", "laptop", catch_exceptions=False)
    assert records_of(cwd / "results" / "records" / "laptop.local" / "tf-2.21.0.jsonl") == [
        ("pyleak", "fixed"),
        ("pyleak", "leaky"),
    ]
    assert not (cwd / "results" / "records" / "laptop").exists()
    # a name already local is kept as it is, not laptop.local.local
    invoke("run", "--machine", "laptop.local", catch_exceptions=False)
    assert sorted(p.name for p in (cwd / "results" / "records").iterdir()) == ["laptop.local"]


def test_asvs_folder_of_another_machine_gets_a_name_of_this_one(fake):
    _, cwd, _ = fake
    theirs = [
        {**r, "environment": {**r["environment"], "cpu": AMD[0], "cores": AMD[1]}}
        for r in store.read_records(FIXTURE)
    ]
    store.write_records(cwd / "results", "box", "2.21.0", theirs)
    before = (cwd / "results" / "records" / "box" / "tf-2.21.0.jsonl").read_bytes()
    done = invoke("run", catch_exceptions=False)
    assert (
        "holds records of AMD EPYC, 2 cores, not of this machine (Intel(R) Xeon(R) Processor, "
        "2 cores): its records go under box-intel-xeon-processor-2c" in done.stderr
    )
    mine = cwd / "results" / "records" / "box-intel-xeon-processor-2c.local" / "tf-2.21.0.jsonl"
    assert records_of(mine) == [("pyleak", "fixed"), ("pyleak", "leaky")]
    assert (cwd / "results" / "records" / "box" / "tf-2.21.0.jsonl").read_bytes() == before


def test_a_machine_folder_of_another_machine_is_refused_before_measuring(fake):
    _, cwd, seen = fake
    theirs = [
        {**r, "environment": {**r["environment"], "cpu": AMD[0], "cores": AMD[1]}}
        for r in store.read_records(FIXTURE)
    ]
    store.write_records(cwd / "results", "box.local", "2.13.1", theirs)
    done = invoke("run", "--machine", "box", catch_exceptions=False)
    assert done.exit_code == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"leakbench: error: {Path('results/records/box.local')} holds records of another machine "
        "(8 of AMD EPYC, 2 cores (1 file)); records of Intel(R) Xeon(R) Processor, 2 cores would "
        "mix two under one name: file them under a name of their own, "
        "e.g. box-intel-xeon-processor-2c.local"
    ]
    assert seen["measured"] == []
    assert not (cwd / "results" / "records" / "box.local" / "tf-2.21.0.jsonl").exists()


def test_a_pin_that_did_not_hold_files_nothing(fake, monkeypatch):
    _, cwd, _ = fake
    monkeypatch.setattr(pin, "installed_tf_version", lambda: "2.20.0")
    done = invoke("run", catch_exceptions=False)
    assert done.exit_code == 3  # measured, then not filed: a failure (leakbench.cli.exits)
    assert done.stderr.splitlines()[-1].startswith("leakbench: error: records not written: pyleak")
    assert "this environment pins 2.20.0" in done.stderr
    assert not (cwd / "results" / "records").exists()
