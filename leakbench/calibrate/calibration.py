"""Calibration: how well the engine sees designed leaks of known size: what one run measures
(its loop over runs is leakbench.history.rounds).

Designed cases: a design of DESIGNS (leakbench.calibrate.shape_library; its file
in leakbench/calibrate/designs/) at a size, `bytes_per_rep`. The steady ones keep
exactly that much per repetition (`python`: a bytearray in a list; `tensorflow`: the tensor a
one-element tf.data pipeline yields); the shape library around them keeps it
in lumps, in a block that moves, in rare steps (designed leaks), or grows and
stops or falls back (bounded caches, a sawtooth, a one-off jump: controls,
which should read expectation.NO_LEAK at every size). `bytes_per_rep = 0` is
every design's control (same work, nothing kept). Each case is measured
`runs` times, each time in a fresh, capped, timed child at the engine's
settings (leakbench.settings), one child at a time. Runs go round-robin
(run 1 of every case, then run 2, ...) so that a spell of load on the machine
spreads over all cases instead of one. Peers (leakbench.calibrate.peers) run
on the same cases after the engine, each in its own capped, timed process.

Kept per engine run (`observe`): the case (its design's name under "holder", as
results made before the shape library have it; its shape and whether it leaks),
run number, verdict, signals,
phase, the last line of an error, wall seconds, the child's seconds per phase,
its peak RSS (VmHWM, bytes) and max RSS, the TensorFlow it imported, and per
signal of stats.SIGNALS (held memory, RSS, memray's heap; thresholds from
leakbench.metrics) its slope (bytes/repetition), p, whether it moved (for a
deciding signal, as the record's decision says: `_moved`), its reach and
whether it rose by the trend alone (stats.reach, stats.trend_only);
and held memory's trend over a confirmation's later half, where one was run.

The result JSON (format FORMAT): format, machine, tensorflow (the installed
version), settings (the engine's, resolved), environment, observations, peers;
what `_finish` computes from them (summary, peer_summary:
leakbench.calibrate.stats; cost: leakbench.calibrate.cost; targets:
leakbench.calibrate.targets) and what `add_context` adds from records on disk
(suite_cost, committed_fixes, noise_floor: leakbench.calibrate.committed). It
is replaced atomically after every run, so an interrupted calibration keeps
what it measured, and a later call (resume, the default) measures only the
missing (holder, bytes_per_rep, run). A file made with other settings
(machine, installed TensorFlow, engine settings), corrupt, or not a
calibration result is never overwritten: CalibrateError, one line;
resume=False (--fresh) replaces it. The tables are
leakbench.reporters.calibration's; how to read them is docs/calibration.md.
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from leakbench import metrics as registry
from leakbench.analysis import estimate
from leakbench.analysis.judge import decision, looks, verdict
from leakbench.analysis.record_type import Record
from leakbench.analysis.schema import first_run
from leakbench.calibrate import committed, cost, peers, stats, targets
from leakbench.calibrate.shape_library import DESIGNS, params_for
from leakbench.calibrate.stats import SIGNALS  # the CLI's progress line names them too
from leakbench.catalog import Target
from leakbench.contract import read_metadata
from leakbench.history import pin, rounds
from leakbench.jsonfile import write_atomic
from leakbench.measure import measure
from leakbench.settings import Settings

FORMAT = 2  # 2: the installed TensorFlow kept at the top; committed_fixes counts false_alarms


class CalibrateError(ValueError):
    """An output file that cannot be resumed (other settings,
    not a calibration result, corrupt). One line."""


@dataclass(frozen=True)
class Case:
    holder: str  # a design's name: key of DESIGNS
    bytes_per_rep: int  # true bytes kept per repetition (0: the control)


Cell = tuple[Case, str | None]  # a case measured by the engine (None) or by a peer (its name)


def observe(rec: Record, case: Case, run: int) -> dict:
    """What calibration keeps of one record
    (leakbench.analysis.record): see the module docstring."""
    m = rec["metrics"] or {}
    first = first_run(rec)
    design = DESIGNS[case.holder]
    seen = {
        "holder": case.holder,
        "shape": design.shape,
        "leaks": design.leaks,
        "bytes_per_rep": case.bytes_per_rep,
        "run": run,
        "verdict": rec["verdict"],
        "signals": rec["signals"],
        "phase": rec["phase"],
        "error": rec["error"] and rec["error"].strip().splitlines()[-1],
        "wall_seconds": rec["seconds"],
        "seconds": first.get("seconds") or {},
        "peak_rss_bytes": first.get("high_water_mark_bytes"),
        "max_rss_bytes": first.get("max_rss_bytes"),
        "tensorflow": rec["environment"]["tensorflow"],
        "heap_source": (first.get("heap") or {}).get("heap_source"),
    }
    rows = {row["signal"]: row for row in decision.of(rec)["signals"]}
    for name, metric in SIGNALS.items():
        trend = m.get(metric.key)
        seen[f"{name}_slope"] = trend and trend["slope"]
        seen[f"{name}_p"] = trend and trend["p_increasing"]
        seen[f"{name}_moved"] = _moved(rec, rows.get(name), name, trend)
        seen[f"{name}_trend"] = trend  # slope, interval, p, halves: everything the verdict read
        seen[f"{name}_reach"] = stats.reach(trend)
        seen[f"{name}_trend_only"] = stats.trend_only(trend)
    # held memory over the confirmation's later half, the series looks.confirm read (median
    # rise and the share of its largest rises included: verdict.steady)
    confirmation = rec.get("confirmation")
    held = registry.HELD.series
    assert held is not None  # held memory is the trend of a sample series
    later = confirmation and confirmation["run"]["series"].get(held)
    found = later and estimate.trend(looks.later_half(later))
    seen["confirmation_held_trend"] = found.as_dict() if found else None
    return seen


def _moved(rec: Record, row: dict | None, name: str, trend: dict | None) -> bool:
    """Whether signal `name` (a key of SIGNALS; trend: its first run's) moved in the record's
    first run, and for a deciding signal of a record measured again (analysis.judge.looks),
    whether the looks kept it: the record's final signals (a leak an extension kept on malloc's
    lows did not grow steadily in the confirmation's later half, yet it is caught).

    A deciding signal's move is the record's decision's (its row per signal with a trend: the
    rate against its bar, and the trend test; row: the signal's, None without one). The decision
    holds no row for a signal that does not decide (RSS beside held memory): that one is read
    here at its own (fallback) bar, as it is for a signal without a trend (False)."""
    if row is not None:
        again = rec["signals"] if rec.get("confirmation") else None
        return bool(row["moved"]) and (again is None or name in again)
    threshold = SIGNALS[name].threshold
    assert threshold is not None  # SIGNALS decide, or stand in for held memory: each has a bar
    return verdict.moved(trend, threshold)


def tensorflow_version() -> str | None:
    """The installed TensorFlow's version (leakbench.history.pin),
    read without importing it; None if none."""
    return pin.installed_tf_version()


def default_out(results: Path, machine: str) -> Path:
    """results/calibration/<machine>-tf-<installed version, or "none">.json"""
    return Path(results) / "calibration" / f"{machine}-tf-{tensorflow_version() or 'none'}.json"


def calibrate(
    holders: list[str],
    sizes: list[int],
    runs: int,
    settings: Settings,
    out: Path,
    resume: bool = True,
    on_run: Callable[[int, int, Case, int, dict], None] | None = None,
    machine: str | None = None,
    peer_names: tuple = (),
    peer_runs: int = 0,
    cpu_hog: int = 0,
) -> dict:
    """Measure every run (1 … runs) of every case not yet in `out`, round-robin
    (leakbench.history.rounds), writing `out` after each; return the result.

    holders: design names (keys of shape_library.DESIGNS; shape_library.resolve reads group
    words); sizes: bytes kept per repetition (0: the control); the cases are every design at
    every size, in that order.
    settings: the engine's (defaults except cap and timeout, for calibration at default settings).
    resume: keep the observations already in `out`; False measures anew and replaces it. machine:
    default platform.node(). peer_names: peers (peers.PEERS) to run on the same case after the
    engine, in runs 1 … peer_runs; their results go to result["peers"]. on_run(i, total, case,
    run, seen) after each run (seen: an observation, or a peer's result with "peer").

    Raises CalibrateError before measuring anything if `out` cannot be resumed (see the module
    docstring); `out` is then left as it was.
    """
    settings = settings.resolved()
    made = {
        "machine": machine or platform.node(),
        "tensorflow": tensorflow_version(),
        "settings": settings.stored(),
        # busy processes the caller runs beside (leakbench.repeat.hog); kept only where some are,
        # so that a file made without them resumes as before
        **({"cpu_hog": cpu_hog} if cpu_hog else {}),
    }
    result = rounds.open_result(
        out, made, FORMAT, "calibrate", "a calibration result", CalibrateError, resume
    )
    result.setdefault("peers", [])
    cases = [Case(h, s) for h in holders for s in sizes]
    # a cell: (case, None) for the engine, (case, peer) for a peer; each run, the engine first
    cells: list[tuple[Cell, int]] = [((case, None), runs) for case in cases]
    cells += [((case, peer), peer_runs) for case in cases for peer in peer_names]

    def told(i: int, total: int, run: int, cell: Cell, seen: dict) -> None:
        if on_run:
            on_run(i, total, cell[0], run, seen)

    return rounds.measure_rounds(
        out,
        result,
        cells,
        key=_key,
        done=_done,
        run_one=lambda run, cell: _run_one(cell, settings),
        keep=lambda run, cell, found: _keep(result, run, cell, found),
        finish=lambda result: _finish(result, settings),
        on_run=told,
    )


def _done(result: dict) -> set[tuple]:
    """The keys (_key) of the runs `result` holds: its observations' and its peers' results'."""
    engine = {(o["holder"], o["bytes_per_rep"], o["run"]) for o in result["observations"]}
    return engine | {
        (p["peer"], p["holder"], p["bytes_per_rep"], p["run"]) for p in result["peers"]
    }


def _key(run: int, cell: Cell) -> tuple:
    """A run's key: (holder, bytes_per_rep, run) for the engine; a peer's name, then those."""
    case, peer = cell
    engine = (case.holder, case.bytes_per_rep, run)  # as observations and peers keep them
    return (peer, *engine) if peer else engine


def _run_one(cell: Cell, settings: Settings) -> Record | dict:
    """One run of a cell at `settings` (resolved): the engine's record (measure), or the peer's
    result (peers.run_peer, at the same warm-up, repetitions, cap and timeout)."""
    case, peer = cell
    design = DESIGNS[case.holder]
    scenario = read_metadata(design.path)
    params = params_for(design, case.bytes_per_rep)
    if peer:
        return peers.run_peer(
            peer,
            scenario.path,
            params,
            warmup=settings.warmup,
            reps=settings.reps,
            cap_bytes=settings.cap_bytes,
            timeout_seconds=settings.timeout_seconds,
        )
    return measure(Target(scenario, "file"), params, settings)


def _keep(result: dict, run: int, cell: Cell, found: Any) -> dict:
    """Add one run to `result` (an engine record as its observation, a peer's result with its
    case and run) and return what was added; the installed TensorFlow a record names is kept."""
    case, peer = cell
    if peer:
        found.update(holder=case.holder, bytes_per_rep=case.bytes_per_rep, run=run)
        result["peers"].append(found)
        return found
    seen = observe(found, case, run)
    result["observations"].append(seen)
    if seen["tensorflow"]:
        result["environment"]["tensorflow"] = seen["tensorflow"]
    return seen


def add_context(
    result: dict,
    out: Path,
    settings: Settings,
    suite_records: Path | None,
    records_dir: Path | None,
) -> dict:
    """Add what records on disk say (leakbench.calibrate.committed),
    recompute the targets, write `out`.

    suite_records: a `leakbench run --format json --out` file for the suite's cost (None: none).
    records_dir: the committed records (results/records), walked once for the fixes' verdicts
    (where it is a directory) and for the noise floor. Returns `result`, updated in place.
    """
    fixes, unreadable = committed.fixed_records(records_dir)
    if records_dir is not None and records_dir.is_dir():
        result["committed_fixes"] = committed.committed_fix_verdicts(fixes, unreadable)
    result["noise_floor"] = committed.noise_floor(result["observations"], fixes)
    _finish(result, settings.resolved(), suite_records)
    write_atomic(out, result)
    return result


def _finish(result: dict, settings: Settings, suite_records: Path | None = None) -> dict:
    result["summary"] = stats.summarize(result["observations"])
    result["peer_summary"] = stats.summarize_peers(result.get("peers", []))
    result["cost"] = cost.cost(result["observations"], settings)
    if suite_records is not None:
        result["suite_cost"] = committed.suite_cost(suite_records)
    result["targets"] = targets.targets(result["summary"], result["cost"], result.get("suite_cost"))
    return result
