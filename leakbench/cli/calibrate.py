"""`leakbench calibrate`: designed leaks of known size (logic in leakbench.calibrate)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import click

from leakbench import jsonfile
from leakbench.cli import exits
from leakbench.cli.base import fail, main, say
from leakbench.cli.files import apart, machine_of, results_dir, writable
from leakbench.cli.options import CPU_HOG_OPTION, settings_or_fail
from leakbench.history.store import records_path
from leakbench.reporters import calibration as calibration_view
from leakbench.settings import FIXED_CAP_BYTES, MIN_SECONDS, Settings
from leakbench.units import format_bytes, parse_size


def _sizes(text: str) -> list[int]:
    """'0,1KiB,64KiB' -> bytes; 0 is the control."""
    found = []
    for item in text.split(","):
        item = item.strip()
        found.append(0 if item == "0" else parse_size(item))
    return found


@main.command(
    "calibrate",
    epilog=exits.epilog(
        DONE="the table written", BAD_INPUT="bad input (nothing measured, nothing overwritten)"
    ),
)
@click.option(
    "--runs",
    type=click.IntRange(1, 1000),
    default=10,
    show_default=True,
    help="Measurements per case, each in a fresh process.",
)
@click.option(
    "--sizes",
    default="0,8KiB,16KiB,32KiB,64KiB",
    show_default=True,
    help="Bytes kept per repetition, comma-separated; 0 is the control.",
)
@click.option(
    "--holders",
    default="python,tensorflow",
    show_default=True,
    metavar="NAMES",
    help=(
        "Designs to measure, comma-separated: python (bytearrays kept in a list), tensorflow "
        "(tf.data output tensors kept), tensorflow-system-allocator (the same with "
        "TF_ONEDNN_USE_SYSTEM_ALLOCATOR=1), or a design of the shape library (python-bytearray, "
        "python-rare4, tensorflow-cache6, ...: docs/calibration.md; an unknown name lists them "
        "all). Groups: shapes (every design but tensorflow-system-allocator), python-shapes, "
        "tensorflow-shapes."
    ),
)
@click.option(
    "--cap",
    default=format_bytes(FIXED_CAP_BYTES, whole=True).replace(" ", ""),
    show_default=True,
    metavar="SIZE",
    help="Memory cap per child.",
)
@click.option(
    "--timeout",
    type=float,
    default=Settings.timeout_seconds,
    show_default=True,
    help="Seconds an engine child run may go without progress (per step, as for run); "
    f"a peer's child (--peers) gets them for its whole run (at least {MIN_SECONDS:g}).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="The result as JSON in FILE (.json), which --resume reads; the table goes beside it "
    "(.md). Default: results/calibration/<machine>-tf-<version>.json.",
)
@click.option(
    "--machine",
    default=None,
    metavar="NAME",
    help=(
        "Machine name for the default --out and the suite "
        "records. Default: asv's machine name, as the records use."
    ),
)
@click.option(
    "--resume/--fresh",
    default=True,
    show_default=True,
    help="Keep the runs already in --out (same settings) and measure only the missing ones.",
)
@click.option(
    "--suite-records",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help=(
        "Records of the default suite (a records file, or leakbench run --format json --out "
        "FILE) to report its wall time against its floor. "
        "Default: results/records/<machine>/tf-<version>.jsonl if there is one."
    ),
)
@click.option(
    "--peers",
    "peer_names",
    default="",
    metavar="NAMES",
    help="Also run these peers on the same cases: memory_checker (TensorFlow's MemoryChecker), "
    "limit_leaks (pytest-memray). asv's peakmem_ is always read from leakbench's own runs.",
)
@click.option(
    "--peer-runs",
    type=click.IntRange(0, 1000),
    default=None,
    help="Runs per case for each peer. Default: --runs.",
)
@CPU_HOG_OPTION
def calibrate_command(
    runs,
    sizes,
    holders,
    cap,
    timeout,
    out,
    machine,
    resume,
    suite_records,
    peer_names,
    peer_runs,
    cpu_hog,
) -> None:
    """Measure designed leaks of known size, to calibrate verdicts.

    Each design and size (0: the control) --runs times, at the engine's default settings, one
    fresh process at a time: detection rate, bias and CV per size and signal. The result is
    always filed: JSON in --out, the markdown table beside it (.md), the table on stdout too.
    """

    from leakbench.calibrate import calibration as calibrate
    from leakbench.repeat import hog

    size_list, settings, holder_list, peer_list = _checked(sizes, cap, timeout, holders, peer_names)
    results = results_dir(None, writes=True)
    machine = machine_of(results, machine)
    out, suite_records = _files(results, machine, out, suite_records, holder_list)
    try:
        with hog.cpu_hog(cpu_hog):
            result = calibrate.calibrate(
                holder_list,
                size_list,
                runs,
                settings,
                out,
                resume=resume,
                on_run=_progress,
                machine=machine,
                peer_names=peer_list,
                peer_runs=runs if peer_runs is None else peer_runs,
                cpu_hog=cpu_hog,
            )
    except calibrate.CalibrateError as e:
        fail(str(e))
    result = calibrate.add_context(result, out, settings, suite_records, results / "records")
    table = calibration_view.markdown(result)
    jsonfile.write_text_atomic(out.with_suffix(".md"), table)
    click.echo(table)
    say(f"leakbench: calibration written to {out} and {out.with_suffix('.md')}")


def _checked(
    sizes: str, cap: str, timeout: float, holders: str, peer_names: str
) -> tuple[list[int], Settings, list[str], tuple[str, ...]]:
    """The options read: (--sizes in bytes per repetition, the Settings of --cap and --timeout,
    --holders' design names, --peers' names). A bad one ends here (one line, exit 2), every
    option checked before what the machine lacks (pytest-memray, TensorFlow)."""
    from leakbench.calibrate import peers, shape_library

    try:
        size_list = _sizes(sizes)
    except ValueError as e:
        fail(f"--sizes: {e}")
    try:
        cap_bytes = parse_size(cap)
    except ValueError as e:
        fail(f"--cap: {e}")
    settings = settings_or_fail(cap_bytes=cap_bytes, timeout_seconds=timeout)
    try:
        holder_list = shape_library.resolve([h.strip() for h in holders.split(",") if h.strip()])
    except ValueError as e:
        fail(f"--holders: {e}")
    # every option is checked before what the machine lacks (TensorFlow)
    peer_list = tuple(p.strip() for p in peer_names.split(",") if p.strip())
    unknown = [p for p in peer_list if p not in peers.PEERS]
    if unknown:
        fail(f"--peers: unknown {', '.join(unknown)} (known: {', '.join(peers.PEERS)})")
    if "limit_leaks" in peer_list and importlib.util.find_spec("pytest_memray") is None:
        fail(
            "--peers limit_leaks needs pytest-memray (pip install pytest-memray, or the test extra)"
        )
    if (
        any(shape_library.DESIGNS[h].holder == "tensorflow" for h in holder_list)
        and importlib.util.find_spec("tensorflow") is None
    ):
        fail(
            f"TensorFlow is not installed for {sys.executable}; "
            "use --holders python (or python-shapes) or pip install 'leakbench[tf]'"
        )
    return size_list, settings, holder_list, peer_list


def _files(
    results: Path, machine: str, out: Path | None, suite_records: Path | None, holders: list[str]
) -> tuple[Path, Path | None]:
    """(--out, --suite-records), checked before anything is measured (a refusal ends here, one
    line, exit 2): --out a writable .json name (default: calibration.default_out), its .md
    beside it; --suite-records a regular file (default: the machine's records of the installed
    TensorFlow, where there are some, else None); neither one of the files the run reads."""
    from leakbench.calibrate import calibration, shape_library

    default = out is None
    out = out or calibration.default_out(results, machine)
    if out.suffix != ".json" or out.is_dir():
        fail(f"--out: {out} is not a .json file name (the table goes beside it as .md)")
    writable("--out", out, create_folder=default)
    writable("--out's table", out.with_suffix(".md"))
    # read after the measuring: refused now
    if suite_records is not None and jsonfile.special(suite_records):
        fail(
            f"--suite-records: {suite_records} is "
            f"{jsonfile.special(suite_records)}, not a regular file"
        )
    if suite_records is None:
        found = records_path(results, machine, calibration.tensorflow_version() or "none")
        suite_records = found if found.is_file() else None
    # --out itself is resumed on purpose
    apart(
        [("--out", out), ("--out's table", out.with_suffix(".md"))],
        [
            ("--suite-records", suite_records),
            *(
                ("a records file it reads", p)
                for p in sorted((results / "records").glob("*/tf-*.jsonl"))
            ),
            *(("a design's scenario file", shape_library.DESIGNS[h].path) for h in holders),
        ],
    )
    return out, suite_records


def _progress(i: int, total: int, case, run: int, seen: dict) -> None:
    """One line per run: the i-th of `total`, its case (holder, bytes per repetition) and run,
    and what it read (the engine's verdict and slopes in bytes per repetition, or a peer's)."""
    from leakbench.calibrate.calibration import SIGNALS

    if "peer" in seen:
        say(
            f"[{i}/{total}] {case.holder} {case.bytes_per_rep} B/rep run {run}: {seen['peer']} "
            f"{seen['status']} leak={seen['leak']} in {seen['wall_seconds']:.1f} s"
        )
        return
    slopes = ", ".join(f"{name} {seen[f'{name}_slope'] or 0:,.0f}" for name in SIGNALS)
    say(
        f"[{i}/{total}] {case.holder} {case.bytes_per_rep} B/rep run {run}: {seen['verdict']} "
        f"({slopes} B/rep) in {seen['wall_seconds']:.1f} s"
    )
