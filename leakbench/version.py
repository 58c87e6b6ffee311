"""Which engine made a record: the package version, the checkout's commit and a hash of the
engine's source.

Two records are comparable only when one engine made both: the same rules, probes and
protocol. The commit alone cannot say that (a commit that changes a README is not a new
engine, and a wheel has no commit), so a record carries all three:

    engine = {"version": "0.2.0", "commit": "53b6a7e1c2d4" or None, "source": "9f3a1c0b5e7d"}

`source` is the first 12 hex digits of a SHA-256 over ENGINE_SOURCES (path and bytes of each
file, in path order): every module that measures or decides a record (ONLINE_SOURCES, the
watchers' online judge, decides none and is left out). Views compare `identity`
(version + source); the commit says where to read that code. asv uses the identity as a
benchmark's version (benchmarks/benchmark_pairs.py), so asv drops results of another engine.
"""

from __future__ import annotations

import hashlib
import subprocess
import tomllib
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parent
# What measures or decides, relative to the package: a change to any of these is a new engine.
ENGINE_SOURCES = (
    "engine/*.py",
    "analysis/**/*.py",  # the judge (analysis/judge/) included
    "measure.py",
    "settings.py",
    "metrics.py",
    "metric_type.py",
    "bars.py",
    "series.py",
    "contract.py",
    "scenario_source.py",
    "contract_rules.py",
    "units.py",
)
# The watchers' online judge (leakbench.watch, leakbench.keras): it decides inside a running job,
# never a record, and no module that makes a record imports it (tests/test_published.py). A change
# to it is not a new engine of the records; the watchers' tables name it by online_hash.
ONLINE_SOURCES = ("analysis/judge/sequential.py", "analysis/judge/interval.py")
UNKNOWN = "unknown"  # the identity of a record made before records named their engine


@cache
def package_version(package: Path = PACKAGE) -> str:
    """'0.2.0': pyproject.toml's version in a checkout (the code that runs, even on another
    environment's interpreter through PYTHONPATH), else the installed distribution's."""
    try:
        with open(package.parent / "pyproject.toml", "rb") as f:
            return str(tomllib.load(f)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        pass
    try:
        return metadata.version("leakbench")
    except metadata.PackageNotFoundError:
        return "0+unknown"


@cache
def source_hash(package: Path = PACKAGE) -> str:
    """12 hex digits of SHA-256 over the engine's source files (ENGINE_SOURCES, less
    ONLINE_SOURCES)."""
    found = {p for pattern in ENGINE_SOURCES for p in package.glob(pattern)}
    return files_hash(package, found - {package / name for name in ONLINE_SOURCES})


@cache
def online_hash(package: Path = PACKAGE) -> str:
    """12 hex digits of SHA-256 over the online judge's files (ONLINE_SOURCES): with the engine's
    identity, what a table of the watchers was measured with."""
    return files_hash(package, {package / name for name in ONLINE_SOURCES})


def files_hash(base: Path, files: set[Path]) -> str:
    """12 hex digits of SHA-256 over `files`: the path (relative to `base`) and bytes of each,
    in path order: the engine's, the online judge's and the catalog's (catalog.source_hash)."""
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.relative_to(base).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


@cache
def commit(package: Path = PACKAGE) -> str | None:
    """The checkout's HEAD commit (12 hex digits), or None outside a git checkout."""
    try:
        done = subprocess.run(
            ["git", "-C", str(package), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def engine() -> dict[str, Any]:
    """This engine, as a record's `engine` key holds it (the module docstring)."""
    return {"version": package_version(), "commit": commit(), "source": source_hash()}


def _named(rec_or_engine: Any) -> dict | None:
    """The engine a record (or an `engine` value) names, None where it names none."""
    found = rec_or_engine.get("engine", rec_or_engine) if isinstance(rec_or_engine, dict) else None
    return found if isinstance(found, dict) and found.get("source") else None


def identity(rec_or_engine: Any) -> str:
    """'0.2.0+9f3a1c0b5e7d': what two records must share to be compared; UNKNOWN for a record
    (or an `engine` value) that names no engine."""
    found = _named(rec_or_engine)
    return f"{found.get('version')}+{found['source']}" if found else UNKNOWN


def describe(rec_or_engine: Any) -> str:
    """'leakbench 0.2.0 (engine 9f3a1c0b5e7d, commit 53b6a7e1c2d4)' for a view's heading."""
    found = _named(rec_or_engine)
    if not found:
        return "an engine that did not name itself (records before schema 4)"
    where = f", commit {found['commit']}" if found.get("commit") else ""
    return f"leakbench {found.get('version')} (engine {found['source']}{where})"
