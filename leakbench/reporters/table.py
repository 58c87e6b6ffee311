"""Views of records: the table people read. Records themselves stay data."""
from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from leakbench.units import KIB, MIB
from leakbench.analysis.verdict import expected_ok



def _slope(metrics: dict, key: str, unit: float = 1.0, digits: int = 0) -> str:
    found = metrics.get(key)
    return "—" if not found else f"{found['slope'] / unit:,.{digits}f}"


def row(rec: dict) -> list[str]:
    """Cells of one record: pair, variant, peak MiB, held, RSS and malloc growth KiB/rep,
    trim MiB, heap KiB/rep, threads/rep, Python objects/rep, peak scaling exponent,
    signals, verdict, seconds."""
    m = rec["metrics"]
    peak = m.get("peak_above_baseline_bytes")
    scaling = m.get("peak_scaling") or {}
    exponent = scaling.get("exponent")
    word = rec["verdict"] + (f" ({rec['phase']})" if rec.get("phase") else "")
    if rec.get("teardown_stalled"):
        word += " (teardown stalled)"
    trimmed = m.get("trim_returned_bytes")
    malloc = "n/a" if m.get("malloc_heap_unavailable") else _slope(m, "malloc_heap_growth", KIB)
    return [
        rec["pair"], rec["variant"],
        "—" if peak is None else f"{peak / MIB:,.1f}",
        "n/a" if m.get("malloc_heap_unavailable") else _slope(m, "held_growth", KIB),
        _slope(m, "rss_growth", KIB),
        malloc,
        "—" if trimmed is None else f"{trimmed / MIB:,.1f}",
        _slope(m, "retained_heap", KIB),
        _slope(m, "threads_growth", 1.0, 1),
        _slope(m, "python_objects_growth", 1.0, 0),
        "—" if exponent is None else f"{exponent:.2f}",
        ", ".join(rec["signals"]) or "—",
        word,
        f"{rec['seconds']:.1f}",
    ]


def table(records: list[tuple[dict, str]]) -> Table:
    """A rich Table of (record, expected verdict) pairs; unexpected verdicts in red.

    Columns: peak above baseline (MiB), held memory (anonymous RSS less
    malloc's free bytes, the verdict's memory signal), RSS and malloc heap in use
    (KiB/repetition, Theil–Sen slopes; held and malloc n/a under another
    allocator), RSS
    given back by malloc_trim at the end (MiB), memray's retained heap
    (KiB/repetition), threads/repetition, Python objects/repetition, the exponent k of
    peak ∝ size^k (peak scenarios), the signals that moved, verdict, seconds.
    """
    t = Table(title="leakbench: memory per scenario variant", title_justify="left")
    headers = ["pair", "variant", "peak MiB", "held KiB/rep", "RSS KiB/rep", "malloc KiB/rep", "trim MiB",
               "heap KiB/rep", "threads/rep", "objects/rep", "peak ∝ size^k", "signals", "verdict", "seconds"]
    for i, h in enumerate(headers):
        t.add_column(h, justify="left" if h in ("pair", "variant", "signals", "verdict") else "right")
    for rec, expected in records:
        cells = [escape(c) for c in row(rec)]
        style = "green" if expected_ok(rec, expected) else "bold red"
        cells[-2] = f"[{style}]{cells[-2]}[/]"
        t.add_row(*cells)
    return t


def listing(scenarios) -> Table:
    """A rich Table of scenarios: name, kind, seed source, size parameter=default, title."""
    t = Table(title="leakbench: scenario pairs (scenarios/ leaky, fixes/ fixed)", title_justify="left")
    for h in ("pair", "kind", "source", "size parameter", "title"):
        t.add_column(h)
    for s in scenarios:
        # Text from scenario files is escaped: "[...]" would otherwise be read as rich markup.
        kind = f"{s.kind}, needs a {s.requires}" if s.requires else s.kind  # REQUIRES: skipped without one
        t.add_row(*map(escape, (s.name, kind, s.source, f"{s.size_param}={s.params[s.size_param]}", s.title)))
    return t


# --- leakbench check: one record, read by a person ---

CHECK_SERIES = (  # metric, label, unit divisor, unit label, digits
    ("held_growth", "held (RSS less malloc's free bytes)", KIB, "KiB/rep", 0),
    ("rss_growth", "RSS", KIB, "KiB/rep", 0),
    ("uss_growth", "USS", KIB, "KiB/rep", 0),
    ("retained_heap", "heap (memray)", KIB, "KiB/rep", 0),
    ("heap_used_growth", "malloc heap in use", KIB, "KiB/rep", 0),
    ("threads_growth", "threads", 1.0, "/rep", 1),
    ("open_files_growth", "open files", 1.0, "/rep", 1),
    ("python_objects_growth", "Python objects", 1.0, "/rep", 0),
    ("gpu_memory_growth", "GPU allocator in use", KIB, "KiB/rep", 0),  # only where TensorFlow sees a GPU
)


def check_view(rec: dict) -> list:
    """Renderables for one `leakbench check` record: verdict, series, types, attribution, stacks, hints."""
    from rich.text import Text

    d = rec.get("diagnosis") or {}
    word = rec["verdict"] + (f" (in {rec['phase']})" if rec.get("phase") else "")
    style = {"leak": "bold red", "no-leak": "bold green"}.get(rec["verdict"], "bold yellow")
    head = Text.assemble(("leakbench check ", "bold"), rec["pair"], ": ", (word, style))
    kind = d.get("target_kind")
    about = f"{rec['repetition']}" + (f" ({kind} target)" if kind else "")
    m = rec["metrics"] or {}
    peak = m.get("peak_above_baseline_bytes")
    facts = [about, f"signals: {', '.join(rec['signals']) or 'none'}",
             f"memory signal: {m.get('growth_basis') or '—'}",
             f"peak above baseline: {'—' if peak is None else f'{peak / MIB:,.1f} MiB'}",
             f"{rec['seconds']:.1f} s"]
    out: list = [head, Text(" · ".join(facts))]  # an error's one line goes to stderr (cli)
    if m:
        t = Table(title="series (Theil–Sen slope per repetition, 95 % interval, trend p)", title_justify="left")
        for h in ("series", "slope", "interval", "p", "unit"):
            t.add_column(h, justify="left" if h in ("series", "unit") else "right")
        for key, label, unit, unit_label, digits in CHECK_SERIES:
            found = m.get(key)
            if not found:
                continue
            t.add_row(label, f"{found['slope'] / unit:,.{digits}f}",
                      f"{found['low'] / unit:,.{digits}f} … {found['high'] / unit:,.{digits}f}",
                      f"{found['p_increasing']:.3f}", unit_label)
        scaling = m.get("peak_scaling")
        if scaling and scaling.get("exponent") is not None:
            peaks = ", ".join("—" if p is None else f"{p / MIB:,.0f}" for p in scaling["peaks_bytes"])
            t.add_row("peak ∝ size^k", f"k = {scaling['exponent']:.2f}", f"peaks {peaks} MiB", "", "")
        out.append(t)
    types = d.get("types") or []
    if types:
        t = Table(title="Python types that grew", title_justify="left")
        for h in ("type", "per rep", "baseline", "end"):
            t.add_column(h, justify="left" if h == "type" else "right")
        for item in types:
            t.add_row(escape(item["type"]), f"+{item['per_repetition']:,.1f}", f"{item['baseline']:,}",
                      f"{item['end']:,}")
        out.append(t)
    elif m:
        out.append(Text("Python types that grew: none (≥ 3 objects/repetition)"))
    confirmation = rec.get("confirmation")
    if confirmation:
        out.append(Text(f"confirmation: {confirmation['reps']} repetitions in a fresh process "
                        f"({confirmation['seconds']:.1f} s): moved {', '.join(confirmation['signals']) or 'nothing'}"))
    att = (d.get("attribution") or {}) if m else {}
    if "na" in att:
        out.append(Text(f"buffered bytes per transformation: n/a ({att['na']})"))
    elif att:
        first, last = att["elements"]
        after = f"{first} and {last} elements" if last != first else f"{first} elements"
        t = Table(title=f"buffered per transformation (get_model_proto after {after})",
                  title_justify="left")
        for h in ("stage", "count", "buffered MiB", "elements", "growth MiB"):
            t.add_column(h, justify="left" if h == "stage" else "right")
        for s in att["stages"][:8]:
            name = s["stage"] + (f" (inputs of {s['inside']})" if s["inside"] else "")
            t.add_row(escape(name), str(s["count"]), f"{s['buffered_bytes'] / MIB:,.1f}",
                      f"{s['buffered_elements']:,}", f"{s['growth_bytes'] / MIB:+,.1f}")
        out.append(t)
        holder = att.get("holder")
        out.append(Text(f"holds the most: {holder['stage']}, {holder['subtree_bytes'] / MIB:,.1f} MiB with its inputs"
                        if holder else "holds the most: nothing above 1 MiB"))
    stacks = d.get("top_stacks") or []
    if stacks:
        t = Table(title="largest live allocations at the end of the heap pass (memray, Python stacks)",
                  title_justify="left")
        for h in ("KiB", "allocations", "stack (innermost first)"):
            t.add_column(h, justify="right" if h != "stack (innermost first)" else "left")
        for s in stacks:
            t.add_row(f"{s['bytes'] / KIB:,.0f}", f"{s['allocations']:,}", escape(" ← ".join(s["frames"][:4]) or "no Python frame (allocated by a TensorFlow thread)"))
        out.append(t)
    for hint in d.get("hints") or []:
        out.append(Text(f"hint: {hint}"))
    return out


def check_summary(rec: dict) -> str:
    """Plain text of a check record's verdict, slopes and hints (for assertion messages)."""
    m = rec["metrics"] or {}
    parts = [f"{rec['pair']}: {rec['verdict']}" + (f" in {rec['phase']}" if rec.get("phase") else "")]
    if rec.get("error"):
        parts.append(f"error: {rec['error'].strip().splitlines()[-1]}")
    parts.append(f"signals: {', '.join(rec['signals']) or 'none'}")
    if rec.get("confirmation"):
        parts.append(f"confirmation: moved {', '.join(rec['confirmation']['signals']) or 'nothing'}")
    for key, label, unit, unit_label, digits in CHECK_SERIES:
        if m.get(key):
            parts.append(f"{label} {m[key]['slope'] / unit:,.{digits}f} {unit_label}")
    parts += [f"hint: {h}" for h in (rec.get("diagnosis") or {}).get("hints", [])]
    return "\n".join(parts)
