"""What the pages show of a pair: a lesson's data (its files side by side and
as a short diff, its docstring as prose, its charts (memory, stacks, counts), its
stages and reference chains, its rows per TF version,
the signals that moved) and the matrix's cells.

Labels, units and help texts come from leakbench.metrics; what a verdict
means from leakbench.analysis.judge.verdict.VERDICTS; whether a record reads what its
variant should from leakbench.expectation. Everything returned is plain data
for the templates, which escape it; prose() alone returns Markup (escaped here).
"""

from __future__ import annotations

import ast
import difflib
import re
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape

from leakbench import catalog, contract, expectation, metrics
from leakbench.analysis.judge import decision, in_words, verdict
from leakbench.analysis.record_type import Record
from leakbench.metric_type import Metric
from leakbench.site import charts, memory, stacks, stages

ISSUE_URL = "https://github.com/{repo}/issues/{number}"
_REPORT = re.compile(r"\b([\w.-]+/[\w.-]+)#(\d+)\b")
# The lesson's table per TF version: the registry's LESSON metrics, then the peak exponent k.
HISTORY = metrics.metrics_in(metrics.LESSON)


def source_link(source: str) -> str | None:
    """'owner/repo#123' -> "https://github.com/owner/repo/issues/123";
    None for a seed source word."""
    match = _REPORT.fullmatch(source or "")
    return match and ISSUE_URL.format(repo=match.group(1), number=match.group(2))


def prose(text: str) -> Markup:
    """A docstring as escaped HTML paragraphs (one per blank-line-separated block), `code` as
    <code> and owner/repo#N reports linked to their GitHub issue."""
    out = []
    for para in re.split(r"\n\s*\n", (text or "").strip()):
        if not para.strip():
            continue
        html = str(escape(" ".join(line.strip() for line in para.splitlines())))
        html = re.sub(r"`([^`]+)`", r"<code>\1</code>", html)
        html = _REPORT.sub(
            lambda m: (
                f'<a href="{ISSUE_URL.format(repo=m.group(1), number=m.group(2))}">{m.group(0)}</a>'
            ),
            html,
        )
        out.append(f"<p>{html}</p>")
    return Markup("\n".join(out))


def side_by_side(leaky: str, fixed: str) -> tuple[list, list]:
    """Both files' lines as [(line number from 1, text, changed: bool)], one list per file,
    changed where difflib's opcodes differ."""
    a, b = leaky.splitlines(), fixed.splitlines()
    marked_a: set[int] = set()
    marked_b: set[int] = set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            marked_a.update(range(i1, i2))
            marked_b.update(range(j1, j2))
    return (
        [(n + 1, line, n in marked_a) for n, line in enumerate(a)],
        [(n + 1, line, n in marked_b) for n, line in enumerate(b)],
    )


def short_diff(leaky: str, fixed: str) -> list[tuple[str, str]]:
    """Only the differing lines (a unified diff without context or file headers), as
    [(css class, line)]: "del" a leaky line, "ins" a fixed one, "hunk" an @@ location."""
    found = []
    for line in difflib.unified_diff(leaky.splitlines(), fixed.splitlines(), lineterm="", n=0):
        if line.startswith(("---", "+++")):
            continue
        kind = {"@": "hunk", "-": "del", "+": "ins"}.get(line[:1], "")
        found.append((kind, line))
    return found


def pair_file(root: Path, variant: str, pair: str) -> tuple[str | None, contract.Scenario | None]:
    """A variant's file under checkout `root` (scenarios/ or fixes/): (its text, its contract
    metadata, None when it breaks the contract); (None, None) when there is no such file."""
    path = Path(root) / catalog.VARIANT_DIRS[variant] / f"{pair}.py"
    if not path.is_file():
        return None, None
    text = path.read_text()
    try:
        meta = contract.read_metadata(path)
    except contract.ContractError:
        meta = None
    return text, meta


def verdict_css(word: str) -> str:
    """A verdict's CSS class: "v-<word>" (style.css has
    one per verdict.VERDICTS word), else "v-unknown"."""
    return f"v-{word}" if word in verdict.VERDICTS else "v-unknown"


def _growth(metric: Metric, value) -> str:
    """A metric's value as its table shows it: display unit, a sign on a trend, "—" for None."""
    return metric.display(value, sign=metric.per_repetition)


def cell_view(cell: dict | None) -> dict | None:
    """A cell of the history matrix (leakbench.history.matrix.cell) as the index shows it:
    {"verdict", "css", "expected": bool, "expectation": what the variant should read, in words,
    "number": the number the verdict rests on (in_words.number: "held +1 KiB/rep"),
    "signals": comma-joined}. None for None (not measured)."""
    if cell is None:
        return None
    word = cell["verdict"]
    number = in_words.number(cell["decision"])
    return {
        "verdict": word,
        "css": verdict_css(word),
        "expected": cell["expected"],
        "expectation": cell["expectation"],
        "number": number,
        "signals": ", ".join(cell["signals"]),
    }


def verdict_view(rec: Record | None) -> dict | None:
    """A record's verdict as a page shows it: {"verdict", "css", "expected": the verdict is one
    its variant may read (leakbench.expectation), "should":
    that expectation in words, "number": the number it rests on (in_words.number)}; None for
    None."""
    if not rec:
        return None
    return {
        "verdict": rec["verdict"],
        "css": verdict_css(rec["verdict"]),
        "expected": expectation.accepts(rec),
        "should": expectation.for_record(rec).label,
        "number": in_words.number(decision.of(rec)),
    }


def history_head() -> list[dict]:
    """The titles of HISTORY's columns: [{"title": e.g. "held memory KiB/rep", "help"}]."""
    return [
        {"title": f"{m.label}{'' if m.shown.startswith('/') else ' '}{m.shown}", "help": m.help}
        for m in HISTORY
    ]


def version_row(version: str, recs: dict) -> dict:
    """A lesson's table row for one TF version. recs: variant -> record, or None (not measured).

    Returns {"version", "leaky": ..., "fixed": ...}, each None or verdict_view's keys plus
    "values": [(text, hover title or None)] in HISTORY's order ("n/a" for a metric of glibc's
    counters where they are n/a, with the reason), "k": the peak exponent ("—" if none) and
    "signals": comma-joined, "—" if none.
    """
    row: dict[str, Any] = {"version": version}
    for variant in catalog.VARIANT_DIRS:
        rec = recs.get(variant)
        if not rec:
            row[variant] = None
            continue
        scaling = (rec.get("metrics") or {}).get("peak_scaling") or {}
        why = memory.malloc_unavailable(rec)
        row[variant] = {
            **(verdict_view(rec) or {}),
            "values": [
                ("n/a", f"n/a: {why}")
                if m.mallinfo2 and why
                else (_growth(m, decision.value(rec, m.key)), None)
                for m in HISTORY
            ],
            "k": "—" if scaling.get("exponent") is None else f"{scaling['exponent']:.2f}",
            "signals": ", ".join(rec.get("signals") or []) or "—",
        }
    return row


def lesson_data(name: str, root: Path, by_version: dict, found: dict, default: str) -> dict:
    """Everything lesson.html.j2 shows of pair `name` (and the index's row of it).

    root: the checkout with scenarios/ and fixes/ (a file missing there: its text is None and
    the record's title, source, kind stand in). by_version: TF version -> {(pair, variant):
    record}. found: history's matrix of the same records ({"versions", "rows"}). default: the
    TF version whose records the chart draws (else the newest version with the variant).
    """
    leaky_text, leaky_meta = pair_file(root, "leaky", name)
    fixed_text, fixed_meta = pair_file(root, "fixed", name)
    newest = _newest(name, by_version, found["versions"], default)
    some = newest["leaky"][1] or newest["fixed"][1] or {}
    docstring = ast.get_docstring(ast.parse(leaky_text)) if leaky_text else None
    source = (leaky_meta.source if leaky_meta else some.get("source")) or "unknown"
    rows = {row["variant"]: row for row in found["rows"] if row["pair"] == name}
    signals = _signals(name, by_version, found["versions"])
    code = side_by_side(leaky_text, fixed_text) if leaky_text and fixed_text else None
    charted = {v: newest[v][1] for v in catalog.VARIANT_DIRS}
    decomposed = {v: memory.decomposition(charted[v]) for v in catalog.VARIANT_DIRS}
    stack_views = {v: stacks.stack_view(charted[v]) for v in catalog.VARIANT_DIRS}
    counts = charts.count_svg({v: charts.series_of(charted[v]) for v in catalog.VARIANT_DIRS})
    return {
        "decided": deciding_chart(charted, counts),
        "name": name,
        "title": leaky_meta.title if leaky_meta else some.get("title") or name,
        "fixed_title": fixed_meta.title if fixed_meta else (newest["fixed"][1] or {}).get("title"),
        "source": source,
        "source_url": source_link(source),
        "kind": (leaky_meta.kind if leaky_meta else some.get("kind")) or "",
        "heap_reps": leaky_meta.heap_reps if leaky_meta else None,
        "repetition": (leaky_meta.repetition if leaky_meta else some.get("repetition")) or "",
        "size_param": (leaky_meta.size_param if leaky_meta else some.get("size_param")) or "",
        "what": prose(docstring) if docstring else None,
        "code": code,
        "short_diff": short_diff(leaky_text, fixed_text)
        if code and leaky_text and fixed_text
        else [],
        "missing": [
            f"{catalog.VARIANT_DIRS[v]}/{name}.py"
            for v, t in (("leaky", leaky_text), ("fixed", fixed_text))
            if t is None
        ],
        "memory": memory.charts(decomposed),
        "memory_keys": memory.legend(),
        "counts": counts,
        "count_panels": charts.PANELS,
        "stacks": stack_views,
        "stack_charts": stacks.stack_charts(stack_views),
        "stages": stages.stage_table(charted),
        "chains": stages.reference_chains(charted),
        "chart_versions": {v: newest[v][0] for v in catalog.VARIANT_DIRS},
        "chart_verdicts": {v: verdict_view(newest[v][1]) for v in catalog.VARIANT_DIRS},
        # n/a under another allocator
        "mallinfo2_label": " and ".join(m.label for m in HISTORY if m.mallinfo2),
        "na_label": memory.NA_LABEL,
        "malloc_na": [
            (v, decomposed[v]["na"]) for v in catalog.VARIANT_DIRS if decomposed[v].get("na")
        ],
        **_history(name, by_version, found, rows),
        "signals": [(s, metrics.signal_help(s)) for s in signals],
    }


def _newest(name: str, by_version: dict, versions: list, default: str) -> dict:
    """variant -> (TF version, record) the lesson charts: `default`'s record, else the newest
    version's with the variant; (None, None) where no version has it."""
    newest = {}
    for variant in catalog.VARIANT_DIRS:
        order = [default] + [v for v in reversed(versions) if v != default]
        newest[variant] = next(
            (
                (v, by_version[v][(name, variant)])
                for v in order
                if (name, variant) in by_version[v]
            ),
            (None, None),
        )
    return newest


def _signals(name: str, by_version: dict, versions: list) -> list:
    """The signals the leaky variant moved on any TF version, each once, in order."""
    return list(
        dict.fromkeys(
            s
            for v in versions
            for s in ((by_version[v].get((name, "leaky")) or {}).get("signals") or [])
        )
    )


def _history(name: str, by_version: dict, found: dict, rows: dict) -> dict:
    """The lesson's matrix cells per TF version and variant, and its history table's rows."""
    return {
        "cells": {
            v: {
                variant: cell_view((rows.get(variant) or {"cells": {}})["cells"].get(v))
                for variant in catalog.VARIANT_DIRS
            }
            for v in found["versions"]
        },
        "history_head": history_head(),
        "history": [
            version_row(
                v, {variant: by_version[v].get((name, variant)) for variant in catalog.VARIANT_DIRS}
            )
            for v in found["versions"]
        ],
    }


def deciding_chart(charted: dict, counts: list | None) -> dict:
    """What a lesson opens with: the decision of each charted record (in_words.number), and which
    chart shows the leaky variant's deciding signal: {"words": {variant: text}, "verdicts":
    {variant: verdict_view}, "panel": the count panel (charts.PANELS index) of a count signal
    that decided, else None (the memory chart, where held memory, RSS or the peak decided)}."""
    leaky = decision.of(charted["leaky"]) if charted.get("leaky") else {}
    series = (metrics.BY_SIGNAL.get(leaky.get("signal") or "") or metrics.HELD).series
    panel = next((i for i, p in enumerate(charts.PANELS) if p.key == series), None)
    return {
        "words": {
            v: in_words.number(decision.of(rec)) if rec else "not measured"
            for v, rec in charted.items()
        },
        "verdicts": {v: verdict_view(rec) for v, rec in charted.items()},
        "panel": panel if counts and panel is not None else None,
    }
