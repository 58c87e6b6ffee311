"""Command line: `leakbench list` and `leakbench run`.

Exit codes: 0 every verdict as expected (scenarios leak, fixes do not);
1 some verdict was not; 2 bad input (one line on stderr, nothing run).
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from pathlib import Path

import click
from rich.console import Console

from leakbench import catalog
from leakbench.reporters import table as report
from leakbench.analysis import verdict
from leakbench.history import store as versions
from leakbench.contract import ContractError
from leakbench.engine.measure import Settings, measure
from leakbench.units import GIB, KIB, MIB

# Off a terminal (CI logs, pipes) rich would wrap the table at 80 columns.
out = Console(width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True)
_UNITS = {"": 1, "b": 1, "k": KIB, "kb": KIB, "kib": KIB, "m": MIB, "mb": MIB, "mib": MIB,
          "g": GIB, "gb": GIB, "gib": GIB}


def parse_size(text: str) -> int:
    """'4GiB', '512M', '3000000' -> bytes. Raises click.BadParameter otherwise."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text or "")
    if not match or match.group(2).lower() not in _UNITS or float(match.group(1)) <= 0:
        raise click.BadParameter(f"{text!r} is not a size such as 4GiB or 512MiB")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def _fail(message: str) -> None:
    # markup=False: messages hold paths and "leakbench[tf]", which rich would read as style tags
    err.print(f"leakbench: error: {message}", highlight=False, markup=False, soft_wrap=True)
    sys.exit(2)


class _OneLineErrors(click.Group):
    """Click's usage errors (bad choice, unknown option) as one line and exit 2, like ours."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as e:  # bare `leakbench`: the help, as usual
            click.echo(e.format_message())
            sys.exit(2)
        except click.ClickException as e:
            _fail(e.format_message().replace("\n", " "))
        except click.Abort:
            sys.exit(130)


@click.group(cls=_OneLineErrors)
def main() -> None:
    """Reproducible, measured memory leaks in tf.data pipelines."""


@main.command("list")
def list_pairs() -> None:
    """List the scenario pairs: name, kind, seed source, size parameter, title."""
    try:
        targets = catalog.targets(catalog.find_root(), [], "leaky")
    except ContractError as e:
        _fail(str(e))
    out.print(report.listing([t.scenario for t in targets]))


# Mann–Kendall's smallest one-sided p for n points is 1/n!, below TREND_P_MAX
# (0.01) only from n = 5: with fewer repetitions no growth could ever be a leak.
MIN_SERIES = 5


def _measurement_options(command):
    """The options `run` and `check` share: repetitions, memory cap, timeouts."""
    options = [
        click.option("--reps", type=click.IntRange(MIN_SERIES, 10_000), default=Settings.reps,
                     show_default=True, help="Measured repetitions per child run."),
        click.option("--warmup", type=click.IntRange(0, 10_000), default=Settings.warmup, show_default=True),
        click.option("--heap-reps", type=click.IntRange(0, 10_000), default=Settings.heap_reps, show_default=True,
                     help=f"Repetitions of the memray heap pass (0: skip it; else at least {MIN_SERIES})."),
        click.option("--cap", "cap", default=None, metavar="SIZE",
                     help="Memory cap per child (RSS of its process tree), e.g. 4GiB. Default: half of RAM, or less where little is available or a cgroup limits memory."),
        click.option("--timeout", type=click.FloatRange(1, None), default=Settings.timeout_seconds,
                     show_default=True, help="Seconds per child run, import to teardown."),
        click.option("--teardown-timeout", type=click.FloatRange(1, None),
                     default=Settings.teardown_timeout_seconds, show_default=True,
                     help="Seconds a child may take to tear down once its measurement is in."),
        click.option("--flamegraph-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                     metavar="DIR", help="Also write memray's flame graph of the allocations the heap pass "
                                         "retained (memray flamegraph --leaks) to DIR/<pair>-<variant>.html."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _settings(reps, warmup, heap_reps, cap, timeout, teardown_timeout, flamegraph_dir, **more) -> Settings:
    """Settings from the shared options; bad values end here with one line, exit 2."""
    try:
        cap_bytes = parse_size(cap) if cap is not None else 0  # "" is bad input, not the default
    except click.BadParameter as e:
        _fail(f"--cap: {e.message}")
    if 0 < heap_reps < MIN_SERIES:
        _fail(f"--heap-reps: {heap_reps} is too few for a heap trend; use 0 to skip the pass, or >= {MIN_SERIES}")
    if flamegraph_dir is not None:
        if heap_reps == 0:
            _fail("--flamegraph-dir: the flame graph is drawn from the heap pass; --heap-reps 0 skips it")
        try:
            flamegraph_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            _fail(f"--flamegraph-dir: {e}")
    return Settings(warmup=warmup, reps=reps, heap_reps=heap_reps, cap_bytes=cap_bytes, timeout_seconds=timeout,
                    teardown_timeout_seconds=teardown_timeout,
                    flamegraph_dir=str(flamegraph_dir) if flamegraph_dir is not None else None, **more)


@main.command()
@click.argument("names", nargs=-1)
@click.option("--variant", type=click.Choice(["leaky", "fixed", "both"]), default="both", show_default=True)
@_measurement_options
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="Override a scenario parameter.")
@click.option("--scales", default="1,4", show_default=True,
              help="Multiples of the size parameter for peak scenarios.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Append one JSON record per line to this file.")
def run(names, variant, reps, warmup, heap_reps, cap, timeout, teardown_timeout, flamegraph_dir, params, scales,
        json_path) -> None:
    """Measure scenario pairs (all by default), each run in a capped, timed subprocess.

    NAMES are pair names from `leakbench list` or paths to scenario files.
    """
    try:
        scale_list = tuple(float(s) for s in scales.split(","))
        if not scale_list or min(scale_list) <= 0:
            raise ValueError
    except ValueError:
        _fail(f"--scales: {scales!r} is not a comma-separated list of positive numbers")
    settings = _settings(reps, warmup, heap_reps, cap, timeout, teardown_timeout, flamegraph_dir, scales=scale_list)
    overrides = {}
    for item in params:
        key, sep, value = item.partition("=")
        if not sep or not key:
            _fail(f"--param {item!r} is not NAME=VALUE")
        overrides[key] = value
    try:
        targets = catalog.targets(catalog.find_root(), list(names), variant)
        plans = [(t, t.scenario.with_params({k: v for k, v in overrides.items() if k in t.scenario.params}))
                 for t in targets]
    except ContractError as e:
        _fail(str(e))
    unused = set(overrides) - {k for t in targets for k in t.scenario.params}
    if unused:
        _fail(f"--param {', '.join(sorted(unused))}: no selected scenario has such a parameter")
    if importlib.util.find_spec("tensorflow") is None and any(
            "tensorflow" in t.scenario.path.read_text() for t in targets):
        _fail(f"TensorFlow is not installed for {sys.executable}; install it, e.g. pip install 'leakbench[tf]'")
    if json_path and json_path.parent and not json_path.parent.exists():
        _fail(f"--json: directory {json_path.parent} does not exist")

    results = []
    with err.status("starting") as status:
        for i, (target, run_params) in enumerate(plans, 1):
            label = f"[{i}/{len(plans)}] {target.scenario.name} ({target.variant})"
            rec = measure(target, run_params, settings, on_message=_progress(status, label, reps))
            results.append((rec, target.expected))
            if json_path:
                _append(json_path, rec)
            note = _flamegraph_note(rec, flamegraph_dir)
            err.print(f"{label}: {rec['verdict']} in {rec['seconds']:.1f} s{'; ' + note if note else ''}",
                      highlight=False, markup=False, soft_wrap=True)
    out.print(report.table(results))
    for rec, _ in results:
        if rec["error"]:
            first = rec["error"].strip().splitlines()[-1]
            err.print(f"{rec['pair']} ({rec['variant']}): {rec['verdict']} in {rec['phase']}: {first}",
                      highlight=False, markup=False, soft_wrap=True)
        elif rec.get("skip_reason"):  # REQUIRES a GPU TensorFlow does not see: not a failure
            err.print(f"{rec['pair']} ({rec['variant']}): skipped: {rec['skip_reason']}",
                      highlight=False, markup=False, soft_wrap=True)
    sys.exit(0 if all(report.expected_ok(r, e) for r, e in results) else 1)


def _flamegraph_note(rec: dict, folder: Path | None) -> str:
    found = rec.get("flamegraph") or {}
    if "file" in found:
        return f"flame graph {folder / found['file']}"
    return f"no flame graph: {found['error']}" if "error" in found else ""


def _progress(status, label: str, reps: int):
    def show(message: dict) -> None:
        if "phase" in message:
            status.update(f"{label}: {message['phase']}")
        elif "sample" in message:
            status.update(f"{label}: repetition {message['rep'] + 1}/{reps}")
    return show


def _append(path: Path, rec: dict) -> None:
    """One record per line, flushed to disk, so records written before a crash stay valid."""
    with open(path, "a") as f:
        f.write(json.dumps(rec) + "\n")
        f.flush()
        os.fsync(f.fileno())


# --- TensorFlow versions: `compare` and `matrix` (logic in leakbench.history.store) ---

def _results_dir(results: Path | None) -> Path:
    """--results, else ./results, else results/ of the leakbench checkout."""
    if results is not None or Path("results").is_dir():
        return results or Path("results")
    try:
        return catalog.find_root() / "results"
    except ContractError:
        return Path("results")


_RESULTS_OPTION = click.option(
    "--results", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="asv results directory holding records/<machine>/tf-<version>.jsonl. Default: ./results.")
_MACHINE_OPTION = click.option(
    "--machine", default=None, metavar="NAME",
    help="asv machine whose records to read. Default: the only one in the results.")
_FORMAT_OPTION = click.option("--format", "fmt", type=click.Choice(["markdown", "json"]),
                              default="markdown", show_default=True)


@main.command()
@click.argument("old")
@click.argument("new")
@click.option("--factor", type=float, default=versions.DEFAULT_FACTOR, show_default=True,
              help="Mark a metric regressed or improved past this ratio.")
@_RESULTS_OPTION
@_MACHINE_OPTION
@_FORMAT_OPTION
def compare(old, new, factor, results, machine, fmt) -> None:
    """Compare two TensorFlow versions' records: per pair, variant and metric.

    OLD and NEW are TF versions in the results (2.13.1) or records files (.jsonl).
    Exit 1 when a verdict changed (a fix that leaks again among them) or a
    fixed variant's peak regressed past the factor; 2 on bad input.
    """
    try:
        where = _results_dir(results)
        from_files = all(w.endswith(".jsonl") or Path(w).is_file() for w in (old, new))
        if not from_files:
            machine = versions.pick_machine(where, machine)
        old_label, old_recs = versions.resolve(where, old, machine)
        new_label, new_recs = versions.resolve(where, new, machine)
        found = versions.compare(old_label, old_recs, new_label, new_recs, factor,
                                 machine=None if from_files else machine)
    except versions.VersionError as e:
        _fail(str(e))
    click.echo(json.dumps(found.as_dict(), indent=2) if fmt == "json" else versions.compare_markdown(found))
    sys.exit(found.exit_code)


@main.command()
@_RESULTS_OPTION
@_MACHINE_OPTION
@_FORMAT_OPTION
def matrix(results, machine, fmt) -> None:
    """The pair × TensorFlow version table of verdicts (and growth) from the results."""
    try:
        found = versions.matrix(_results_dir(results), machine)
    except versions.VersionError as e:
        _fail(str(e))
    click.echo(json.dumps(found, indent=2) if fmt == "json" else versions.matrix_markdown(found))


# --- leakbench check: a pipeline of your own (logic in leakbench.check.run) ---

def check_exit_code(rec: dict) -> int:
    """0 no-leak or fragmentation (RSS that malloc_trim gives back: nothing is held), or skipped
    (a scenario file that REQUIRES a GPU TensorFlow does not see: nothing wrong); 2 error or
    hang (nothing measured to judge); 1 otherwise (leak, over-cap, or a hang in teardown after
    the signals moved: freeing what leaked stalled)."""
    if rec["verdict"] in ("no-leak", "fragmentation", "skipped"):
        return 0
    if rec["verdict"] in ("error", "hang") and not verdict.stalled_after_leak(rec):
        return 2
    return 1


@main.command("check")
@click.argument("target")
@_measurement_options
@click.option("--json", "as_json", is_flag=True, help="Print the record as JSON on stdout instead of tables.")
def check_command(target, reps, warmup, heap_reps, cap, timeout, teardown_timeout, flamegraph_dir,
                  as_json) -> None:
    """Check a pipeline of your own for leaks, and say where the memory is.

    TARGET is FILE.py:NAME or module:NAME, where NAME is a function returning a
    tf.data.Dataset (iterated to its end once per repetition) or a zero-argument
    function doing one repetition of work; or a scenario FILE.py, measured as
    `run` measures it. Exit 0 no-leak (or fragmentation), 1 leak (or
    over-cap), 2 bad target, error or hang.
    """
    from leakbench.check import run as check

    settings = _settings(reps, warmup, heap_reps, cap, timeout, teardown_timeout, flamegraph_dir)
    try:
        check.plan(target)
    except ContractError as e:
        _fail(str(e))
    with err.status("starting") as status:
        rec = check.check(target, settings, on_message=_progress(status, target, reps))
    if as_json:
        click.echo(json.dumps(rec))
    else:
        for part in report.check_view(rec):
            out.print(part, highlight=False)
    if rec.get("flamegraph"):
        err.print(f"leakbench: {_flamegraph_note(rec, flamegraph_dir)}", highlight=False, markup=False,
                  soft_wrap=True)
    if rec["verdict"] == "skipped":
        err.print(f"leakbench: skipped: {rec['skip_reason']}", highlight=False, markup=False, soft_wrap=True)
    if rec["verdict"] in ("error", "hang"):
        where = f" in {rec['phase']}" if rec.get("phase") else ""
        reason = (rec.get("error") or "").strip().splitlines()
        why = reason[-1] if reason else f"no end within {timeout:g} s (--timeout)"
        err.print(f"leakbench: {rec['verdict']}{where}: {why}",
                  highlight=False, markup=False, soft_wrap=True)
    sys.exit(check_exit_code(rec))


# --- leakbench site: the static site (logic in leakbench.site.build) ---

@main.command("site")
@_RESULTS_OPTION
@_MACHINE_OPTION
@click.option("--out", type=click.Path(path_type=Path), default=Path("site"), show_default=True,
              help="Folder to write the site into.")
@click.option("--asv/--no-asv", default=True, show_default=True,
              help="Also run `asv publish` of the same results into OUT/asv.")
def site_command(results, machine, out, asv) -> None:
    """Build the static site: the leak matrix and one lesson per pair, from the results."""
    from leakbench.site import build as site

    try:
        built = site.build(_results_dir(results), out, asv=asv, machine=machine)
    except (versions.VersionError, site.SiteError) as e:
        _fail(str(e))
    for rel, size in built.pages:
        click.echo(f"{out / rel}  {size / KIB:,.1f} KiB")
    for note in built.notes:
        click.echo(f"note: {note}")
    click.echo(f"{len(built.pages)} files{' and asv/' if built.asv else ''} in {built.seconds:.1f} s: "
               f"open {out / 'index.html'}")


# --- leakbench calibrate: designed leaks of known size (logic in leakbench.calibrate.run) ---

def _sizes(text: str) -> list[int]:
    """'0,1KiB,64KiB' -> bytes; 0 is the control."""
    found = []
    for item in text.split(","):
        item = item.strip()
        found.append(0 if item == "0" else parse_size(item))
    return found


@main.command("calibrate")
@click.option("--runs", type=click.IntRange(1, 1000), default=10, show_default=True,
              help="Measurements per case, each in a fresh process.")
@click.option("--sizes", default="0,1KiB,16KiB,64KiB,256KiB,1MiB,8MiB", show_default=True,
              help="Bytes kept per repetition, comma-separated; 0 is the control.")
@click.option("--holders", default="python,tensorflow", show_default=True,
              help="What holds the bytes: python (a list of bytearrays), tensorflow (tf.data output tensors), "
                   "tensorflow-system-allocator (the same with TF_ONEDNN_USE_SYSTEM_ALLOCATOR=1).")
@click.option("--cap", default="4GiB", show_default=True, metavar="SIZE", help="Memory cap per child.")
@click.option("--timeout", type=click.FloatRange(1, None), default=Settings.timeout_seconds, show_default=True,
              help="Seconds per child run, import to teardown.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Result JSON. Default: results/calibration/<machine>-tf-<version>.json.")
@click.option("--machine", default=None, metavar="NAME", help="Machine name for the default --out. Default: hostname.")
@click.option("--resume/--fresh", default=True, show_default=True,
              help="Keep the runs already in --out (same settings) and measure only the missing ones.")
@click.option("--suite-records", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Records of the default suite (leakbench run --json) to report its wall time against its floor. "
                   "Default: results/records/<machine>/tf-<version>.jsonl if there is one.")
@click.option("--peers", "peer_names", default="", metavar="NAMES",
              help="Also run these peers on the same cases: memory_checker (TensorFlow's MemoryChecker), "
                   "limit_leaks (pytest-memray). asv's peakmem_ is always read from leakbench's own runs.")
@click.option("--peer-runs", type=click.IntRange(0, 1000), default=None,
              help="Runs per case for each peer. Default: --runs.")
def calibrate_command(runs, sizes, holders, cap, timeout, out, machine, resume, suite_records, peer_names,
                      peer_runs) -> None:
    """Measure designed leaks of known size (0 = control) RUNS times each, at the engine's default
    settings, one fresh process at a time; print detection rate, bias and CV per size and signal."""
    import platform

    from leakbench.calibrate import run as calibrate

    try:
        size_list = _sizes(sizes)
        cap_bytes = parse_size(cap)
    except click.BadParameter as e:
        _fail(f"--sizes/--cap: {e.message}")
    holder_list = [h.strip() for h in holders.split(",") if h.strip()]
    unknown = [h for h in holder_list if h not in calibrate.HOLDERS]
    if unknown or not holder_list:
        _fail(f"--holders: unknown {', '.join(unknown) or 'none given'} (known: {', '.join(calibrate.HOLDERS)})")
    if any(h.startswith("tensorflow") for h in holder_list) and importlib.util.find_spec("tensorflow") is None:
        _fail(f"TensorFlow is not installed for {sys.executable}; use --holders python or pip install 'leakbench[tf]'")
    results = _results_dir(None)
    machine = machine or platform.node()
    out = out or calibrate.default_out(results, machine)
    if suite_records is None:
        candidates = sorted((results / "records").glob(f"*/tf-{calibrate.tensorflow_version()}.jsonl"))
        suite_records = candidates[0] if candidates else None
    settings = Settings(cap_bytes=cap_bytes, timeout_seconds=timeout)
    peer_list = tuple(p.strip() for p in peer_names.split(",") if p.strip())
    unknown = [p for p in peer_list if p not in calibrate.peers.PEERS]
    if unknown:
        _fail(f"--peers: unknown {', '.join(unknown)} (known: {', '.join(calibrate.peers.PEERS)})")
    if "limit_leaks" in peer_list and importlib.util.find_spec("pytest_memray") is None:
        _fail("--peers limit_leaks needs pytest-memray (pip install pytest-memray, or the test extra)")

    def progress(i, total, case, run, seen):
        if "peer" in seen:
            err.print(f"[{i}/{total}] {case.holder} {case.bytes_per_rep} B/rep run {run}: {seen['peer']} "
                      f"{seen['status']} leak={seen['leak']} in {seen['wall_seconds']:.1f} s",
                      highlight=False, markup=False, soft_wrap=True)
            return
        slopes = ", ".join(f"{name} {seen[f'{name}_slope'] or 0:,.0f}" for name in calibrate.SIGNALS)
        err.print(f"[{i}/{total}] {case.holder} {case.bytes_per_rep} B/rep run {run}: {seen['verdict']} "
                  f"({slopes} B/rep) "
                  f"in {seen['wall_seconds']:.1f} s", highlight=False, markup=False, soft_wrap=True)

    result = calibrate.calibrate(holder_list, size_list, runs, settings, out, resume=resume, on_run=progress,
                                 machine=machine, peer_names=peer_list,
                                 peer_runs=runs if peer_runs is None else peer_runs)
    result = calibrate.add_context(result, out, settings, suite_records, results / "records")
    table = calibrate.markdown(result)
    out.with_suffix(".md").write_text(table)
    click.echo(table)
    err.print(f"leakbench: calibration written to {out} and {out.with_suffix('.md')}", highlight=False,
              markup=False, soft_wrap=True)


# --- leakbench repeat: the repeatability table (logic in leakbench.repeat.run, view in leakbench.reporters.repeatability) ---

@main.command("repeat")
@click.argument("names", nargs=-1)
@click.option("--runs", type=click.IntRange(1, 1000), default=10, show_default=True,
              help="Runs per pair × variant, each a fresh child process.")
@click.option("--jobs", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Children measured at once (the default cap is divided between them).")
@click.option("--variant", type=click.Choice(["leaky", "fixed", "both"]), default="both", show_default=True)
@_measurement_options
@click.option("--scales", default="1,4", show_default=True,
              help="Multiples of the size parameter for peak scenarios.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Result JSON (the table goes beside it, .md). "
                   "Default: results/repeatability/<machine>-tf-<version>[-jobs<N>].json.")
@click.option("--machine", default=None, metavar="NAME",
              help="Machine name for the default --out. Default: asv's machine name, as the records use.")
@click.option("--resume/--fresh", default=True, show_default=True,
              help="Keep the runs already in --out (same settings) and measure only the missing ones; "
                   "--fresh measures anew and replaces it.")
def repeat_command(names, runs, jobs, variant, reps, warmup, heap_reps, cap, timeout, teardown_timeout,
                   flamegraph_dir, scales, out, machine, resume) -> None:
    """Measure pairs (all by default) RUNS times each, in independent runs, and write the
    repeatability table: verdict agreement and the spread of each decisive slope.
    Exit 0 once the table is written, 2 on bad input (nothing measured, nothing overwritten)."""
    from leakbench.repeat import run as repeat
    from leakbench.reporters import repeatability as repeat_report

    try:
        scale_list = tuple(float(s) for s in scales.split(","))
        if min(scale_list) <= 0:
            raise ValueError
    except ValueError:
        _fail(f"--scales: {scales!r} is not a comma-separated list of positive numbers")
    settings = _settings(reps, warmup, heap_reps, cap, timeout, teardown_timeout, flamegraph_dir, scales=scale_list)
    try:
        targets = catalog.targets(catalog.find_root(), list(names), variant)
    except ContractError as e:
        _fail(str(e))
    if importlib.util.find_spec("tensorflow") is None and any(
            "tensorflow" in t.scenario.path.read_text() for t in targets):
        _fail(f"TensorFlow is not installed for {sys.executable}; install it, e.g. pip install 'leakbench[tf]'")
    results = _results_dir(None)
    machine = machine or versions.asv_machine(results)
    out = out or repeat.default_out(results, machine, jobs)
    if out.suffix != ".json" or out.is_dir():
        _fail(f"--out: {out} is not a .json file name (the table goes beside it as .md)")

    def progress(i, total, seen):
        err.print(f"[{i}/{total}] {seen['pair']} ({seen['variant']}) run {seen['run']}: {seen['verdict']} "
                  f"in {seen['wall_seconds']:.1f} s", highlight=False, markup=False, soft_wrap=True)

    try:
        result = repeat.repeat(targets, runs, settings, out, jobs=jobs, resume=resume, machine=machine,
                               on_run=progress)
    except repeat.RepeatError as e:
        _fail(str(e))
    table = repeat_report.markdown(result)
    out.with_suffix(".md").write_text(table)
    click.echo(table)
    err.print(f"leakbench: repeatability written to {out} and {out.with_suffix('.md')}", highlight=False,
              markup=False, soft_wrap=True)
