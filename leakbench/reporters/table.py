"""The run table: one row per measured variant, as `leakbench run` prints it.

By default the few columns a person decides on, within 120 characters: pair,
variant, verdict, what the variant should read (leakbench.expectation), the
signal and number the verdict rests on (the record's decision,
leakbench.analysis.judge.decision), the registry's TABLE metrics (peak above
baseline, MiB) and seconds. `wide=True` adds the signals and the registry's
WIDE metrics (leakbench.metrics), and is what the markdown table written with
`leakbench run --format markdown` writes. Records themselves stay data.
"""

from __future__ import annotations

from rich import box
from rich.markup import escape
from rich.table import Table

from leakbench import expectation, metrics
from leakbench.analysis.judge import decision, in_words
from leakbench.analysis.record_type import Record
from leakbench.metric_type import Metric
from leakbench.reporters import markdown_table

LEFT = ("pair", "variant", "verdict", "should read", "signals", "decided by")  # text columns
SHORT = metrics.metrics_in(metrics.TABLE)  # in every table, headed by their short names
WIDE = metrics.metrics_in(metrics.WIDE)  # what the wide table adds


def _word(rec: Record) -> str:
    word = rec["verdict"] + (f" ({rec['phase']})" if rec.get("phase") else "")
    # teardown passed its timeout
    return word + (" (stalled)" if rec.get("teardown_stalled") else "")


def decided_by(rec: Record) -> str:
    """The signal and number the verdict rests on: the record's decision
    (analysis.judge.in_words.number), e.g. "held +4,137 KiB/rep", "peak +91.0 MiB, k=1.08"."""
    return in_words.number(decision.of(rec))


def _metric(rec: Record, metric: Metric) -> str:
    if metric.mallinfo2 and (rec["metrics"] or {}).get("malloc_heap_unavailable"):
        return "n/a"  # glibc's counters do not describe another allocator's heap
    return metric.display(decision.value(rec, metric.key))


def columns(wide: bool = False) -> list[str]:
    """Column headers of the run table (see the module docstring)."""
    head = (
        ["pair", "variant", "verdict", "should read"]
        + (["signals"] if wide else [])
        + ["decided by"]
    )
    return (
        head
        + [f"{m.short} {m.shown}" for m in SHORT]
        + [f"{m.label} {m.shown}" for m in (WIDE if wide else ())]
        + ["seconds"]
    )


def row(rec: Record, wide: bool = False) -> list[str]:
    """Cells of one record, in the order of columns(wide)."""
    head = [rec["pair"], rec["variant"], _word(rec), expectation.for_record(rec).label]
    head += ([", ".join(rec["signals"]) or "—"] if wide else []) + [decided_by(rec)]
    return (
        head
        + [_metric(rec, m) for m in SHORT]
        + [_metric(rec, m) for m in (WIDE if wide else ())]
        + [f"{rec['seconds']:.1f}"]
    )


def table(records: list[Record], wide: bool = False) -> Table:
    """A rich Table of records (see the module docstring);
    a verdict the variant should not read in red."""
    t = Table(title="leakbench: memory per scenario variant", title_justify="left")
    for h in columns(wide):
        t.add_column(h, justify="left" if h in LEFT else "right")
    for rec in records:
        cells = [escape(c) for c in row(rec, wide)]
        style = "green" if expectation.accepts(rec) else "bold red"
        cells[2] = f"[{style}]{cells[2]}[/]"
        t.add_row(*cells)
    return t


def markdown(records: list[Record], title: str) -> str:
    """The wide table in markdown, with the child seconds summed: `run --format markdown`."""
    head = columns(wide=True)
    rows = []
    for rec in records:
        cells = row(rec, wide=True)
        if not expectation.accepts(rec):
            cells[2] = f"**{cells[2]}**"
        rows.append(cells)
    lines = [f"## {title}", ""] + markdown_table(
        head, rows, "".join("l" if h in LEFT else "r" for h in head)
    )
    accepted = sum(expectation.accepts(r) for r in records)
    lines += [
        "",
        f"{accepted} of {len(records)} variants read what they should (bold: not); "
        f"{sum(r['seconds'] for r in records):,.0f} s of child runs. "
        "Columns: leakbench.reporters.table; rates per "
        "repetition, as leakbench.metrics defines them.",
    ]
    return "\n".join(lines) + "\n"


LIST_WIDTH = 120  # `leakbench list` fits in this many columns


def listing(scenarios) -> Table:
    """A rich Table of scenarios within LIST_WIDTH columns: pair with its size parameter=default
    below it, kind (and the device it needs, REQUIRES), seed source, and the title, wrapped; a rule
    between pairs."""
    rows = []
    for s in scenarios:
        # REQUIRES: skipped without one
        kind = f"{s.kind}\nneeds a {s.requires}" if s.requires else s.kind
        rows.append((s.name, f"{s.size_param}={s.params[s.size_param]}", kind, s.source, s.title))
    head = ("pair / size parameter", "kind", "source")
    # the title takes what the other columns leave: each has a space either side, and a space
    # stands at each edge and between columns (box.SIMPLE_HEAD)
    widths = [
        max([len(h), *(len(line) for r in rows for line in cells(r).split("\n"))])
        for h, cells in zip(head, (lambda r: f"{r[0]}\n{r[1]}", lambda r: r[2], lambda r: r[3]))
    ]
    t = Table(
        title="leakbench: scenario pairs (scenarios/ leaky, fixes/ fixed)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_lines=True,
    )
    for h in head:
        t.add_column(h, no_wrap=True)
    t.add_column("title", max_width=max(20, LIST_WIDTH - sum(widths) - 3 * len(head) - 4))
    for name, size, kind, source, title in rows:
        # Text from scenario files is escaped: "[...]" would otherwise be read as rich markup.
        t.add_row(f"{escape(name)}\n[dim]{escape(size)}[/]", *map(escape, (kind, source, title)))
    return t
