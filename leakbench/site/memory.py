"""Where the memory is: a lesson's decomposition chart, one per variant, leaky
and fixed side by side on the same axes.

From a record's default-size run (rec["runs"][0]) it draws, over the measured
repetitions, in MiB above the process before setup (run["import_baseline"]):
the registry's MEMORY series (leakbench.metrics: RSS, malloc in use, malloc's
free bytes and held memory, RssAnon less those free bytes), memray's heap
(its MEMORY metric) over its own heap-pass repetitions (run["heap"]["heap_bytes"],
from 0 at the pass's start), and the malloc_trim drop (run["trim"]) after the
last repetition. A leak rises in held memory; fragmentation rises in the free
bytes and malloc_trim takes it back. Where glibc's counters are n/a (jemalloc,
tcmalloc: the mallinfo2 series are None) the chart says so. Lines go by the
registry's short names; colours: leakbench.site.colours.
"""

from __future__ import annotations

from markupsafe import Markup

from leakbench import metrics
from leakbench.analysis.record_type import Record
from leakbench.analysis.schema import first_run
from leakbench.site import colours, svg
from leakbench.units import MIB, format_bytes, in_unit

_SERIES = metrics.SERIES_BY_NAME
# (key in decomposition()["lines"]: the series' short name, sample series), in the order drawn
LINES = tuple((s.short, s.name) for s in metrics.series_in(metrics.MEMORY) if s.short)
# n/a under another allocator
GLIBC = tuple(s.short for s in metrics.SERIES if s.short and s.mallinfo2 and s.short in dict(LINES))
assert metrics.HELD.series is not None  # held memory is the trend of a sample series
_held = _SERIES[metrics.HELD.series].short
(_HEAP,) = metrics.metrics_in(metrics.MEMORY)  # memray's heap, from its own pass
# the chart's lines are named (Series.short, Metric.short): a None here is a registry bug
assert _held is not None and metrics.RSS.series is not None and _HEAP.short is not None
HELD: str = _held  # the line the verdict rests on: drawn thicker
RSS: str = metrics.RSS.series  # its sample series gives the repetitions and the trim's origin
HEAP: str = _HEAP.short
LABELS = {key: _SERIES[name].label for key, name in LINES} | {HEAP: _HEAP.label}
HELP = {key: _SERIES[name].help for key, name in LINES} | {
    HEAP: (
        "the bytes memray sees allocated and not freed, from "
        "its own pass (fewer repetitions), from 0 at its start"
    )
}
# what is n/a, in words
NA_LABEL = ", ".join(LABELS[k] for k in GLIBC[:-1]) + f" and {LABELS[GLIBC[-1]]}"
NO_MALLOC_VALUES = "the record has no malloc heap values"
Y_LABEL = "MiB above the process before setup"


def malloc_unavailable(rec: Record | None) -> str | None:
    """Why a record's malloc counters are n/a
    (probes.malloc_heap_unavailable, as the record keeps it:
    on its first run, else in its metrics), else None. rec: a record, or None."""
    if not rec:
        return None
    return first_run(rec).get("malloc_heap_unavailable") or (rec.get("metrics") or {}).get(
        "malloc_heap_unavailable"
    )


def legend() -> list[tuple]:
    """The chart's keys as its legend lists them: [(short
    name, (label, help), dashed)], the heap last."""
    return [(k, (LABELS[k], HELP[k]), k == HEAP) for k in (*(k for k, _ in LINES), HEAP)]


def _origin(run: dict, name: str) -> float | None:
    base = run.get("import_baseline") or run.get("baseline") or {}
    parts = _SERIES[name].sum_of  # a sum older records' baselines lack: add up its parts
    if parts and base.get(name) is None:
        found = [v for p in parts if (v := base.get(p)) is not None]
        return sum(found) if len(found) == len(parts) else None
    return base.get(name)


def decomposition(rec: Record | None) -> dict:
    """What one variant's chart draws, from a record's first (default-size) run.

    Returns {"lines": {key of LINES: [bytes above the import baseline, or None per repetition]}
    ([] where the series or its baseline value is missing), "heap": [bytes, per heap repetition],
    "trim": (before, after) in bytes above the baseline RSS, or None, "reps": measured repetitions,
    "na": why glibc's counters are n/a (NO_MALLOC_VALUES when their series hold no value), or None};
    {} for None or a record without runs. A missing key is read as absent; raises TypeError only for
    a value that is no number.
    """
    if not rec or not rec.get("runs"):
        return {}
    run = rec["runs"][0]
    series = run.get("series") or {}
    lines = {}
    for key, name in LINES:
        values, origin = series.get(name) or [], _origin(run, name)
        lines[key] = [] if origin is None else [None if v is None else v - origin for v in values]
    why = malloc_unavailable(rec)
    if not why and not any(v is not None for key in GLIBC for v in lines[key]):
        why = NO_MALLOC_VALUES
    trim, rss0 = run.get("trim") or {}, _origin(run, RSS)
    before, after = trim.get("rss_before_trim_bytes"), trim.get("rss_after_trim_bytes")
    return {
        "lines": lines,
        "heap": list((run.get("heap") or {}).get("heap_bytes") or []),
        "trim": (
            None
            if before is None or after is None or rss0 is None
            else (before - rss0, after - rss0)
        ),
        "reps": len(series.get(RSS) or []),
        "na": why,
    }


def _span(values: list) -> str | None:
    """A line in words, from its values alone (no slope, no bar: the verdict and its number are
    the record's decision): "from 10 to 54 MiB (lowest 9, highest 55)"."""
    known = [v for v in values if v is not None]
    if not known:
        return None
    mib = [format_bytes(v, unit=MIB, digits=0, label=False) for v in (known[0], known[-1])]
    low, high = (format_bytes(v, unit=MIB, digits=0, label=False) for v in (min(known), max(known)))
    edge = "" if {low, high} <= set(mib) else f" (lowest {low}, highest {high})"
    return f"from {mib[0]} to {mib[1]} MiB{edge}"


def _words(key: str, values: list) -> str | None:
    span = _span(values)
    return f"{LABELS[key]} {span}" if span else None


def describe(variant: str, found: dict) -> str:
    """The chart's alt text, e.g. "leaky variant, 12 repetitions, MiB above the process before
    setup: held memory from 10 to 54 MiB; ...; malloc_trim gives back 2.5 MiB"."""
    if not found:
        return f"{variant} variant: not measured"
    # from the top line down: the reverse of the order drawn (held memory first)
    parts = [w for key, _ in reversed(LINES) if (w := _words(key, found["lines"][key]))]
    if found["na"]:
        parts.insert(0, f"{NA_LABEL} are n/a")
    heap = _span(found["heap"])
    if heap:
        parts.append(f"memray heap {heap}")
    if found["trim"]:
        parts.append(
            f"malloc_trim gives back {format_bytes(found['trim'][0] - found['trim'][1], unit=MIB)}"
        )
    return f"{variant} variant, {found['reps']} repetitions, {Y_LABEL}: " + "; ".join(parts)


def _limits(found: dict) -> tuple[float, float]:
    values = [
        v
        for f in found.values()
        if f
        for line in (*f["lines"].values(), f["heap"], f["trim"] or ())
        for v in line
        if v is not None
    ]
    low, high = in_unit(min([0.0, *values]), MIB), in_unit(max([1.0, *values]), MIB)
    pad = (high - low) * 0.06
    return low - pad, high + pad


def charts(found: dict) -> dict[str, Markup] | None:
    """One inline SVG per variant of `found` (variant -> decomposition()), all on the same y range.

    Returns {variant: Markup}, or None when matplotlib is missing or no variant has a value.
    A variant not measured gets a chart saying so; where glibc's counters are n/a, its chart says
    so in place of those lines (the reason is the page's
    to print, escaped). Raises nothing of its own.
    """
    if not any(f and any(f["lines"].values()) for f in found.values()):
        return None
    plt = svg.pyplot()
    if plt is None:
        return None
    low, high = _limits(found)
    reps = max(max(f["reps"], len(f["heap"])) if f else 1 for f in found.values())
    drawn = {}
    for variant, f in found.items():
        with svg.style():
            fig, ax = plt.subplots(figsize=(4.2, 3.1), layout="constrained")
            _draw_lines(ax, f)
            _draw_trim(ax, f, reps)
            _draw_message(ax, f)
            ax.set_xlim(0.5, reps + 3.2)
            ax.set_xticks(range(2, reps + 1, 2) if reps > 6 else range(1, reps + 1))
            ax.set_ylim(low, high)
            ax.set_title(
                f"{variant}: where the memory is",
                color=colours.VARIANTS.get(variant, colours.MUTED),
                fontweight="bold",
            )
            ax.set_xlabel("measured repetition")
            ax.set_ylabel(Y_LABEL)
            ax.grid(alpha=0.3)
            # all five, always
            fig.legend(loc="outside lower center", ncol=3, frameon=False, fontsize=7.5)
            drawn[variant] = svg.inline(fig, f"mem-{variant}", describe(variant, f))
    return drawn


def _draw_lines(ax, f: dict | None) -> None:
    """The memory series of one variant's decomposition (LINES, held thickest), and memray's heap
    from its own pass (dashed), each in MiB per measured repetition."""
    for key, _ in LINES:
        values = (f or {}).get("lines", {}).get(key) or []
        points = [(i + 1, in_unit(v, MIB)) for i, v in enumerate(values) if v is not None]
        ax.plot(
            *(zip(*points) if points else ([], [])),
            marker="o",
            markersize=2.5,
            linewidth=2.6 if key == HELD else 1.4,
            color=colours.SERIES[key],
            label=LABELS[key],
        )
    heap = [
        (i + 1, in_unit(v, MIB)) for i, v in enumerate((f or {}).get("heap") or []) if v is not None
    ]
    ax.plot(
        *(zip(*heap) if heap else ([], [])),
        linestyle="--",
        marker="s",
        markersize=2.5,
        linewidth=1.2,
        color=colours.SERIES[HEAP],
        label=f"{LABELS[HEAP]} (own pass)",
    )


def _draw_trim(ax, f: dict | None, reps: int) -> None:
    """The arrow of what malloc_trim gave back after the last repetition, where it ran."""
    if f and f["trim"]:
        x, (before, after) = reps + 0.7, f["trim"]
        ax.annotate(
            "",
            xy=(x, in_unit(after, MIB)),
            xytext=(x, in_unit(before, MIB)),
            arrowprops={
                "arrowstyle": "-|>",
                "color": colours.SERIES["trim"],
                "linewidth": 1.4,
            },
        )
        ax.text(
            x + 0.2,
            in_unit((before + after) / 2, MIB),
            f"malloc_trim\n−{format_bytes(before - after, unit=MIB, label=False)}\nMiB",
            ha="left",
            va="center",
            fontsize=7,
            color=colours.SERIES["trim"],
        )


def _draw_message(ax, f: dict | None) -> None:
    """The chart's note where there are no lines to read: not measured, or glibc's counters n/a."""
    message = (
        "not measured"
        if not f
        else ("held, malloc in use, free: n/a\n(another allocator: see below)" if f["na"] else "")
    )
    if message:
        ax.text(
            0.5,
            0.62,
            message,
            transform=ax.transAxes,
            ha="center",
            va="center",
            color=colours.MUTED,
        )
