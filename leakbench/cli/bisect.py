"""`leakbench bisect PAIR --variant V --good A --bad B`:
the first TensorFlow build whose verdict differs from A's.

The search is leakbench.history.bisect's, the candidates leakbench.history.registry's, the
virtualenv leakbench.history.installer's, the views leakbench.reporters.bisect's (docs/bisect.md),
the refusals leakbench.cli.bisect_checks'.
Exit (leakbench.cli.exits) 0: a boundary found and confirmed; 1: none (the ends read alike, an
end or the builds around the boundary unusable, a boundary not stable); 2: bad input or a
refusal (one line, before anything is installed); 3: a virtualenv that could not be set up (an
install that failed) or the disk budget reached mid-way (one line; it stops there).
"""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

import click
from packaging.tags import sys_tags

from leakbench import jsonfile
from leakbench.cli import bisect_checks, exits
from leakbench.cli.base import failed, main, say
from leakbench.cli.files import RESULTS_OPTION, results_dir
from leakbench.history import bisect as bisecting
from leakbench.history import installer, registry, store
from leakbench.reporters import bisect as views
from leakbench.settings import MIN_SECONDS, Settings


def default_out(results: Path, pair: str, variant: str, good: str, bad: str) -> Path:
    """results/bisect/<machine>/<pair>-<variant>-<good>-<bad>.json (machine:
    bisect_checks.machine_name)."""
    machine = bisect_checks.machine_name(results)
    return results / "bisect" / machine / f"{pair}-{variant}-{good}-{bad}.json"


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
    root, settings, budget = bisect_checks.inputs(pair, variant, cap, timeout, disk_budget)
    venv_path = (venv_dir or installer.default_venv()).absolute()
    bisect_checks.check_venv(venv_path)
    where = results_dir(results, writes=True)  # it files its result there (bisect/)
    # a machine name that is no folder: refused before the network, before anything is made
    bisect_checks.machine_name(where)
    # before the network: a --out that cannot be written costs no registry query
    if out is not None:
        md = bisect_checks.check_out(
            out, force, default=out == default_out(where, pair, variant, good, bad)
        )
    bad, candidates = bisect_checks.candidates(good, bad)
    bisect_checks.check_budget(venv_path, candidates, budget)
    if out is None:  # named after the builds, `nightly` resolved
        out = default_out(where, pair, variant, good, bad)
        md = bisect_checks.check_out(out, force, default=True)
    bisect_checks.check_apart(root, pair, out, md, venv_path, keep_venv)
    venv_path.parent.mkdir(parents=True, exist_ok=True)
    # held to the end: two bisections never share one virtualenv
    lock = bisect_checks.lock(venv_path)
    env = installer.Venv(venv_path, budget, venv_path.with_name(venv_path.name + ".log"))
    say(
        f"bisect {pair} ({variant}): {len(candidates)} candidates "
        f"from {good} to {bad}; venv {venv_path}, log {env.log}"
    )
    found = _search(
        env,
        root,
        lambda build: env.measure(
            root, pair, variant, settings.cap_bytes, settings.timeout_seconds
        ),
        candidates,
        confirm,
        keep_venv,
        lock,
    )
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
    _file(out, md, result)
    raise SystemExit(found.exit_code)


def _search(
    env: installer.Venv,
    root: Path,
    measure: Callable,
    candidates: list[registry.Build],
    confirm: int,
    keep_venv: bool,
    lock: IO,
) -> bisecting.Outcome:
    """The search (bisecting.search) in `env`, a line per reading; `env` removed at the end but
    with keep_venv, `lock` released. The disk budget reached or a virtualenv that could not be
    set up ends here (one line, exit 3)."""
    readings = []

    def shown(reading) -> None:
        readings.append(reading)
        say(views.reading_line(len(readings), vars(reading)))

    try:
        env.ensure(root)
        return bisecting.search(candidates, env.install, measure, confirm=confirm, on_reading=shown)
    except installer.BudgetError as e:
        failed(f"{e}; stopped after {len(readings)} measurements")
    except bisecting.InstallFailed as e:
        failed(f"cannot set up {env.path}: {e}")
    finally:
        if not keep_venv:
            env.remove()
        lock.close()


def _file(out: Path, md: Path, result: dict) -> None:
    """The result as JSON in `out` and its markdown in `md` (each replaced whole), then its
    summary on stdout."""
    jsonfile.write_text_atomic(out, json.dumps(result, indent=2) + "\n")
    jsonfile.write_text_atomic(md, views.markdown(result))
    for line in views.summary(result):
        click.echo(line)
    click.echo(f"  written: {out}, {md}")
