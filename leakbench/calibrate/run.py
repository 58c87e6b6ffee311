"""Calibration: how well the engine sees designed leaks of known size.

Designed cases (leakbench/calibration/): `python_held.py` keeps a bytearray of
`bytes_per_rep` bytes per repetition, `tensorflow_held.py` keeps the tensor a
one-element tf.data pipeline yields; `bytes_per_rep = 0` is the control (same
work, nothing kept). Each case is measured `runs` times, each time in a fresh,
capped, timed child at the engine's settings (leakbench.engine.measure), one child at
a time. Runs go round-robin (run 1 of every case, then run 2, ...) so that a
spell of load on the machine spreads over all cases instead of one.

Per case and per signal (held memory's slope, which the verdict reads, RSS's
slope at its fallback threshold, memray heap slope):
- detection rate: runs where the signal moved (verdict.moved: its rate, the
  least of the whole series' slope and each half's, at or over its threshold,
  and Mann–Kendall p < 0.01), with a 95 % Wilson interval
  (scipy.stats.binomtest); on the control every detection is a false alarm;
- trend-only rate: runs where the trend test and both halves say "rising"
  with no size threshold (what a lower threshold could reach at best);
- bias: mean estimated slope minus the true bytes per repetition;
- CV: std / mean of the slopes over runs (ddof = 1).

A peer read from the same runs, side by side: asv's `peakmem_` (the
process's peak RSS, here the kernel's VmHWM of the child from setup through
the measured repetitions, TensorFlow's import included), judged as `asv
continuous` judges a change: a case's peak more than ASV_FACTOR times the
median peak of the control of its holder (each control run against the other
control runs).

Cost: each run's wall time against its floor, the interpreter and imports
(the child's `import` phase) plus the scenario's own work (setup, and
warm-up + measured repetitions at the per-repetition time of the warm-up,
which samples nothing); and the memray pass per repetition against the plain
pass per repetition (which samples after each repetition).

Everything measured is written to the output JSON after every run (atomic
replace), so an interrupted calibration keeps what it measured and `resume`
carries on from it.
"""
from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Callable

import numpy as np
from scipy import stats

from leakbench.jsonfile import write_atomic
from leakbench.calibrate import peers
from leakbench.analysis import record, verdict
from leakbench.catalog import Target
from leakbench.contract import read_metadata
from leakbench.engine.measure import Settings, measure
from leakbench.units import KIB, MIB

FOLDER = Path(__file__).parent / "designs"
HOLDERS = {"python": FOLDER / "python_held.py", "tensorflow": FOLDER / "tensorflow_held.py",
           # the same with TF_ONEDNN_USE_SYSTEM_ALLOCATOR=1: not measured by default
           "tensorflow-system-allocator": FOLDER / "tensorflow_system_allocator.py"}
SIZES = (0, KIB, 16 * KIB, 64 * KIB, 256 * KIB, MIB, 8 * MIB)
ASV_FACTOR = 1.1  # asv continuous / compare: a change past 10 % is reported
# held decides (verdict.GROWTH_SIGNALS); RSS is read beside it at its fallback threshold
SIGNALS = {"held": ("held_growth", verdict.HELD_SLOPE_MIN), "rss": ("rss_growth", verdict.RSS_SLOPE_MIN),
           "heap": ("retained_heap", verdict.HEAP_SLOPE_MIN)}
LABELS = {"held": "held", "rss": "RSS", "heap": "heap"}
FORMAT = 1


@dataclass(frozen=True)
class Case:
    holder: str          # key of HOLDERS
    bytes_per_rep: int   # true bytes kept per repetition (0: the control)


def observe(rec: dict, case: Case, run: int) -> dict:
    """What calibration keeps of one record: slopes, verdict, peak and seconds."""
    m = rec["metrics"] or {}
    first = rec["runs"][0] if rec["runs"] else {}
    seen = {"holder": case.holder, "bytes_per_rep": case.bytes_per_rep, "run": run,
            "verdict": rec["verdict"], "signals": rec["signals"], "phase": rec["phase"],
            "error": rec["error"] and rec["error"].strip().splitlines()[-1],
            "wall_seconds": rec["seconds"], "seconds": first.get("seconds") or {},
            "peak_rss_bytes": first.get("high_water_mark_bytes"),
            "max_rss_bytes": first.get("max_rss_bytes"),
            "tensorflow": rec["environment"]["tensorflow"],
            "heap_source": (first.get("heap") or {}).get("heap_source")}
    for name, (key, threshold) in SIGNALS.items():
        trend = m.get(key)
        seen[f"{name}_slope"] = trend and trend["slope"]
        seen[f"{name}_p"] = trend and trend["p_increasing"]
        seen[f"{name}_moved"] = verdict.moved(trend, threshold)
        seen[f"{name}_trend"] = trend  # slope, interval, p, halves: everything the verdict read
        seen[f"{name}_reach"] = _reach(trend)
        seen[f"{name}_trend_only"] = bool(trend) and trend["p_increasing"] < verdict.TREND_P_MAX and min(
            trend["first_half"], trend["second_half"]) > 0
    return seen


def _reach(trend: dict | None) -> float | None:
    """The largest threshold at which this trend would still count as moved (verdict.moved):
    its rate (verdict.rate) if the trend test passes, else None (never moves)."""
    if not trend or trend["p_increasing"] >= verdict.TREND_P_MAX:
        return None
    return verdict.rate(trend)


def noise_floor(observations: list[dict], records_dir: Path | None) -> dict:
    """Per signal: the smallest threshold that keeps zero false alarms on the controls and on
    the fixes that read no-leak in committed records (the largest `_reach` among them), and
    which run sets it."""
    out = {}
    fixes = []
    if records_dir is not None and records_dir.is_dir():
        for path in sorted(records_dir.glob("*/tf-*.jsonl")):
            for line in path.read_text().splitlines():
                rec = json.loads(line)
                # a fix that reads leak is counted in committed_fix_verdicts: the floor is
                # how low a threshold could go without turning a clean fix into an alarm
                if rec["variant"] == "fixed" and rec["metrics"] and rec["verdict"] == "no-leak":
                    fixes.append((f"{rec['pair']} fixed, {path.parent.name}/{path.stem}", rec["metrics"]))
    for name, (key, threshold) in SIGNALS.items():
        found = [(f"{o['holder']} control run {o['run']}", o[f"{name}_reach"]) for o in observations
                 if o["bytes_per_rep"] == 0 and o.get(f"{name}_reach") is not None]
        found += [(label, _reach(m.get(key))) for label, m in fixes if _reach(m.get(key)) is not None]
        worst = max(found, key=lambda f: f[1], default=(None, 0.0))
        out[name] = {"threshold": threshold, "floor": max(worst[1], 0.0), "set_by": worst[0],
                     "fix_records": len(fixes)}
    return out


def _rate(k: int, n: int) -> dict:
    if n == 0:
        return {"k": 0, "n": 0, "rate": None, "low": None, "high": None}
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return {"k": k, "n": n, "rate": k / n, "low": float(ci.low), "high": float(ci.high)}


def _spread(slopes: list[float], true: int) -> dict:
    """Mean slope, bias (bytes/repetition and share of the truth) and CV of slopes."""
    if not slopes:
        return {"mean": None, "bias": None, "relative_bias": None, "cv": None, "min": None, "max": None}
    y = np.asarray(slopes, dtype=float)
    mean = float(y.mean())
    cv = float(y.std(ddof=1) / mean) if len(y) > 1 and mean > 0 else None
    return {"mean": mean, "bias": mean - true, "relative_bias": (mean - true) / true if true else None,
            "cv": cv, "min": float(y.min()), "max": float(y.max())}


def summarize(observations: list[dict]) -> list[dict]:
    """One row per (holder, bytes_per_rep): detection, trend-only rate, bias, CV, asv's verdict."""
    rows = []
    cases = sorted({(o["holder"], o["bytes_per_rep"]) for o in observations})
    for holder, size in cases:
        done = [o for o in observations if (o["holder"], o["bytes_per_rep"]) == (holder, size)]
        measured = [o for o in done if o["rss_slope"] is not None]
        row = {"holder": holder, "bytes_per_rep": size, "runs": len(done), "measured": len(measured),
               "verdicts": {v: sum(o["verdict"] == v for o in done) for v in sorted({o["verdict"] for o in done})},
               "leak": _rate(sum(o["verdict"] == "leak" for o in measured), len(measured))}
        for name in SIGNALS:
            with_signal = [o for o in measured if o[f"{name}_slope"] is not None]
            row[name] = {
                "detected": _rate(sum(o[f"{name}_moved"] for o in with_signal), len(with_signal)),
                "reach": [o.get(f"{name}_reach") for o in with_signal],
                "trend_only": _rate(sum(o[f"{name}_trend_only"] for o in with_signal), len(with_signal)),
                "slope": _spread([o[f"{name}_slope"] for o in with_signal], size),
            }
        row["asv_peakmem"] = _asv(observations, holder, size)
        rows.append(row)
    return rows


def _asv(observations: list[dict], holder: str, size: int) -> dict:
    """asv's peakmem_ comparison: the case's peak RSS against ASV_FACTOR × the control's median peak."""
    control = [o for o in observations if o["holder"] == holder and o["bytes_per_rep"] == 0 and o["peak_rss_bytes"]]
    runs = [o for o in observations if o["holder"] == holder and o["bytes_per_rep"] == size and o["peak_rss_bytes"]]
    flagged = 0
    for o in runs:
        others = [c["peak_rss_bytes"] for c in control if c is not o]
        if others and o["peak_rss_bytes"] > ASV_FACTOR * float(np.median(others)):
            flagged += 1
    peaks = [o["peak_rss_bytes"] for o in runs]
    return {"detected": _rate(flagged, len(runs) if len(control) > (size == 0) else 0),
            "median_peak_bytes": float(np.median(peaks)) if peaks else None}


def summarize_peers(found: list[dict]) -> list[dict]:
    """Per (peer, holder, bytes_per_rep): leak rate over the peer runs that finished (status ok)."""
    rows = []
    for peer, holder, size in sorted({(p["peer"], p["holder"], p["bytes_per_rep"]) for p in found}):
        runs = [p for p in found if (p["peer"], p["holder"], p["bytes_per_rep"]) == (peer, holder, size)]
        ok = [p for p in runs if p["status"] == "ok" and p["leak"] is not None]
        rows.append({"peer": peer, "holder": holder, "bytes_per_rep": size, "runs": len(runs),
                     "detected": _rate(sum(p["leak"] for p in ok), len(ok)),
                     "failed": {p["status"]: sum(q["status"] == p["status"] for q in runs) for p in runs
                                if p["status"] != "ok"},
                     "wall_seconds": float(np.median([p["wall_seconds"] for p in runs]))})
    return rows


def cost(observations: list[dict], settings: Settings) -> dict:
    """Wall time against its floor; the memray pass per repetition against the plain pass."""
    return {holder: _cost([o for o in observations if o["holder"] == holder], settings)
            for holder in sorted({o["holder"] for o in observations})}


def _cost(observations: list[dict], settings: Settings) -> dict:
    walls, floors, plain, heap, work = [], [], [], [], []
    for o in observations:
        s = o["seconds"]
        if not all(k in s for k in ("import", "setup", "warm-up", "repetitions")) or not settings.warmup:
            continue
        per_rep = s["warm-up"] / settings.warmup
        walls.append(o["wall_seconds"])
        floors.append(s["import"] + s["setup"] + per_rep * (settings.warmup + settings.reps))
        work.append(per_rep)
        plain.append(s["repetitions"] / settings.reps)
        if "heap" in s and settings.heap_reps:
            heap.append(s["heap"] / settings.heap_reps)
    if not walls:
        return {}
    return {"runs": len(walls), "wall_seconds": sum(walls), "floor_seconds": sum(floors),
            "wall_over_floor": sum(walls) / sum(floors),
            "work_seconds_per_rep": float(np.median(work)),
            "plain_seconds_per_rep": float(np.median(plain)),
            "heap_seconds_per_rep": float(np.median(heap)) if heap else None,
            "heap_over_plain": float(np.median(heap)) / float(np.median(plain)) if heap else None}


def suite_cost(records_path: Path) -> dict | None:
    """The same wall-over-floor figure for a records file of the suite (`leakbench run --json`)."""
    if not records_path.is_file():
        return None
    walls = floors = heap = plain = 0.0
    count = 0
    for line in records_path.read_text().splitlines():
        rec = json.loads(line)
        warmup, reps, heap_reps = (rec["settings"][k] for k in ("warmup", "reps", "heap_reps"))
        for run in rec["runs"]:
            s = run["seconds"]
            if not warmup or not all(k in s for k in ("import", "setup", "warm-up", "repetitions")):
                continue
            count += 1
            walls += run["wall_seconds"]
            floors += s["import"] + s["setup"] + s["warm-up"] / warmup * (warmup + reps)
            if "heap" in s:
                heap += s["heap"] / heap_reps
                plain += s["repetitions"] / reps
    if not count:
        return None
    return {"records": str(records_path), "runs": count, "wall_seconds": walls, "floor_seconds": floors,
            "wall_over_floor": walls / floors, "heap_over_plain": heap / plain if plain else None}


def committed_fix_verdicts(records_dir: Path) -> dict:
    """Verdicts of fixed variants in committed records (results/records/<machine>/tf-*.jsonl): false alarms."""
    found = {"records": 0, "leak": 0, "by_verdict": {}, "alarms": []}
    for path in sorted(records_dir.glob("*/tf-*.jsonl")):
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if rec["variant"] != "fixed":
                continue
            found["records"] += 1
            found["by_verdict"][rec["verdict"]] = found["by_verdict"].get(rec["verdict"], 0) + 1
            if rec["verdict"] in ("leak", "fragmentation"):
                found["alarms"].append(f"{path.parent.name}/{path.stem}: {rec['pair']} {rec['verdict']} "
                                       f"({', '.join(rec['signals'])})")
    found["leak"] = len(found["alarms"])
    return found


def targets(rows: list[dict], costs: dict, suite: dict | None) -> list[dict]:
    """The issue's targets, each with the measured figure and whether it is met (None: not measured)."""
    def row(holder, size):
        return next((r for r in rows if (r["holder"], r["bytes_per_rep"]) == (holder, size)), None)

    out = []
    for holder in sorted({r["holder"] for r in rows}):
        r = row(holder, 64 * KIB)
        out.append(_target(f"{holder}: 64 KiB/rep caught 10/10 by held memory", r and r["held"]["detected"],
                           lambda d: d["n"] >= 10 and d["k"] == d["n"]))
        r = row(holder, 16 * KIB)
        out.append(_target(f"{holder}: 16 KiB/rep caught 10/10 by held memory (aim)", r and r["held"]["detected"],
                           lambda d: d["n"] >= 10 and d["k"] == d["n"]))
        r = row(holder, KIB)
        out.append(_target(f"{holder}: 1 KiB/rep caught 10/10 by heap", r and r["heap"]["detected"],
                           lambda d: d["n"] >= 10 and d["k"] == d["n"]))
        r = row(holder, 0)
        if r and r["measured"]:
            alarms = sum(n for v, n in r["verdicts"].items() if v in ("leak", "fragmentation"))
            out.append({"target": f"{holder}: no false alarm on the control",
                        "measured": f"{alarms}/{r['runs']} runs read leak or fragmentation", "met": alarms == 0})
        else:
            out.append({"target": f"{holder}: no false alarm on the control", "measured": None, "met": None})
        cvs = [(r["bytes_per_rep"], r["held"]["slope"]["cv"]) for r in rows
               if r["holder"] == holder and r["bytes_per_rep"] and r["held"]["detected"]["k"]]
        worst = max((cv for _, cv in cvs if cv is not None), default=None)
        out.append({"target": f"{holder}: held slope CV <= 10 % where it detects", "measured":
                    worst is not None and ", ".join(f"{_size(s)} {cv:.0%}" for s, cv in cvs if cv is not None),
                    "met": None if worst is None else worst <= 0.10})
        c = costs.get(holder) or {}
        ratio = c.get("heap_over_plain")
        out.append({"target": f"{holder}: memray pass <= 1.5x the plain pass (per repetition)",
                    "measured": ratio and f"{ratio:.2f}x", "met": None if ratio is None else ratio <= 1.5})
    ratio = suite and suite["wall_over_floor"]
    out.append({"target": "suite <= 1.5x its floor", "measured": ratio and f"{ratio:.2f}x",
                "met": None if not ratio else ratio <= 1.5})
    return out


def _target(name: str, detected: dict | None, ok) -> dict:
    if not detected or not detected["n"]:
        return {"target": name, "measured": None, "met": None}
    return {"target": name, "measured": f"{detected['k']}/{detected['n']}", "met": ok(detected)}


def _size(n: int) -> str:
    if n >= MIB and n % MIB == 0:
        return f"{n // MIB} MiB"
    return f"{n // KIB} KiB" if n % KIB == 0 else f"{n} B"


def tensorflow_version() -> str | None:
    """The installed TensorFlow's version, read without importing it."""
    for name in ("tensorflow", "tensorflow-cpu"):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def default_out(results: Path, machine: str) -> Path:
    return results / "calibration" / f"{machine}-tf-{tensorflow_version() or 'none'}.json"


def plan(holders: list[str], sizes: list[int], runs: int) -> list[tuple[int, Case]]:
    """(run, case) in measuring order: round-robin over cases, run by run."""
    return [(run, Case(h, s)) for run in range(1, runs + 1) for h in holders for s in sizes]


def calibrate(holders: list[str], sizes: list[int], runs: int, settings: Settings, out: Path,
              resume: bool = True, on_run: Callable[[int, int, Case, int, dict], None] | None = None,
              machine: str | None = None, peer_names: tuple = (), peer_runs: int = 0) -> dict:
    """Measure every (run, case) not yet in `out`, writing `out` after each; return the result.

    settings: the engine's settings (defaults except cap and timeout, for calibration at
    default settings). resume: keep the observations already in `out` whose settings match.
    peer_names: peers (leakbench.calibrate.peers.PEERS) to run on the same case after the engine, in
    runs 1 … peer_runs; their results go to result["peers"].
    """
    settings = settings.resolved()
    result = _load(out, settings) if resume else None
    if result is None:
        result = {"format": FORMAT, "machine": machine or platform.node(), "settings": _settings(settings),
                  "environment": record.environment(None), "observations": []}
    result.setdefault("peers", [])
    done = {(o["holder"], o["bytes_per_rep"], o["run"]) for o in result["observations"]}
    peers_done = {(p["peer"], p["holder"], p["bytes_per_rep"], p["run"]) for p in result["peers"]}
    todo = [(run, case, None) for run, case in plan(holders, sizes, runs)
            if (case.holder, case.bytes_per_rep, run) not in done]
    todo += [(run, case, peer) for run, case in plan(holders, sizes, peer_runs) for peer in peer_names
             if (peer, case.holder, case.bytes_per_rep, run) not in peers_done]
    todo.sort(key=lambda item: item[0])  # stable: run by run, the engine before its peers
    for i, (run, case, peer) in enumerate(todo, 1):
        scenario = read_metadata(HOLDERS[case.holder])
        params = {**scenario.params, scenario.size_param: case.bytes_per_rep}
        if peer:
            seen = peers.run_peer(peer, scenario.path, params, warmup=settings.warmup, reps=settings.reps,
                                  cap_bytes=settings.cap_bytes, timeout_seconds=settings.timeout_seconds)
            seen.update(holder=case.holder, bytes_per_rep=case.bytes_per_rep, run=run)
            result["peers"].append(seen)
        else:
            rec = measure(Target(scenario, "file"), params, settings)
            seen = observe(rec, case, run)
            result["observations"].append(seen)
            if seen["tensorflow"]:
                result["environment"]["tensorflow"] = seen["tensorflow"]
        _finish(result, settings)
        write_atomic(out, result)
        if on_run:
            on_run(i, len(todo), case, run, seen)
    _finish(result, settings)
    write_atomic(out, result)
    return result


def _settings(settings: Settings) -> dict:
    """Settings as stored in the result (through JSON: a tuple reads back as a list)."""
    return json.loads(json.dumps({k: v for k, v in asdict(settings).items() if k != "flamegraph_dir"}))


def _finish(result: dict, settings: Settings, suite_records: Path | None = None) -> None:
    result["summary"] = summarize(result["observations"])
    result["peer_summary"] = summarize_peers(result.get("peers", []))
    result["cost"] = cost(result["observations"], settings)
    if suite_records is not None:
        result["suite_cost"] = suite_cost(suite_records)
    result["targets"] = targets(result["summary"], result["cost"], result.get("suite_cost"))


def add_context(result: dict, out: Path, settings: Settings, suite_records: Path | None,
                records_dir: Path | None) -> dict:
    """Add the suite's cost and the committed fixes' verdicts, recompute targets, write."""
    if records_dir is not None and records_dir.is_dir():
        result["committed_fixes"] = committed_fix_verdicts(records_dir)
    result["noise_floor"] = noise_floor(result["observations"], records_dir)
    _finish(result, settings.resolved(), suite_records)
    write_atomic(out, result)
    return result


def _load(out: Path, settings: Settings) -> dict | None:
    if not out.is_file():
        return None
    try:
        found = json.loads(out.read_text())
    except json.JSONDecodeError:
        return None
    if found.get("format") != FORMAT or found.get("settings") != _settings(settings):
        return None
    return found



# --- the view --------------------------------------------------------------

def _pct(x) -> str:
    return "—" if x is None else f"{x:.0%}"


def _kib(x) -> str:
    return "—" if x is None else f"{x / KIB:,.1f}"


def _det(d: dict) -> str:
    if not d["n"]:
        return "—"
    return f"{d['k']}/{d['n']} [{d['low']:.2f}–{d['high']:.2f}]"


def _peer_table(result: dict) -> list[str]:
    """leakbench's verdict, asv's peakmem_, MemoryChecker and limit_leaks on the same cases."""
    found = {(p["peer"], p["holder"], p["bytes_per_rep"]): p for p in result.get("peer_summary", [])}
    names = [n for n in peers.PEERS if any(k[0] == n for k in found)]
    titles = {"memory_checker": "TF MemoryChecker", "limit_leaks": f"pytest-memray limit_leaks({peers.LIMIT_LEAKS})"}
    lines = ["### Peers on the same cases", "",
             "Detected: k/n runs [95 % Wilson interval]; on the control, false alarms. leakbench: verdict leak. "
             f"asv peakmem_: from leakbench's own runs (peak RSS > {ASV_FACTOR}× the control's median). "
             "MemoryChecker and limit_leaks: their own fresh, capped, timed processes, same warm-up and repetitions.",
             "", "| " + " | ".join(["holder", "true /rep", "leakbench", "asv peakmem_", *(titles[n] for n in names)]) + " |",
             "|---|---:|---|---|" + "---|" * len(names)]
    for r in result["summary"]:
        key = (r["holder"], r["bytes_per_rep"])
        cells = [r["holder"], _size(r["bytes_per_rep"]) if r["bytes_per_rep"] else "0 (control)", _det(r["leak"]),
                 _det(r["asv_peakmem"]["detected"])]
        for n in names:
            p = found.get((n, *key))
            cell = _det(p["detected"]) if p else "—"
            if p and p["failed"]:
                cell += " (" + ", ".join(f"{k} {v}" for k, v in p["failed"].items()) + ")"
            cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def markdown(result: dict) -> str:
    """The calibration table, the cost figures and the targets, in markdown."""
    s = result["settings"]
    lines = [f"## Calibration: {result['machine']}, TensorFlow {result['environment'].get('tensorflow')}",
             "",
             f"Engine settings: warm-up {s['warmup']}, {s['reps']} measured repetitions, heap pass "
             f"{s['heap_reps']}; thresholds: "
             + ", ".join(f"{LABELS[n]} {t / KIB:,.0f} KiB/rep" for n, (_, t) in SIGNALS.items())
             + f" (held decides; RSS only where held is n/a), Mann–Kendall p < {verdict.TREND_P_MAX}. "
             "Detected: k/n runs [95 % Wilson interval]. Trend only: p < 0.01 and both halves rising, "
             "no size threshold. Bias: mean slope − true. CV: std/mean of slopes. "
             f"asv peakmem: peak RSS > {ASV_FACTOR}× the control's median.",
             "",
             "| holder | true /rep | runs | verdict leak | "
             + " | ".join(f"{LABELS[n]} detected | {LABELS[n]} trend only | {LABELS[n]} slope KiB/rep | "
                          f"{LABELS[n]} bias | {LABELS[n]} CV" for n in SIGNALS) + " | asv peakmem |",
             "|---|---:|---:|---|" + "---|---|---:|---:|---:|" * len(SIGNALS) + "---|"]
    for r in result["summary"]:
        cells = [r["holder"], _size(r["bytes_per_rep"]) if r["bytes_per_rep"] else "0 (control)",
                 f"{r['measured']}/{r['runs']}", _det(r["leak"])]
        for name in SIGNALS:
            sl = r[name]["slope"]
            bias = sl["relative_bias"] if r["bytes_per_rep"] else sl["bias"]
            cells += [_det(r[name]["detected"]), _det(r[name]["trend_only"]), _kib(sl["mean"]),
                      _pct(bias) if r["bytes_per_rep"] else f"{_kib(bias)} KiB",
                      _pct(sl["cv"]) if r["bytes_per_rep"] else "—"]
        cells.append(_det(r["asv_peakmem"]["detected"]))
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "On the control (0 bytes) every detection is a false alarm.", ""]
    lines += _peer_table(result)
    lines += ["### Cost", "",
              "| holder | runs | wall s | floor s | wall/floor | work s/rep | plain pass s/rep | memray pass s/rep "
              "| memray/plain |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for holder, c in result["cost"].items():
        if not c:
            continue
        heap = c["heap_seconds_per_rep"]
        lines.append(f"| {holder} | {c['runs']} | {c['wall_seconds']:.0f} | {c['floor_seconds']:.0f} | "
                     f"{c['wall_over_floor']:.2f} | {c['work_seconds_per_rep']:.3f} | "
                     f"{c['plain_seconds_per_rep']:.3f} | {'—' if heap is None else f'{heap:.3f}'} | "
                     f"{'—' if heap is None else format(c['heap_over_plain'], '.2f')} |")
    suite = result.get("suite_cost")
    if suite:
        heap = suite["heap_over_plain"]
        lines += ["", f"Suite ({suite['records']}, {suite['runs']} child runs): wall {suite['wall_seconds']:.0f} s "
                  f"against a floor of {suite['floor_seconds']:.0f} s = {suite['wall_over_floor']:.2f}×; "
                  f"memray pass per repetition {'—' if heap is None else f'{heap:.2f}'}× the plain pass."]
    fixes = result.get("committed_fixes")
    if fixes:
        lines += ["", f"Fixes in committed records: {fixes['records']} records, verdicts {fixes['by_verdict']}; "
                  f"false alarms (leak or fragmentation): {fixes['leak']}"]
        lines += [f"- {a}" for a in fixes["alarms"]]
    floor = result.get("noise_floor")
    if floor:
        lines += ["", "Noise floor: the smallest threshold that would keep every control run and every clean "
                  "(no-leak) fix in the committed records from moving: "
                  + "; ".join(f"{name} {f['floor'] / KIB:,.1f} KiB/rep (threshold {f['threshold'] // KIB} KiB/rep; "
                              f"set by {f['set_by']})" for name, f in floor.items()) + "."]
    lines += ["", "### Targets", "", "| target | measured | met |", "|---|---|---|"]
    for t in result["targets"]:
        met = {True: "yes", False: "**no**", None: "not measured"}[t["met"]]
        lines.append(f"| {t['target']} | {t['measured'] or '—'} | {met} |")
    return "\n".join(lines) + "\n"
