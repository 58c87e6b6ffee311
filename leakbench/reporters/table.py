"""The run table: one row per measured variant, as `leakbench run` prints it.

By default the few columns a person decides on, within 120 characters: pair,
variant, verdict, what the variant should read, the signals that moved, the
number the verdict rests on (the rate of the memory signal, KiB/repetition,
verdict.rate; k of peak ∝ size^k for a peak pair), peak above baseline
(MiB) and seconds. `wide=True` adds every metric (leakbench.metrics) and is
what the markdown table written with `leakbench run --markdown` holds.
Records themselves stay data.
"""
from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from leakbench import expectation, metrics
from leakbench.history.matrix import memory_rate
from leakbench.units import KIB

# Metrics the wide table adds, in this order (registry keys).
WIDE = ("held_growth", "rss_growth", "malloc_heap_growth", "trim_returned_bytes", "retained_heap",
        "threads_growth", "python_objects_growth")


def _word(rec: dict) -> str:
    word = rec["verdict"] + (f" ({rec['phase']})" if rec.get("phase") else "")
    return word + (" (teardown stalled)" if rec.get("teardown_stalled") else "")


def decided_by(rec: dict) -> str:
    """The number the verdict rests on: "k=0.87" for a peak pair, else the memory rate in KiB/rep."""
    scaling = (rec["metrics"] or {}).get("peak_scaling") or {}
    if rec.get("kind") == "peak" and scaling.get("exponent") is not None:
        return f"k={scaling['exponent']:.2f}"
    found = memory_rate(rec) if rec["metrics"] else None
    return "—" if found is None else f"{found / KIB:+,.0f}"


def _metric(rec: dict, key: str) -> str:
    m = rec["metrics"] or {}
    if key in ("held_growth", "malloc_heap_growth") and m.get("malloc_heap_unavailable"):
        return "n/a"
    return metrics.BY_KEY[key].display(metrics.value(rec, key))


def columns(wide: bool = False) -> list[str]:
    """Column headers of the run table (see the module docstring)."""
    head = ["pair", "variant", "verdict", "expected", "signals", "decided by", "peak MiB", "seconds"]
    if not wide:
        return head
    return head[:7] + [f"{metrics.BY_KEY[k].label} {metrics.BY_KEY[k].shown}" for k in WIDE] + head[7:]


def row(rec: dict, wide: bool = False) -> list[str]:
    """Cells of one record, in the order of columns(wide)."""
    cells = [rec["pair"], rec["variant"], _word(rec), expectation.for_record(rec).label,
             ", ".join(rec["signals"]) or "—", decided_by(rec),
             metrics.BY_KEY["peak_above_baseline_bytes"].display(metrics.value(rec, "peak_above_baseline_bytes"))]
    if wide:
        cells += [_metric(rec, k) for k in WIDE]
    return cells + [f"{rec['seconds']:.1f}"]


def table(records: list[dict], wide: bool = False) -> Table:
    """A rich Table of records (see the module docstring); a verdict the variant should not read in red."""
    t = Table(title="leakbench: memory per scenario variant", title_justify="left")
    for h in columns(wide):
        t.add_column(h, justify="left" if h in ("pair", "variant", "signals", "verdict", "expected") else "right")
    for rec in records:
        cells = [escape(c) for c in row(rec, wide)]
        style = "green" if expectation.accepts(rec) else "bold red"
        cells[2] = f"[{style}]{cells[2]}[/]"
        t.add_row(*cells)
    return t


def markdown(records: list[dict], title: str) -> str:
    """The wide table in markdown, with the child seconds summed: what `run --markdown` writes."""
    head = columns(wide=True)
    lines = [f"## {title}", "", "| " + " | ".join(head) + " |",
             "|" + "|".join("---" if h in ("pair", "variant", "verdict", "expected", "signals") else "---:"
                            for h in head) + "|"]
    for rec in records:
        cells = row(rec, wide=True)
        if not expectation.accepts(rec):
            cells[2] = f"**{cells[2]}**"
        lines.append("| " + " | ".join(cells) + " |")
    accepted = sum(expectation.accepts(r) for r in records)
    lines += ["", f"{accepted} of {len(records)} variants read what they should (bold: not); "
              f"{sum(r['seconds'] for r in records):,.0f} s of child runs. "
              "Columns: leakbench.reporters.table; rates per repetition, as leakbench.metrics defines them."]
    return "\n".join(lines) + "\n"


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
