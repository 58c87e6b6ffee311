"""The wheel carries the suite (issue 33): `leakbench list`, `run` and `site` work where
leakbench is installed from a wheel, outside any checkout.

The wheel is built from a clean copy of the commit (`git archive HEAD`: what a clone gets, no
untracked file), offline, with this environment's setuptools and wheel, which TensorFlow brings
(tensorflow-cpu needs setuptools, its astunparse wheel): hence the `tf` marker on both tests, which
the suite without TensorFlow skips. The install goes into a fresh virtualenv made outside the
checkout by the base interpreter; a .pth file there puts this environment's site-packages on its
path, so it sees the installed TensorFlow without installing it again (it is no dependency:
pyproject.toml). Every command runs in a folder outside any checkout, with a subprocess timeout,
and the measurement with a cap and a timeout of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAIR = "dataset_per_step"  # one of the quickest pairs: about 5 s a variant (results/run-vm-*.md)
MEASURE = ["--cap", "2GiB", "--timeout", "120", "--jobs", "1"]
SHIPPED = "leakbench/suite"  # where pyproject.toml maps scenarios/, fixes/ and results/

pytestmark = pytest.mark.tf


def run(args: list, timeout: float, **kwargs) -> subprocess.CompletedProcess:
    """A command that must exit 0 within `timeout` seconds; its output in the failure."""
    done = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=timeout, **kwargs
    )
    assert done.returncode == 0, (args, done.returncode, done.stdout[-3000:], done.stderr[-3000:])
    return done


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """The committed tree (HEAD) in a folder of its own, as a clean clone has it."""
    where = tmp_path_factory.mktemp("clone")
    archive = where.with_suffix(".tar")
    run(["git", "-C", REPO, "archive", "--format=tar", "-o", archive, "HEAD"], timeout=60)
    with tarfile.open(archive) as tar:
        tar.extractall(where, filter="data")
    return where


@pytest.fixture(scope="module")
def wheel(clone, tmp_path_factory) -> Path:
    """The wheel of the clone, built offline with this environment's setuptools."""
    dist = tmp_path_factory.mktemp("dist")
    run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index"]
        + ["--quiet", "-w", dist, clone],
        timeout=120,
    )
    (found,) = dist.glob("leakbench-*.whl")
    return found


def pairs(clone: Path) -> list[str]:
    return sorted(p.stem for p in (clone / "scenarios").glob("*.py"))


def test_wheel_carries_the_package_and_the_suite(clone, wheel):
    """Every file of the package, both files of every pair, and the records the site reads."""
    names = set(zipfile.ZipFile(wheel).namelist())
    package = {p.relative_to(clone).as_posix() for p in (clone / "leakbench").rglob("*.py")}
    assert package - names == set(), "modules the wheel lacks: a subpackage not in pyproject.toml"
    assert len(pairs(clone)) == 22
    for name in pairs(clone):
        for folder in ("scenarios", "fixes"):
            assert f"{SHIPPED}/{folder}/{name}.py" in names
    # the records themselves; not publish's catalog.json beside them (what a checkout re-measures)
    records = {
        p.relative_to(clone).as_posix() for p in (clone / "results").glob("records/*/*.jsonl")
    }
    assert records and {f"{SHIPPED}/{r}" for r in records} <= names


def test_wheel_carries_asvs_machine_files(clone, wheel):
    """asv's machine.json of every machine with asv results committed (results/<machine>/), by
    which the installed package picks the site's machine among several (machines.asv_machine, in
    store.pick_machine); read from the clone, whatever the machines are named."""
    found = {p.relative_to(clone).as_posix() for p in (clone / "results").glob("*/machine.json")}
    if not found:
        pytest.skip("no asv results committed (results/<machine>/machine.json): none to carry")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"{SHIPPED}/{f}" for f in found} <= names


@pytest.fixture
def installed(wheel, tmp_path) -> Path:
    """A fresh virtualenv outside the checkout with the wheel installed; returns its bin/."""
    venv = tmp_path / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    run([base, "-m", "venv", "--without-pip", venv], timeout=120)
    python = venv / "bin" / "python"
    run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet"]
        + ["--no-deps", "--no-index", wheel], timeout=120)  # fmt: skip
    # after the install: pip must not see (nor offer to replace) this environment's leakbench
    ask = "import sysconfig; print(sysconfig.get_path('purelib'))"
    purelib = Path(run([python, "-c", ask], timeout=60).stdout.strip())
    (purelib / "this-environments-packages.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return venv / "bin"


def test_installed_wheel_lists_runs_and_builds_the_site(clone, installed, tmp_path):
    """Outside any checkout: list names the 22 pairs, run measures one, site builds the lessons
    from the shipped records, and nothing is written into the installed package."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    assert not any((p / "scenarios").is_dir() for p in (outside, *outside.parents))
    env = {k: v for k, v in os.environ.items() if k not in ("LEAKBENCH_ROOT", "ASV_MACHINE")}
    env |= {"PATH": f"{installed}{os.pathsep}{env.get('PATH', '')}", "PYTHONPATH": ""}
    env["VIRTUAL_ENV"] = str(installed.parent)
    leakbench = installed / "leakbench"

    def where(cwd: Path) -> list[str]:
        ask = (
            "from leakbench import catalog; from leakbench.cli.files import results_dir; "
            "root = catalog.find_root(); "
            "print(root, catalog.is_shipped(root), results_dir(None), results_dir(None, True))"
        )
        return run([installed / "python", "-c", ask], timeout=60, cwd=cwd, env=env).stdout.split()

    root, shipped, reads, writes = where(outside)
    assert Path(root).is_relative_to(installed.parent) and root.endswith(SHIPPED), root
    assert shipped == "True" and reads == f"{root}/results" and writes == "results"
    before = sorted(Path(root).rglob("*"))

    listed = run([leakbench, "list"], timeout=60, cwd=outside, env=env).stdout
    assert all(name in listed for name in pairs(clone)), listed

    measured = run(
        [leakbench, "run", PAIR, *MEASURE, "--format", "json"], timeout=300, cwd=outside, env=env
    )
    records = [json.loads(line) for line in measured.stdout.splitlines()]
    assert {(r["variant"], r["verdict"]) for r in records} == {
        ("leaky", "leak"),
        ("fixed", "no-leak"),
    }, measured.stderr
    assert all(r["settings"]["cap_bytes"] == 2 << 30 for r in records)

    site = tmp_path / "site-folder"
    site.mkdir()
    built = run([leakbench, "site", "--out-dir", "site"], timeout=300, cwd=site, env=env).stdout
    lessons = sorted(p.stem for p in (site / "site" / "lessons").glob("*.html"))
    assert lessons == pairs(clone), built
    assert (site / "site" / "index.html").is_file()
    assert "asv site skipped: no asv.conf.json" in built  # asv publishes a checkout's results
    assert sorted(Path(root).rglob("*")) == before, "written into the installed package"
