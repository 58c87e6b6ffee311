"""`leakbench bisect PAIR --variant V --good A --bad B`:
the first TensorFlow build whose verdict differs from A's.

The search is leakbench.history.bisect's, the candidates leakbench.history.registry's, the
virtualenv leakbench.history.installer's, the views leakbench.reporters.bisect's (docs/bisect.md).
Exit (leakbench.cli.exits) 0: a boundary found and confirmed; 1: none (the ends read alike, an
end or the builds around the boundary unusable, a boundary not stable); 2: bad input or a
refusal (one line, before anything is installed); 3: a virtualenv that could not be set up (an
install that failed) or the disk budget reached mid-way (one line; it stops there).
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path

import click
from packaging.tags import sys_tags

from leakbench import catalog, jsonfile
from leakbench.cli import exits
from leakbench.cli.base import fail, failed, main, say
from leakbench.cli.files import RESULTS_OPTION, apart, results_dir, writable
from leakbench.cli.options import settings_or_fail
from leakbench.contract import ContractError
from leakbench.engine import memlimit
from leakbench.history import bisect as bisecting
from leakbench.history import builds, installer, registry, store
from leakbench.reporters import bisect as views
from leakbench.settings import MIN_SECONDS, Settings
from leakbench.units import parse_size


def default_out(results: Path, pair: str, variant: str, good: str, bad: str) -> Path:
    """results/bisect/<machine>/<pair>-<variant>-<good>-<bad>.json (machine: _machine)."""
    return results / "bisect" / _machine(results) / f"{pair}-{variant}-{good}-{bad}.json"


def _machine(results: Path) -> str:
    """store.asv_machine; ends here (one line, exit 2) where it cannot name a folder
    (ASV_MACHINE a/b, ..)."""
    machine = store.asv_machine(results)
    try:
        store.records_path(results, machine, "none")
    except store.VersionError as e:
        fail(f"ASV_MACHINE: {e}")
    return machine


def _size(option: str, text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as e:
        fail(f"{option}: {e}")


def _check_out(out: Path, force: bool, default: bool) -> Path:
    """The .md beside `out`; ends here when either exists (without --force) or cannot be written."""
    md = out.with_suffix(".md")
    for path in (out, md):
        if path.exists() and not force:
            fail(f"--out: {path} exists; pass --force to replace it")
    writable("--out", out, create_folder=default)
    writable("--out's table", md)
    return md


def _check_venv(path: Path) -> None:
    """A --venv folder must be missing, empty, or one
    this command made: it is deleted at the end."""
    if path.exists() and (
        not path.is_dir() or (any(path.iterdir()) and not (path / installer.MARK).exists())
    ):
        fail(
            f"--venv: {path} exists and is not a bisect virtualenv "
            "(it would be deleted at the end); pick a new folder"
        )


def _lock(path: Path):
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


@main.command(
    epilog=exits.epilog(
        DONE="a boundary found and confirmed",
        VERDICT="none (the ends read alike, an end or the builds around the boundary unusable, "
        "a boundary not stable)",
        BAD_INPUT="bad input or a refusal (before anything is installed)",
        FAILED="a virtualenv that could not be set up (an install that failed) or the disk "
        "budget reached mid-way",
    )
)
@click.argument("pair")
@click.option(
    "--variant",
    type=click.Choice(["leaky", "fixed"]),
    default="leaky",
    show_default=True,
    help="Which of the pair to measure: the leaky scenario or its fix.",
)
@click.option(
    "--good",
    required=True,
    metavar="VERSION",
    help="The build reading the old verdict, e.g. 2.15.1.",
)
@click.option(
    "--bad",
    required=True,
    metavar="VERSION",
    help=(
        "A later build reading another, e.g. 2.16.2; "
        "`nightly`: the newest nightly the registry serves."
    ),
)
@click.option(
    "--confirm",
    type=click.IntRange(1, 100),
    default=3,
    show_default=True,
    help="Readings each boundary build must give alike, its search reading included.",
)
@click.option(
    "--cap",
    default=None,
    metavar="SIZE",
    help=(
        "Memory cap per measurement. Default: leakbench "
        "run's (half of RAM, or less where little is "
        "available), fixed as the bisection starts."
    ),
)
@click.option(
    "--timeout",
    type=float,
    default=Settings.timeout_seconds,
    show_default=True,
    help="Seconds a measurement's child run may go without progress (per step, as for run; "
    f"at least {MIN_SECONDS:g}).",
)
@click.option(
    "--venv",
    "venv_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="The virtualenv to install each build into. Default: ~/.cache/leakbench/bisect-venv.",
)
@click.option(
    "--keep-venv", is_flag=True, help="Keep the virtualenv at the end (it is deleted otherwise)."
)
@click.option(
    "--disk-budget",
    default="6GiB",
    show_default=True,
    metavar="SIZE",
    help="Most the virtualenv may take on disk, an install's download included.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="The result as JSON in FILE (.json), the markdown beside it (.md). "
    "Default: results/bisect/<machine>/<pair>-<variant>-<good>-<bad>.json.",
)
@click.option("--force", is_flag=True, help="Replace --out (and its .md) if they exist.")
@RESULTS_OPTION
def bisect(
    pair,
    variant,
    good,
    bad,
    confirm,
    cap,
    timeout,
    venv_dir,
    keep_venv,
    disk_budget,
    out,
    force,
    results,
) -> None:
    """Find the first TensorFlow build whose verdict changed.

    The first build whose verdict for PAIR's variant differs from --good's. Candidates are the
    releases and RCs (tensorflow-cpu) and nightlies (tf-nightly) from GOOD to BAD that the
    registry serves for this Python, in PEP 440 order; each is installed in turn into one
    virtualenv and measured by `leakbench run`, as few as a bisection needs, and the two builds
    at the boundary are measured again. The result is always filed: JSON in --out, the markdown
    beside it (.md).
    """
    started, clock = datetime.now(UTC), time.monotonic()
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
    budget = _size("--disk-budget", disk_budget)
    venv_path = (venv_dir or installer.default_venv()).absolute()
    _check_venv(venv_path)
    where = results_dir(results, writes=True)  # it files its result there (bisect/)
    # a machine name that is no folder: refused before the network, before anything is made
    _machine(where)
    # before the network: a --out that cannot be written costs no registry query
    if out is not None:
        md = _check_out(out, force, default=out == default_out(where, pair, variant, good, bad))
    try:
        if bad != builds.NIGHTLY:
            bisecting.ends(good, bad)  # before the network
        served = registry.served(fetch=registry.fetch_index)
        if bad == builds.NIGHTLY:  # the newest nightly the registry serves
            bad = builds.newest_nightly([b.version for b in served]) or bad
        candidates = bisecting.between(served, good, bad)
    except (registry.RegistryError, bisecting.BisectError) as e:
        fail(str(e))
    try:  # every check before anything is made on disk
        installer.check_budget(
            venv_path,
            installer.DEPS_BYTES + max(map(installer.install_bytes, candidates)),
            budget,
            "leakbench's dependencies and the largest candidate",
        )
    except installer.BudgetError as e:
        fail(str(e))
    if out is None:  # named after the builds, `nightly` resolved
        out = default_out(where, pair, variant, good, bad)
        md = _check_out(out, force, default=True)
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
    venv_path.parent.mkdir(parents=True, exist_ok=True)
    lock = _lock(venv_path)  # held to the end: two bisections never share one virtualenv
    env = installer.Venv(venv_path, budget, venv_path.with_name(venv_path.name + ".log"))
    say(
        f"bisect {pair} ({variant}): {len(candidates)} candidates "
        f"from {good} to {bad}; venv {venv_path}, log {env.log}"
    )
    readings = []

    def shown(reading) -> None:
        readings.append(reading)
        say(views.reading_line(len(readings), vars(reading)))

    try:
        env.ensure(root)
        found = bisecting.search(
            candidates,
            env.install,
            lambda build: env.measure(
                root, pair, variant, settings.cap_bytes, settings.timeout_seconds
            ),
            confirm=confirm,
            on_reading=shown,
        )
    except installer.BudgetError as e:
        failed(f"{e}; stopped after {len(readings)} measurements")
    except bisecting.InstallFailed as e:
        failed(f"cannot set up {venv_path}: {e}")
    finally:
        if not keep_venv:
            env.remove()
        lock.close()
    result = {
        "pair": pair,
        "variant": variant,
        "good_asked": good,
        "bad_asked": bad,
        "machine": store.asv_machine(where),
        "python": platform.python_version(),
        "interpreter_tag": str(next(iter(sys_tags()))),
        "started": started.isoformat(timespec="seconds"),
        "seconds": round(time.monotonic() - clock, 1),
        "disk_budget_bytes": budget,
        "cap_bytes": settings.cap_bytes,
        "timeout_seconds": settings.timeout_seconds,
        "confirm": confirm,
        "distributions": [registry.RELEASE_DIST, registry.NIGHTLY_DIST],
        **found.as_dict(),
    }
    jsonfile.write_text_atomic(out, json.dumps(result, indent=2) + "\n")
    jsonfile.write_text_atomic(md, views.markdown(result))
    for line in views.summary(result):
        click.echo(line)
    click.echo(f"  written: {out}, {md}")
    raise SystemExit(found.exit_code)
