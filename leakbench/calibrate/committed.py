"""What records on disk add to a calibration: the suite's cost against its floor,
and the committed fixes (results/records/<machine>/tf-<version>.jsonl), read once,
for their false alarms and for the noise floor.

Records are read with leakbench.history.store.read_records (which migrates older
record schemas); a file it cannot read is named with its one-line reason, never
skipped in silence. What a fix should read is the expectation model's
(leakbench.expectation): a fixed record is a false alarm where
`expectation.accepts` refuses it; one that reads `skipped` measured nothing and
counts for neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from leakbench import expectation, jsonfile
from leakbench.analysis.record_type import Record
from leakbench.calibrate.cost import TIMED
from leakbench.calibrate.stats import SIGNALS, reach
from leakbench.calibrate.targets import smallest_caught
from leakbench.history import store
from leakbench.units import format_bytes


def suite_cost(records_path: Path) -> dict | None:
    """The suite's wall time against its floor, from a records file (`leakbench run --format json
    --out`).

    Returns {records (the path), runs, wall_seconds, floor_seconds, wall_over_floor,
    heap_over_plain (None without a memray pass)}; None if the file is missing or holds no timed
    run; {records, error (one line)} if it cannot be read as records. The floor is as in
    cost.cost: import + setup + warm-up and measured repetitions at the warm-up's pace.
    """
    if not records_path.is_file():
        return None
    try:
        records = store.read_records(records_path)
    except store.VersionError as e:  # one line: unreadable, corrupt, not records, a newer schema
        return {"records": str(records_path), "error": str(e)}
    walls = floors = heap = plain = 0.0
    count = 0
    # types checked as read (store.read_records); keys of older or hand-made records may be missing
    for rec in records:
        kept = rec.get("settings") or {}
        warmup, reps, heap_reps = (kept.get(k) for k in ("warmup", "reps", "heap_reps"))
        for run in rec.get("runs") or []:
            s = run.get("seconds") or {}
            if (
                not warmup
                or not reps
                or "wall_seconds" not in run
                or not all(k in s for k in TIMED)
            ):
                continue  # no settings or no timed run: nothing to count
            count += 1
            walls += run["wall_seconds"]
            floors += s["import"] + s["setup"] + s["warm-up"] / warmup * (warmup + reps)
            if "heap" in s and heap_reps:  # the whole pass: memray's start, stop and read-back too
                heap += (
                    s["heap"] + s.get("heap_tracker", 0.0) + s.get("heap_analysis", 0.0)
                ) / heap_reps
                plain += s["repetitions"] / reps
    if not count:
        return None
    return {
        "records": str(records_path),
        "runs": count,
        "wall_seconds": walls,
        "floor_seconds": floors,
        "wall_over_floor": walls / floors,
        "heap_over_plain": heap / plain if plain else None,
    }


def committed_records(records_dir: Path | None) -> tuple[list[tuple[str, Record]], list[str]]:
    """The one walk of the committed records: ([(file label "<machine>/tf-<version>", record)] for
    every record, in file order), [one line per file that could not be read]). Both empty when
    records_dir is None or not a directory."""
    found: list[tuple[str, Record]] = []
    unreadable: list[str] = []
    if records_dir is None or not records_dir.is_dir():
        return found, unreadable
    for path in sorted(records_dir.glob("*/tf-*.jsonl")):
        label = f"{path.parent.name}/{path.stem}"
        try:
            records = store.read_records(path)
        except store.VersionError as e:
            # one line: unreadable, corrupt, not records, a newer schema
            unreadable.append(f"{label}: {e}")
            continue
        found += [(label, rec) for rec in records]
    return found, unreadable


def fixed_records(records_dir: Path | None) -> tuple[list[tuple[str, Record]], list[str]]:
    """committed_records' fixed variants, and the files it could not read."""
    found, unreadable = committed_records(records_dir)
    return [(label, rec) for label, rec in found if rec["variant"] == "fixed"], unreadable


def committed_fix_verdicts(fixes: list[tuple[str, Record]], unreadable: Sequence[str] = ()) -> dict:
    """The verdicts of the committed fixes (fixed_records' results).

    Returns {records (fixes that measured, i.e. did not read skipped), skipped, by_verdict
    (verdict -> count over the measured ones), false_alarms (how many expectation.accepts
    refuses), alarms (one line each: file, pair, verdict, signals), unreadable (files not read)}.
    """
    measured = [(label, rec) for label, rec in fixes if rec["verdict"] != "skipped"]
    by_verdict: dict[str, int] = {}
    for _, rec in measured:
        by_verdict[rec["verdict"]] = by_verdict.get(rec["verdict"], 0) + 1
    alarms = [
        f"{label}: {rec['pair']} {rec['verdict']} ({', '.join(rec.get('signals') or [])})"
        for label, rec in measured
        if not expectation.accepts(rec)
    ]
    return {
        "records": len(measured),
        "skipped": len(fixes) - len(measured),
        "by_verdict": by_verdict,
        "false_alarms": len(alarms),
        "alarms": alarms,
        "unreadable": list(unreadable),
    }


def noise_floor(observations: list[dict], fixes: list[tuple[str, Record]]) -> dict:
    """Per signal of SIGNALS: the smallest threshold (bytes/repetition) that keeps zero false
    alarms on the controls' runs and on the committed fixes that read as expected (the largest
    stats.reach among them; 0.0 if none moves).

    A fix that already reads an alarm is committed_fix_verdicts' to report: the floor is how low
    a threshold could go without turning a clean fix into one. Returns signal -> {threshold (the
    registry's), floor, set_by (the run or fix that sets it, None if none), fix_records (clean
    fixes with metrics)}.
    """
    clean = [
        (f"{rec['pair']} fixed, {label}", rec["metrics"])
        for label, rec in fixes
        if rec["verdict"] != "skipped" and rec["metrics"] and expectation.accepts(rec)
    ]
    out = {}
    for name, metric in SIGNALS.items():
        found = [
            (f"{o['holder']} control run {o['run']}", o[f"{name}_reach"])
            for o in observations
            if o["bytes_per_rep"] == 0 and o.get(f"{name}_reach") is not None
        ]
        found += [(label, r) for label, m in clean if (r := reach(m.get(metric.key))) is not None]
        worst = max(found, key=lambda f: f[1], default=(None, 0.0))
        out[name] = {
            "threshold": metric.threshold,
            "floor": max(worst[1], 0.0),
            "set_by": worst[0],
            "fix_records": len(clean),
        }
    return out


def _tables(directory: Path, stem: str) -> tuple[list[dict], list[Path]]:
    """The summary rows and files of the calibrations <stem>.json and <stem>-*.json in
    `directory`; a file that is not a calibration result says nothing."""
    paths = sorted({*directory.glob(f"{stem}.json"), *directory.glob(f"{stem}-*.json")})
    rows: list[dict] = []
    read = []
    for path in paths:
        try:
            found = [dict(r) for r in jsonfile.load(path).get("summary")]
            smallest_caught(found)  # reads every row it needs, or raises
        except (ValueError, AttributeError, KeyError, TypeError):
            # jsonfile.Unreadable is a ValueError
            continue
        rows += found
        read.append(path)
    return rows, read


def _others(directory: Path, machine: str, tensorflow: str) -> list[str]:
    """Other machines' names with a calibration file for `tensorflow` in `directory`."""
    names = {
        p.name.split(f"-tf-{tensorflow}")[0] for p in directory.glob(f"*-tf-{tensorflow}*.json")
    }
    return sorted(n for n in names if n != machine)


def sensitivity(
    calibration_dir: Path, machine: str, tensorflow: str | None, quoted: str | None = None
) -> str:
    """One line for a run's output: the smallest leak that this machine's calibrations for this
    TensorFlow version caught in every run, for every designed leak in every shape
    (targets.smallest_caught over them all). The calibrations are
    results/calibration/<machine>-tf-<version>.json (`leakbench calibrate`'s default output)
    and <machine>-tf-<version>-*.json beside it (the shape library's tables, alone and beside a
    CPU hog, written with --out). Where `machine` has none, the line says so and quotes another
    machine's: `quoted` (the published dataset's machine) where it has tables, else the first
    other name that has."""
    directory = Path(calibration_dir)
    rows: list[dict] = []
    read: list[Path] = []
    whose = machine
    # this machine's own tables first, then the quoted machine's, then any other's
    if tensorflow:
        names = [machine, *([quoted] if quoted else []), *_others(directory, machine, tensorflow)]
        for whose in dict.fromkeys(names):
            rows, read = _tables(directory, f"{whose}-tf-{tensorflow}")
            if rows:
                break
    caught = smallest_caught(rows) if rows else None
    if not caught:
        return (
            f"no-leak means: not calibrated on {machine} for TensorFlow {tensorflow or '(none)'}; "
            "leakbench calibrate measures what it catches (docs/calibration.md)"
        )
    where = read[0] if len(read) == 1 else f"{directory / whose}-tf-{tensorflow}*.json"
    tables = "" if len(read) == 1 else f": {len(read)} tables"
    mine = "" if whose == machine else f"; {machine} has no calibration of its own"
    return (
        "no-leak means held memory grew by less than "
        f"{format_bytes(caught, whole=True)}/repetition: the smallest designed leak caught in "
        f"every run, in every shape, on {whose}, TensorFlow {tensorflow} ({where}{tables}){mine}"
    )
