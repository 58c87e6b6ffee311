"""The repeatability table in markdown, from the result leakbench.repeat.repeatability writes.

Nothing is measured or decided here: one row per pair × variant with its
expected verdict, the verdicts of its runs, the number they rest on (the
decision of the run in the middle, in_words.words, and the range over runs),
whether they agree and were as expected, and each decisive metric's median
rate over runs with its min–max,
in readable units: KiB/repetition for bytes, the metric's own unit per
repetition otherwise (objects, threads, file descriptors), the exponent k in
peak ∝ size^k for peak pairs.

The pieces (`about`, `table`, `totals`, `verdict_counts`) are text, not
markdown: leakbench.site.repeatability renders the same table as HTML from them.
"""

from __future__ import annotations

from leakbench.analysis.judge import in_words
from leakbench.reporters import markdown_table
from leakbench.units import KIB, format_bytes


def _unit(signal: str, unit: str | None) -> tuple[str, int | None]:
    """(column header, byte unit) for a decisive metric: "held KiB/rep" and KIB for bytes,
    "threads/rep" and None for a count (units as records give them: "bytes/repetition", ...)."""
    if unit and unit.startswith("bytes"):
        return f"{signal} KiB/rep", KIB
    return f"{signal}/rep", None


def _number(x: float, unit: int | None, digits: int) -> str:
    """A rate in its column's unit (bytes through format_bytes), no decimals from 100 on."""
    if unit is None:
        return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.{digits}f}"
    return format_bytes(x, unit=unit, digits=0 if abs(x) >= 100 * unit else digits, label=False)


def _cell(spread: dict | None, unit: int | None = None, digits: int = 1) -> str:
    """median (min–max) over runs; the median alone for one run; — for none."""
    if not spread or spread["median"] is None:
        return "—"
    median = _number(spread["median"], unit, digits)
    if spread["n"] < 2:
        return median
    return (
        f"{median} ({_number(spread['min'], unit, digits)}–{_number(spread['max'], unit, digits)})"
    )


def verdict_counts(counts: dict, runs: int) -> list[tuple[str, str]]:
    """(verdict, count): [("leak", "10/10")] when every
    run agrees, else [("no-leak", "9"), ("leak", "1")]."""
    if len(counts) == 1:
        ((word, n),) = counts.items()
        return [(word, f"{n}/{runs}")]
    return [(word, str(n)) for word, n in counts.items()]


def verdicts(found: list[tuple[str, str]]) -> str:
    """verdict_counts as one cell: "leak 10/10", or "no-leak 9, leak 1"."""
    return ", ".join(f"{word} {n}" for word, n in found)


DECIDED_HEADER = "the number it rests on: median run (range)"


def rests_on(row: dict) -> str:
    """A row's `decided` as one cell: its median run's decision as every view shows it
    (in_words.words) and the range over runs; with more than one verdict or deciding metric,
    each with its verdict and runs. — where the runs kept no decision."""
    entries = row.get("decided") or []
    mixed = len(entries) > 1
    parts = []
    for e in entries:
        text = in_words.words(e["median"], verdict=mixed)
        if e["runs"] > 1 and e["min"] is not None and e["min"] != e["max"]:
            low, high = (in_words.amount(e["median"], e[end]) for end in ("min", "max"))
            text += f" ({low} to {high})"
        parts.append(f"{text}, {e['runs']} run{'s' if e['runs'] > 1 else ''}" if mixed else text)
    return "; ".join(parts) or "—"


def columns(rows: list[dict]) -> list[tuple[str, str, int | None]]:
    """(metric key, header, byte unit or None) of the decisive
    metrics measured in some row, in first-seen order."""
    found = {}
    for row in rows:
        for key, s in row["slopes"].items():
            if s["median"] is not None and key not in found:
                found[key] = (key, *_unit(s["signal"], s["unit"]))
    return list(found.values())


SLOPES = (
    "The number it rests on: the number each run's verdict rests on (docs/verdicts.md, "
    '"The number beside a verdict"), shown for the run in the middle by that number, with '
    "the least and greatest over the runs. "
    "Rates: per repetition, median (min–max) over runs, of each growth signal that can "
    "decide the verdict (leakbench.analysis.judge.verdict), whichever decided, each the rate "
    "compared with its bar: "
    "the least of the Theil–Sen slope of the whole series and of each half (verdict.rate). "
    "Agrees: one verdict in every run (skipped "
    "counts as agreeing). As expected: every verdict is one its variant should give."
)
PEAK_HEADER = "peak ∝ size^k"


def tensorflow(result: dict) -> str:
    """The TensorFlow versions the runs imported ("none" when none did)."""
    return ", ".join(result["summary"]["tensorflow"] or [result.get("tensorflow") or "none"])


def about(result: dict) -> str:
    """How the runs were made: runs per variant, children at a time, date, engine settings."""
    s, caps, jobs = result["settings"], result["summary"]["cap_bytes"], result["jobs"]
    cap = (
        format_bytes(s["cap_bytes"], whole=True)
        if s["cap_bytes"]
        else "default"
        + (f" ({', '.join(format_bytes(c, whole=True) for c in caps)})" if caps else "")
    )
    return (
        f"{result['runs_requested']} runs per variant, each a fresh child process "
        f"(leakbench.measure), round-robin, {jobs} {'child' if jobs == 1 else 'children'} at a time"
        f"{_beside(result)}; "
        f"{(result.get('updated') or '')[:10]}. Engine settings: warm-up {s['warmup']}, "
        f"{s['reps']} measured repetitions, heap pass {s['heap_reps']}, "
        f"cap {cap}, timeout {s['timeout_seconds']:g} s, "
        f"peak sizes × {', '.join(f'{x:g}' for x in s['scales'])}."
    )


def _beside(result: dict) -> str:
    """What ran beside the runs: the CPU hog, and the 1-minute load average as runs ended."""
    hog = result.get("cpu_hog")
    load = result["summary"].get("load_average") or {}
    text = f", with a CPU hog of {hog} busy processes beside them" if hog else ""
    if load.get("median") is not None:
        text += f" (load average {load['median']:.1f}, {load['min']:.1f}–{load['max']:.1f})"
    return text


def table(result: dict) -> tuple[list[str], list[dict]]:
    """The slope columns' headers, and a row per pair × variant: its summary row's pair, variant,
    expected, runs, agrees and as_expected, with "verdicts" as verdict_counts gives them and
    "slopes", one text cell per header (median (min–max), in the header's unit)."""
    rows = result["summary"]["rows"]
    metrics = columns(rows)
    peak = any(r["peak_exponent"]["median"] is not None for r in rows)
    head = [m[1] for m in metrics] + ([PEAK_HEADER] if peak else [])
    shaped = []
    for r in rows:
        cells = [_cell(r["slopes"].get(key), unit) for key, _, unit in metrics]
        cells += [_cell(r["peak_exponent"], digits=2)] if peak else []
        shaped.append(
            {
                **{
                    k: r[k]
                    for k in ("pair", "variant", "expected", "runs", "agrees", "as_expected")
                },
                "verdicts": verdict_counts(r["verdicts"], r["runs"]),
                "decided": rests_on(r),
                "slopes": cells,
            }
        )
    return head, shaped


def totals(result: dict) -> str:
    """How many variants agree and were as expected, runs and seconds."""
    summary = result["summary"]
    confirm = summary["confirmation_seconds"]
    return (
        f"{summary['agree']} of {summary['variants']} variants agree over all runs; "
        f"{summary['as_expected']} of {summary['variants']} gave an expected verdict in every run. "
        f"{summary['runs']} runs, {summary['wall_seconds']:,.0f} s of child wall time"
        + (f" ({confirm:,.0f} s of it confirmation re-runs)" if confirm else "")
        + f", {result['elapsed_seconds']:,.0f} s elapsed."
    )


# Issue 42's margins for a peak pair over the runs: the leaky side's lowest rise at least 1.5 ×
# its bar, the fixed side's highest at most half of it, so neither side's spread reaches the bar.
LEAKY_MARGIN = 1.5
FIXED_MARGIN = 0.5


def peak_margins(result: dict) -> list[str]:
    """One line per peak pair (a pair whose runs decided on the peak): the leaky side's lowest
    rise and the fixed side's highest over the runs, each as a multiple of the bar, and whether
    it keeps its margin (LEAKY_MARGIN, FIXED_MARGIN). Empty where no run decided on the peak."""
    rises: dict[str, dict[str, list[float]]] = {}  # pair -> variant -> every run's peak rise
    bars: dict[str, float] = {}
    for row in result["summary"]["rows"]:
        for e in row.get("decided") or []:
            d = e["median"]
            if d.get("signal") != "peak" or not d.get("bar"):
                continue
            ends = [x for x in (e["min"], e["max"], d["value"]) if x is not None]
            rises.setdefault(row["pair"], {}).setdefault(row["variant"], []).extend(ends)
            bars[row["pair"]] = d["bar"]
    lines = []
    for pair, found in rises.items():
        parts, bar = [], bars[pair]
        if "leaky" in found:
            low = min(found["leaky"])
            ok = low >= LEAKY_MARGIN * bar
            parts.append(
                f"leaky lowest {format_bytes(low)} = {low / bar:.2f} × the bar"
                f" ({'≥' if ok else 'UNDER'} {LEAKY_MARGIN:g})"
            )
        if "fixed" in found:
            high = max(found["fixed"])
            ok = high <= FIXED_MARGIN * bar
            parts.append(
                f"fixed highest {format_bytes(high)} = {high / bar:.2f} × the bar"
                f" ({'≤' if ok else 'OVER'} {FIXED_MARGIN:g})"
            )
        lines.append(f"- {pair} (bar {format_bytes(bar, whole=True)}): " + "; ".join(parts))
    return lines


MARGINS = (
    "Peak margins over the runs: a leaky side's lowest rise should be at least "
    f"{LEAKY_MARGIN:g} × the bar and a fixed side's highest at most {FIXED_MARGIN:g} × it, so "
    "neither side's spread reaches the bar."
)


def markdown(result: dict) -> str:
    """The header (TF version, machine, runs, jobs, date, settings), the table and the totals."""
    slopes, rows = table(result)
    lines = [
        f"## Repeatability: {result['machine']}, TensorFlow {tensorflow(result)}",
        "",
        about(result),
        "",
        SLOPES,
        "",
    ]
    head = ["pair", "variant", "expected", "verdicts", DECIDED_HEADER, "agrees", "as expected"]
    head += slopes
    lines += markdown_table(
        head,
        (
            [
                r["pair"],
                r["variant"],
                r["expected"],
                verdicts(r["verdicts"]),
                r["decided"],
                "yes" if r["agrees"] else "NO",
                "yes" if r["as_expected"] else "NO",
                *r["slopes"],
            ]
            for r in rows
        ),
        "l" * 7 + "r" * len(slopes),
    )
    lines += ["", totals(result)]
    margins = peak_margins(result)
    if margins:
        lines += ["", MARGINS, "", *margins]
    return "\n".join(lines) + "\n"
