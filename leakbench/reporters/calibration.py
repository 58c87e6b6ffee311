"""The calibration's tables in markdown, from the result leakbench.calibrate.calibration writes.

Nothing is measured or decided here: the detection table (one row per design
and size, grouped by shape, each a leak or a control with its verdicts caught
or its false alarms, and per signal of leakbench.calibrate.stats.SIGNALS with
the registry's labels and thresholds), the peers on the same cases, the cost, what the
committed records add (suite cost, fixes' false alarms, noise floor) and the
targets. Sizes and slopes are shown in KiB (per repetition); rates as k/n
runs with their 95 % Wilson interval. How to read them: docs/calibration.md,
"How to read its tables".
"""

from __future__ import annotations

from leakbench.analysis.judge import verdict
from leakbench.calibrate import peers
from leakbench.calibrate.stats import ASV_FACTOR, CONTROL, SIGNALS, is_control, shape_of
from leakbench.reporters import markdown_table, under_bars
from leakbench.units import KIB, format_bytes


def _pct(x) -> str:
    return "—" if x is None else f"{x:.0%}"


def _det(d: dict) -> str:
    """A rate (stats._rate) as "k/n [low–high]"; — for none."""
    if not d["n"]:
        return "—"
    return f"{d['k']}/{d['n']} [{d['low']:.2f}–{d['high']:.2f}]"


def _case(size: int) -> str:
    return format_bytes(size, whole=True) if size else "0 (control)"


def _about(result: dict) -> list[str]:
    s = result["settings"]
    return [
        # the installed TensorFlow: a child of a Python-held design never imports it
        f"## Calibration: {result['machine']}, TensorFlow "
        f"{result.get('tensorflow') or result['environment'].get('tensorflow') or 'none'}",
        "",
        f"Engine settings: warm-up {s['warmup']}, {s['reps']} measured repetitions, heap pass "
        f"{s['heap_reps']}; thresholds: "
        + ", ".join(f"{m.label} {m.display(m.threshold)} {m.shown}" for m in SIGNALS.values())
        + f" ({' and '.join(m.label for m in SIGNALS.values() if not m.fallback)} decide; "
        + " and ".join(m.label for m in SIGNALS.values() if m.fallback)
        + f" only where held memory is n/a), Mann–Kendall p < {verdict.TREND_P_MAX}. "
        "Detected: k/n runs [95 % Wilson interval]. Trend only: p < 0.01 and both halves rising, "
        "no size threshold. Bias: mean slope − true. CV: std/mean of slopes. "
        f"asv peakmem: peak RSS > {ASV_FACTOR}× the control's median."
        + (
            f" Measured beside {result['cpu_hog']} busy "
            f"process{'es' if result['cpu_hog'] != 1 else ''} (--cpu-hog {result['cpu_hog']})."
            if result.get("cpu_hog")
            else ""
        ),
        "",
    ]


def _verdicts(r: dict) -> str:
    """A summary row's verdicts in words: "caught k/n" (verdict leak) on a designed leak,
    "false alarms k/n" on a control (size 0, or a control design at any size)."""
    if not is_control(r):
        found, words = r.get("caught") or r["leak"], "caught"
    else:
        found, words = r.get("false_alarms"), "false alarms"
    return f"{words} {found['k']}/{found['n']}" if found and found["n"] else "—"


def _shape_table(result: dict) -> list[str]:
    """Verdicts by shape: one row per design, one column per size, each cell _verdicts' k/n
    ("caught" on a leak, "false alarms" on a control); the first table a reader wants."""
    rows: dict[tuple, dict] = {}
    for r in result["summary"]:
        shape, leaks = shape_of(r)
        rows.setdefault((shape, r["holder"], leaks), {})[r["bytes_per_rep"]] = r
    sizes = sorted({size for cells in rows.values() for size in cells})
    if not rows:
        return []
    head = ["shape", "design", "leak or control", *(_case(size) for size in sizes)]
    body = (
        [
            shape,
            design,
            "leak" if leaks else "control",
            *(_verdicts(cells[size]) if size in cells else "—" for size in sizes),
        ]
        for (shape, design, leaks), cells in rows.items()
    )
    return [
        "### Verdicts by shape",
        "",
        *markdown_table(head, body),
        "",
        *under_bars.why_missed(result),
    ]


def _detection_table(result: dict) -> list[str]:
    labels = [m.label for m in SIGNALS.values()]
    head = [
        "shape",
        "holder",
        "leak or control",
        "true /rep",
        "runs",
        "verdicts",
        "verdict leak",
        *(
            f"{x} {what}"
            for x in labels
            for what in ("detected", "trend only", "slope KiB/rep", "bias", "CV")
        ),
        "asv peakmem",
    ]
    rows = []
    for r in result["summary"]:
        shape, leaks = shape_of(r)
        cells = [
            shape,
            r["holder"],
            "leak" if leaks else "control",
            _case(r["bytes_per_rep"]),
            f"{r['measured']}/{r['runs']}",
            _verdicts(r),
            _det(r["leak"]),
        ]
        for name in SIGNALS:
            sl = r[name]["slope"]
            bias = sl["relative_bias"] if r["bytes_per_rep"] else sl["bias"]
            cells += [
                _det(r[name]["detected"]),
                _det(r[name]["trend_only"]),
                format_bytes(sl["mean"], unit=KIB, label=False),
                _pct(bias) if r["bytes_per_rep"] else format_bytes(bias, unit=KIB),
                _pct(sl["cv"]) if r["bytes_per_rep"] else "—",
            ]
        cells.append(_det(r["asv_peakmem"]["detected"]))
        rows.append(cells)
    lines = markdown_table(head, rows, "lllrrll" + "llrrr" * len(SIGNALS) + "l")
    return lines + [
        "",
        "Leak or control: the design. A designed leak keeps the true size per repetition on "
        "average (steady, in lumps, in a block that moves, in rare steps); a control shape "
        "(bounded cache, sawtooth, one-off jump) stops growing or falls back, and is a control "
        "at every size. Verdicts: on a designed leak, runs whose verdict read leak (caught); "
        f"on a control, runs whose verdict read other than {CONTROL.label} (false alarms). "
        "On 0 bytes every detection is a false alarm too.",
        "",
    ]


def _peer_table(result: dict) -> list[str]:
    """leakbench's verdict, asv's peakmem_, MemoryChecker and limit_leaks on the same cases."""
    found = {
        (p["peer"], p["holder"], p["bytes_per_rep"]): p for p in result.get("peer_summary", [])
    }
    names = [n for n in peers.PEERS if any(k[0] == n for k in found)]
    titles = {
        "memory_checker": "TF MemoryChecker",
        "limit_leaks": f"pytest-memray limit_leaks({peers.LIMIT_LEAKS})",
    }
    lines = [
        "### Peers on the same cases",
        "",
        "Detected: k/n runs [95 % Wilson interval]; on the control, false alarms. leakbench: "
        "verdict leak. asv peakmem_: from leakbench's own "
        f"runs (peak RSS > {ASV_FACTOR}× the control's median). "
        "MemoryChecker and limit_leaks: their own fresh, "
        "capped, timed processes, same warm-up and repetitions.",
        "",
    ]
    rows = []
    for r in result["summary"]:
        key = (r["holder"], r["bytes_per_rep"])
        cells = [
            r["holder"],
            _case(r["bytes_per_rep"]),
            _det(r["leak"]),
            _det(r["asv_peakmem"]["detected"]),
        ]
        for n in names:
            p = found.get((n, *key))
            cell = _det(p["detected"]) if p else "—"
            if p and p["failed"]:
                cell += " (" + ", ".join(f"{k} {v}" for k, v in p["failed"].items()) + ")"
            cells.append(cell)
        rows.append(cells)
    lines += markdown_table(
        ["holder", "true /rep", "leakbench", "asv peakmem_", *(titles[n] for n in names)],
        rows,
        "lrll" + "l" * len(names),
    )
    return lines + [""]


def _num(x, spec: str) -> str:
    return "—" if x is None else format(x, spec)


def _cost(result: dict) -> list[str]:
    lines = [
        "### Cost",
        "",
        "Medians over the runs. memray pass: its tracked repetitions; memray start+stop and "
        "read-back: its fixed cost per run (seconds), whatever "
        "the repetitions; memray whole: all three, per repetition.",
        "",
    ]
    head = [
        "holder",
        "runs",
        "wall s",
        "floor s",
        "wall/floor",
        "work s/rep",
        "plain pass s/rep",
        "memray pass s/rep",
        "memray/plain",
        "memray start+stop s",
        "memray read-back s",
        "memray whole s/rep",
        "whole/plain",
    ]
    lines += markdown_table(
        head,
        (
            [
                holder,
                str(c["runs"]),
                f"{c['wall_seconds']:.0f}",
                f"{c['floor_seconds']:.0f}",
                f"{c['wall_over_floor']:.2f}",
                f"{c['work_seconds_per_rep']:.3f}",
                f"{c['plain_seconds_per_rep']:.3f}",
                _num(c["heap_seconds_per_rep"], ".3f"),
                _num(c["heap_over_plain"], ".2f"),
                _num(c.get("heap_tracker_seconds"), ".2f"),
                _num(c.get("heap_analysis_seconds"), ".2f"),
                _num(c.get("heap_total_seconds_per_rep"), ".3f"),
                _num(c.get("heap_total_over_plain"), ".2f"),
            ]
            for holder, c in result["cost"].items()
            if c
        ),
        "l" + "r" * 12,
    )
    suite = result.get("suite_cost")
    if suite and "error" in suite:
        lines += ["", f"Suite ({suite['records']}): not read: {suite['error']}"]
    elif suite:
        heap = suite["heap_over_plain"]
        lines += [
            "",
            f"Suite ({suite['records']}, {suite['runs']} child runs): wall "
            f"{suite['wall_seconds']:.0f} s against a floor of "
            f"{suite['floor_seconds']:.0f} s = {suite['wall_over_floor']:.2f}×; "
            f"memray pass per repetition {'—' if heap is None else f'{heap:.2f}'}× the plain pass.",
        ]
    return lines


def _committed(result: dict) -> list[str]:
    lines = []
    fixes = result.get("committed_fixes")
    if fixes:
        lines += [
            "",
            f"Fixes in committed records: {fixes['records']} measured "
            f"(and {fixes['skipped']} skipped, not counted), "
            f"verdicts {fixes['by_verdict']}; false alarms (a verdict other than no-leak): "
            f"{fixes['false_alarms']}",
        ]
        lines += [f"- {a}" for a in fixes["alarms"]]
        lines += [f"- not read: {u}" for u in fixes["unreadable"]]
    floor = result.get("noise_floor")
    if floor:
        lines += [
            "",
            "Noise floor: the smallest threshold that would keep every control run and every clean "
            "(no-leak) fix in the committed records from moving: "
            + "; ".join(
                f"{SIGNALS[name].label} {format_bytes(f['floor'], unit=KIB)}/rep (threshold "
                f"{format_bytes(f['threshold'], unit=KIB, digits=0)}/rep; set by {f['set_by']})"
                for name, f in floor.items()
            )
            + ".",
        ]
    return lines


def markdown(result: dict) -> str:
    """The calibration's tables and figures (see the
    module docstring), in markdown, ending in a newline.

    result: as leakbench.calibrate.calibration.calibrate returns it (settings, machine, environment,
    summary, peer_summary, cost, targets), add_context's keys (suite_cost, committed_fixes,
    noise_floor) shown where present.
    """
    lines = (
        _about(result)
        + _shape_table(result)
        + _detection_table(result)
        + _peer_table(result)
        + _cost(result)
        + _committed(result)
    )
    met = {True: "yes", False: "**no**", None: "not measured"}
    lines += ["", "### Targets", ""] + markdown_table(
        ["target", "measured", "met"],
        ([t["target"], t["measured"] or "—", met[t["met"]]] for t in result["targets"]),
    )
    return "\n".join(lines) + "\n"
