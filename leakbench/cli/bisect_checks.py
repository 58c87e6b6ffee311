"""`leakbench bisect`'s refusals: its inputs, its candidates, its virtualenv and its --out, each
checked before anything is installed. Each ends the command in one line, exit 2
(leakbench.cli.exits.BAD_INPUT), as leakbench.cli.bisect's docstring says.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO

from leakbench import catalog
from leakbench.cli.base import fail
from leakbench.cli.files import apart, writable
from leakbench.cli.options import settings_or_fail
from leakbench.contract import ContractError
from leakbench.engine import memlimit
from leakbench.history import bisect as bisecting
from leakbench.history import builds, installer, registry, store
from leakbench.settings import Settings
from leakbench.units import parse_size


def inputs(
    pair: str, variant: str, cap: str | None, timeout: float, disk_budget: str
) -> tuple[Path, Settings, int]:
    """(the checkout's root, every measurement's settings, the disk budget in bytes), checked; a
    bad one ends here (one line, exit 2): a file for PAIR, a pair the catalog lacks, a bad --cap
    (default: leakbench run's cap, memlimit), --timeout (seconds) or --disk-budget."""
    if pair.endswith(".py") or os.sep in pair:
        fail(f"{pair}: bisect takes a pair name (leakbench list), not a file")
    try:
        root = catalog.find_root()
        catalog.targets(root, [pair], variant)
    except ContractError as e:
        fail(str(e))
    cap_bytes = _size("--cap", cap) if cap is not None else memlimit.default_cap_bytes()
    # every measurement's settings (`leakbench run --cap --timeout` in the virtualenv), checked here
    settings = settings_or_fail(cap_bytes=cap_bytes, timeout_seconds=timeout)
    return root, settings, _size("--disk-budget", disk_budget)


def machine_name(results: Path) -> str:
    """store.asv_machine; ends here (one line, exit 2) where it cannot name a folder
    (ASV_MACHINE a/b, ..)."""
    machine = store.asv_machine(results)
    try:
        store.records_path(results, machine, "none")
    except store.VersionError as e:
        fail(f"ASV_MACHINE: {e}")
    return machine


def check_venv(path: Path) -> None:
    """A --venv folder must be missing, empty, or one
    this command made: it is deleted at the end."""
    if path.exists() and (
        not path.is_dir() or (any(path.iterdir()) and not (path / installer.MARK).exists())
    ):
        fail(
            f"--venv: {path} exists and is not a bisect virtualenv "
            "(it would be deleted at the end); pick a new folder"
        )


def check_out(out: Path, force: bool, default: bool) -> Path:
    """The .md beside `out`; ends here when either exists (without --force) or cannot be written."""
    md = out.with_suffix(".md")
    for path in (out, md):
        if path.exists() and not force:
            fail(f"--out: {path} exists; pass --force to replace it")
    writable("--out", out, create_folder=default)
    writable("--out's table", md)
    return md


def candidates(good: str, bad: str) -> tuple[str, list[registry.Build]]:
    """(BAD, `nightly` resolved to the newest nightly the registry serves; the builds from GOOD to
    BAD it serves, in PEP 440 order). Bad ends or a registry that cannot be read end here (one
    line, exit 2); ends given as versions are checked before the network."""
    try:
        if bad != builds.NIGHTLY:
            bisecting.ends(good, bad)  # before the network
        served = registry.served(fetch=registry.fetch_index)
        if bad == builds.NIGHTLY:  # the newest nightly the registry serves
            bad = builds.newest_nightly([b.version for b in served]) or bad
        return bad, bisecting.between(served, good, bad)
    except (registry.RegistryError, bisecting.BisectError) as e:
        fail(str(e))


def check_budget(venv_path: Path, candidates: list[registry.Build], budget: int) -> None:
    """Ends here (one line, exit 2) where leakbench's dependencies and the largest candidate
    would not fit the disk budget (bytes): every check before anything is made on disk."""
    try:
        installer.check_budget(
            venv_path,
            installer.DEPS_BYTES + max(map(installer.install_bytes, candidates)),
            budget,
            "leakbench's dependencies and the largest candidate",
        )
    except installer.BudgetError as e:
        fail(str(e))


def check_apart(
    root: Path, pair: str, out: Path, md: Path, venv_path: Path, keep_venv: bool
) -> None:
    """Ends here (one line, exit 2) where --out or its table is the pair's scenario file, or lies
    inside a --venv deleted at the end."""
    apart(
        [("--out", out), ("--out's table", md)],
        [
            ("the pair's scenario file", root / folder / f"{pair}.py")
            for folder in catalog.VARIANT_DIRS.values()
        ],
    )
    if not keep_venv and Path(os.path.realpath(venv_path)) in Path(os.path.realpath(out)).parents:
        fail(
            f"--out: {out} is inside --venv {venv_path}, which is "
            "deleted at the end; write elsewhere, or pass --keep-venv"
        )


def lock(path: Path) -> IO:
    """An exclusive lock on <venv>.lock (fcntl), released when the process ends; fails in one line
    when another bisection holds it."""
    handle = open(path.with_name(path.name + ".lock"), "w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fail(
            f"--venv: another leakbench bisect is using {path}; wait for it, or pass another --venv"
        )
    return handle


def _size(option: str, text: str) -> int:
    """SIZE (units.parse_size: "6GiB") in bytes; a bad one ends here, one line naming `option`."""
    try:
        return parse_size(text)
    except ValueError as e:
        fail(f"{option}: {e}")
