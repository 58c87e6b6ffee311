"""Views of records: the table people read. Records themselves stay data."""
from __future__ import annotations

from rich.markup import escape
from rich.table import Table

KIB, MIB = 1 << 10, 1 << 20


def _slope(metrics: dict, key: str, unit: float = 1.0, digits: int = 0) -> str:
    found = metrics.get(key)
    return "—" if not found else f"{found['slope'] / unit:,.{digits}f}"


def row(rec: dict) -> list[str]:
    """Cells of one record: pair, variant, peak MiB, growth KiB/rep, heap KiB/rep,
    threads/rep, peak scaling exponent, signals, verdict, seconds."""
    m = rec["metrics"]
    peak = m.get("peak_above_baseline_bytes")
    scaling = m.get("peak_scaling") or {}
    exponent = scaling.get("exponent")
    word = rec["verdict"] + (f" ({rec['phase']})" if rec.get("phase") else "")
    return [
        rec["pair"], rec["variant"],
        "—" if peak is None else f"{peak / MIB:,.1f}",
        _slope(m, "rss_growth", KIB),
        _slope(m, "retained_heap", KIB),
        _slope(m, "threads_growth", 1.0, 1),
        "—" if exponent is None else f"{exponent:.2f}",
        ", ".join(rec["signals"]) or "—",
        word,
        f"{rec['seconds']:.1f}",
    ]


def expected_ok(rec: dict, expected: str) -> bool:
    """Whether a record's verdict is what its variant should give.

    A leaky variant may also end over-cap (its leak, cut short by the cap), or
    hang in teardown after its signals moved: freeing what it leaked stalled.
    """
    if rec["verdict"] == expected:
        return True
    teardown_stall = rec["verdict"] == "hang" and rec.get("phase") == "teardown" and rec["signals"]
    return expected == "leak" and (rec["verdict"] == "over-cap" or bool(teardown_stall))


def table(records: list[tuple[dict, str]]) -> Table:
    """A rich Table of (record, expected verdict) pairs; unexpected verdicts in red.

    Columns: peak above baseline (MiB), RSS growth and retained heap
    (KiB/repetition, Theil–Sen slopes), threads/repetition, the exponent k of
    peak ∝ size^k (peak scenarios), the signals that moved, verdict, seconds.
    """
    t = Table(title="leakbench: memory per scenario variant", title_justify="left")
    headers = ["pair", "variant", "peak MiB", "RSS KiB/rep", "heap KiB/rep",
               "threads/rep", "peak ∝ size^k", "signals", "verdict", "seconds"]
    for i, h in enumerate(headers):
        t.add_column(h, justify="right" if 2 <= i <= 6 or i == 9 else "left")
    for rec, expected in records:
        cells = [escape(c) for c in row(rec)]
        style = "green" if expected_ok(rec, expected) else "bold red"
        cells[8] = f"[{style}]{cells[8]}[/]"
        t.add_row(*cells)
    return t


def listing(scenarios) -> Table:
    """A rich Table of scenarios: name, kind, seed source, size parameter=default, title."""
    t = Table(title="leakbench: scenario pairs (scenarios/ leaky, fixes/ fixed)", title_justify="left")
    for h in ("pair", "kind", "source", "size parameter", "title"):
        t.add_column(h)
    for s in scenarios:
        # Text from scenario files is escaped: "[...]" would otherwise be read as rich markup.
        t.add_row(*map(escape, (s.name, s.kind, s.source, f"{s.size_param}={s.params[s.size_param]}", s.title)))
    return t
