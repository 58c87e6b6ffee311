"""One reused virtualenv for `leakbench bisect`: TensorFlow
builds installed one at a time, within a disk budget.

The venv gets leakbench's own dependencies once (pyproject.toml's list; the checkout itself
is put on PYTHONPATH, so the code measured is the checkout's). Before each TensorFlow
install the budget is checked (check_budget: the venv's size plus what the install may
add must stay within it, and that must fit in the free space), the TensorFlow family of
the previous build is uninstalled (TF_FAMILY: keras 2/3, keras-nightly, tensorboard and
tb-nightly must not overlap), and pip installs the build with --no-cache-dir (its cache
does not grow) and resolves numpy and the rest for that build. A measurement is
`python -m leakbench run` by the venv's interpreter, with a cap and a timeout.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import tomllib
import venv as venvs
from functools import partial
from pathlib import Path

from leakbench.history.bisect import InstallFailed
from leakbench.history.pin import TF_DISTRIBUTIONS
from leakbench.history.registry import Build
from leakbench.units import GIB, MIB, format_bytes

# A TensorFlow wheel takes about 4.3 times its size on disk while pip installs it: the download
# itself, then the unpacked package (tf-nightly
# 2.23.0.dev20261026: a 645 MB wheel, 2.1 GiB unpacked).
INSTALL_FACTOR = 4.5
UNKNOWN_WHEEL_BYTES = 700 * MIB  # a wheel whose size the registry did not give
# leakbench's own dependencies (matplotlib, scipy, memray, ...), once
DEPS_BYTES = 1 * GIB
TF_FAMILY = TF_DISTRIBUTIONS + (
    "keras",
    "keras-nightly",
    "tf-keras",
    "tf-keras-nightly",
    "tensorboard",
    "tb-nightly",
    "tensorflow-estimator",
    "tf-estimator-nightly",
)
# written as the venv is made: a folder without it is never deleted
MARK = ".leakbench-bisect-venv"
_DEPS_MARK = ".leakbench-deps"


class BudgetError(RuntimeError):
    """An install would take the venv past its disk budget, or past the free space. One line."""


def default_venv() -> Path:
    """$XDG_CACHE_HOME/leakbench/bisect-venv (~/.cache/leakbench/bisect-venv)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "leakbench" / "bisect-venv"


def dir_bytes(path: Path) -> int:
    """Bytes on disk of everything under `path` (0 when missing); hard links counted once."""
    seen, total = set(), 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                st = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += getattr(st, "st_blocks", 0) * 512 or st.st_size
    return total


def install_bytes(build: Build) -> int:
    """What installing `build` may add on disk at its
    peak, in bytes (INSTALL_FACTOR × its wheel)."""
    return int(INSTALL_FACTOR * (build.wheel_bytes or UNKNOWN_WHEEL_BYTES))


def check_budget(venv: Path, need_bytes: int, budget_bytes: int, what: str) -> None:
    """Raise BudgetError unless the venv's size plus need_bytes stays within budget_bytes and
    need_bytes fits in the free space of the venv's file system (shutil.disk_usage)."""
    used = dir_bytes(venv)
    where = next(p for p in (Path(venv), *Path(venv).absolute().parents) if p.exists())
    free = shutil.disk_usage(where).free
    gib = partial(format_bytes, unit=GIB)
    if used + need_bytes > budget_bytes:
        raise BudgetError(
            f"disk budget: {what} needs about {gib(need_bytes)} more in {venv}, which holds "
            f"{gib(used)}: past the budget of {gib(budget_bytes)} (--disk-budget)"
        )
    if need_bytes > free:
        raise BudgetError(
            f"disk budget: {what} needs about {gib(need_bytes)}, but {where} has {gib(free)} free"
        )


def dependencies(root: Path) -> list[str]:
    """leakbench's own dependencies, as pyproject.toml lists them."""
    with open(Path(root) / "pyproject.toml", "rb") as f:
        return list(tomllib.load(f)["project"]["dependencies"])


def _tail(text: str) -> str:
    lines = [x for x in (text or "").strip().splitlines() if x.strip()]
    return lines[-1].strip() if lines else "no output"


class Venv:
    """The bisect's virtualenv at `path`; pip's and leakbench's output are appended to `log`."""

    def __init__(self, path: Path, budget_bytes: int, log: Path):
        self.path, self.budget_bytes, self.log = Path(path), budget_bytes, Path(log)

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def _run(self, args: list, **more) -> subprocess.CompletedProcess:
        with open(self.log, "a") as log:
            log.write(f"$ {' '.join(str(a) for a in args)}\n")
            log.flush()
            return subprocess.run(
                [str(a) for a in args], stdout=log, stderr=subprocess.STDOUT, text=True, **more
            )

    def pip(self, *args) -> None:
        """Run the venv's pip. Raises InstallFailed with pip's last line when it fails."""
        done = self._run([self.python, "-m", "pip", *args, "--disable-pip-version-check"])
        if done.returncode:
            lines = self.log.read_text(errors="replace").splitlines()
            raise InstallFailed(
                f"pip {args[0]} exited {done.returncode}: {_tail(chr(10).join(lines[-40:]))}"
            )

    def ensure(self, root: Path) -> None:
        """Create the venv (this interpreter's Python) with leakbench's dependencies, once: a venv
        whose dependencies were installed already is reused. Raises BudgetError, InstallFailed."""
        deps = dependencies(root)
        mark = self.path / _DEPS_MARK
        if mark.is_file() and mark.read_text() == "\n".join(deps) and self.python.exists():
            return
        check_budget(self.path, DEPS_BYTES, self.budget_bytes, "leakbench's dependencies")
        if not self.python.exists():
            venvs.create(self.path, with_pip=True, clear=False)
            (self.path / MARK).write_text(
                "made by leakbench bisect; deleted at its end unless --keep-venv\n"
            )
        self.pip("install", "--no-cache-dir", *deps)
        mark.write_text("\n".join(deps))

    def install(self, build: Build) -> None:
        """Replace the venv's TensorFlow with `build`: the previous one is uninstalled, then the
        budget checked. Raises BudgetError (no TensorFlow left installed), InstallFailed."""
        self.pip("uninstall", "-y", *TF_FAMILY)
        check_budget(
            self.path, install_bytes(build), self.budget_bytes, f"installing {build.requirement}"
        )
        self.pip("install", "--no-cache-dir", build.requirement)

    def measure(
        self, root: Path, pair: str, variant: str, cap_bytes: int, timeout_seconds: float
    ) -> dict:
        """One `leakbench run PAIR --variant V --format json --out FILE` by the venv's interpreter
        on the checkout at `root` (FILE: a records file, one record per line; the last is read): its
        record, or a record-like dict reading "error" (no record written) or "hang" (the run
        outlived 4 × its timeout plus 5 minutes: a measurement with its confirmation run and heap
        pass stays well within)."""
        with tempfile.TemporaryDirectory(prefix="leakbench-bisect-") as tmp:
            out = Path(tmp) / "record.jsonl"
            args = [
                self.python,
                "-m",
                "leakbench",
                "run",
                pair,
                "--variant",
                variant,
                "--format",
                "json",
                "--out",
                out,
                "--cap",
                str(cap_bytes),
                "--timeout",
                str(timeout_seconds),
            ]
            env = {**os.environ, "LEAKBENCH_ROOT": str(root), "PYTHONPATH": str(root)}
            with open(self.log, "a") as log:
                log.write(f"$ {' '.join(str(a) for a in args)}\n")
                log.flush()
                child = subprocess.Popen(
                    [str(a) for a in args],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    cwd=root,
                    start_new_session=True,
                )
                try:
                    code = child.wait(timeout=4 * timeout_seconds + 300)
                except subprocess.TimeoutExpired:
                    os.killpg(child.pid, signal.SIGKILL)
                    child.wait()
                    return {
                        "verdict": "hang",
                        "phase": "run",
                        "error": "leakbench run outlived its outer timeout",
                    }
            lines = out.read_text().splitlines() if out.exists() else []
            if not lines:
                return {
                    "verdict": "error",
                    "phase": "run",
                    "error": f"leakbench run exited {code} without a record (see {self.log})",
                }
            return json.loads(lines[-1])

    def remove(self) -> None:
        """Delete the venv, if this command made it (MARK)."""
        if (self.path / MARK).exists():
            shutil.rmtree(self.path, ignore_errors=True)
