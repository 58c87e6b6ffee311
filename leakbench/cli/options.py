"""The measurement options `run`, `check` and `repeat` share (measurement_options), read into
one Settings (settings_of); bad values end in one line, exit 2 (leakbench.cli.base.fail).

Every rule of a setting is Settings' own (leakbench.settings): click only reads the type (a whole
number, a float), and each command that measures (these three, calibrate, bisect) builds its
Settings through settings_or_fail, which says Settings' refusal in the options' names."""

from __future__ import annotations

import functools
from pathlib import Path

import click

from leakbench.cli.base import fail
from leakbench.cli.files import takes_a_file
from leakbench.settings import MAX_REPS, MIN_REPS, MIN_SECONDS, Settings, SettingsError
from leakbench.units import parse_size

# busy processes beside the runs (leakbench.repeat.hog): repeat's and calibrate's
CPU_HOG_OPTION = click.option(
    "--cpu-hog",
    type=click.IntRange(0, 256),
    default=0,
    show_default=True,
    help="Keep this many busy processes running beside the runs (one per core: every core "
    "busy), to see the verdicts on a loaded machine.",
)
# which of each pair: run's and repeat's (bisect takes one variant)
VARIANT_OPTION = click.option(
    "--variant",
    type=click.Choice(["leaky", "fixed", "both"]),
    default="both",
    show_default=True,
    help="Which of each pair to measure: the leaky scenario, its fix, or both.",
)
SCALES_OPTION = click.option(
    "--scales",
    default="1,4",
    show_default=True,
    help="Multiples of the size parameter for peak scenarios, increasing.",
)


# Each Settings field as the command line names it, for Settings' refusals (settings_or_fail).
OPTION_NAMES = {
    "warmup": "--warmup",
    "reps": "--reps",
    "heap_reps": "--heap-reps",
    "cap_bytes": "--cap",
    "timeout_seconds": "--timeout",
    "scales": "--scales",
    "teardown_timeout_seconds": "--teardown-timeout",
    "flamegraph_dir": "--flamegraph-dir",
}


def settings_or_fail(**fields) -> Settings:
    """Settings(**fields); its refusal (SettingsError) ends here, one line naming the option,
    exit 2."""
    try:
        return Settings(**fields)
    except SettingsError as e:
        fail(e.line(OPTION_NAMES))


def measurement_options(scales: bool = False):
    """The options `run`, `check` and `repeat` share: repetitions, memory cap, timeouts, the
    flame graph's folder, and with scales --scales. The command gets them as one `settings`
    (settings_of, before its own body runs: a bad value ends there, one line, exit 2)."""
    options = [
        click.option(
            "--reps",
            type=int,
            default=Settings.reps,
            show_default=True,
            help=f"Measured repetitions per child run ({MIN_REPS} to {MAX_REPS}).",
        ),
        click.option(
            "--warmup",
            type=int,
            default=Settings.warmup,
            show_default=True,
            help="Repetitions after setup and before the measured ones, to fill caches and "
            f"pools; none is measured (0 to {MAX_REPS}).",
        ),
        click.option(
            "--heap-reps",
            type=int,
            default=Settings.heap_reps,
            show_default=True,
            help=f"Repetitions of the memray heap pass (0: skip it; else {MIN_REPS} to "
            f"{MAX_REPS}).",
        ),
        click.option(
            "--cap",
            "cap",
            default=None,
            metavar="SIZE",
            help="Memory cap per child (RSS of its process tree), e.g. 4GiB. Default: half of RAM, "
            "or less where little is available or a cgroup limits memory.",
        ),
        click.option(
            "--timeout",
            type=float,
            default=Settings.timeout_seconds,
            show_default=True,
            help="Seconds a child run may go without progress (a phase begun, "
            "a repetition done) before it is killed as a hang: per step, "
            f"not for the whole run (at least {MIN_SECONDS:g}).",
        ),
        click.option(
            "--teardown-timeout",
            type=float,
            default=Settings.teardown_timeout_seconds,
            show_default=True,
            help="Seconds a child may take to tear down once its measurement is in "
            f"(at least {MIN_SECONDS:g}).",
        ),
        click.option(
            "--flamegraph-dir",
            type=click.Path(file_okay=False, path_type=Path),
            default=None,
            metavar="DIR",
            help="Also write memray's flame graph of the allocations the heap pass "
            "retained (memray flamegraph --leaks) to DIR/<pair>-<variant>.html.",
        ),
        *([SCALES_OPTION] if scales else []),
    ]

    def decorate(command):
        @functools.wraps(command)
        def measured(**given):
            # --scales first: scales_of's refusal comes before settings_of's, as it always has
            more = {"scales": scales_of(given.pop("scales"))} if scales else {}
            shared = [given.pop(o) for o in _SHARED]
            return command(settings=settings_of(*shared, **more), **given)

        for option in reversed(options):
            measured = option(measured)
        return measured

    return decorate


# measurement_options' parameters, in settings_of's order
_SHARED = ("reps", "warmup", "heap_reps", "cap", "timeout", "teardown_timeout", "flamegraph_dir")


def scales_of(text: str) -> tuple:
    """'1,4' -> (1.0, 4.0); bad input ends here (Settings says what scales may be)."""
    try:
        found = tuple(float(s) for s in text.split(","))
    except ValueError:
        fail(f"--scales: {text!r} is not a list of numbers, e.g. 1,4")
    settings_or_fail(scales=found)
    return found


def sizes_fit(plans, scales) -> None:
    """End here (one line, exit 2) when a peak pair's size times a scale is past what a float
    holds (each finite, their product not): plans are (target, parameters) pairs."""
    from leakbench.measure import sizes

    for target, params in plans:
        try:
            sizes(target, params, scales)
        except ValueError as e:
            fail(f"--param/--scales: {target.scenario.name}: {e}")


def settings_of(
    reps, warmup, heap_reps, cap, timeout, teardown_timeout, flamegraph_dir, **more
) -> Settings:
    """Settings from the shared options; bad values end here with one line, exit 2."""
    try:
        cap_bytes = parse_size(cap) if cap is not None else 0  # "" is bad input, not the default
    except ValueError as e:
        fail(f"--cap: {e}")
    settings = settings_or_fail(
        warmup=warmup,
        reps=reps,
        heap_reps=heap_reps,
        cap_bytes=cap_bytes,
        timeout_seconds=timeout,
        teardown_timeout_seconds=teardown_timeout,
        flamegraph_dir=str(flamegraph_dir) if flamegraph_dir is not None else None,
        **more,
    )
    if flamegraph_dir is not None:  # made only once every setting is good
        try:
            flamegraph_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            fail(f"--flamegraph-dir: cannot write in {flamegraph_dir}: {e.strerror or e}")
        # a folder that exists but takes no file would fail only after the measurement
        takes_a_file("--flamegraph-dir", flamegraph_dir)
    return settings
