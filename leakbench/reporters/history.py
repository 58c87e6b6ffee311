"""Markdown of `leakbench compare` (and `leakbench gate`) and `leakbench matrix`
(data: leakbench.history)."""

from __future__ import annotations

from leakbench import metrics
from leakbench.analysis.judge import in_words
from leakbench.analysis.judge.verdict import VERDICTS
from leakbench.history import builds
from leakbench.history.compare import CHANGED, IMPROVED, REGRESSED, Comparison
from leakbench.history.matrix import changes
from leakbench.reporters import gate, markdown_table

_NOTED = ("fragmentation", "skipped")  # verdicts whose meaning a table states below it


def notes(words: set) -> list[str]:
    """What the rarer verdicts in a table mean (analysis.judge.verdict.VERDICTS), as lines."""
    found = [f"{word}: {VERDICTS[word]}." for word in _NOTED if word in words]
    return [" ".join(found), ""] if found else []


def compare_markdown(c: Comparison, command: str = "compare", details: bool = True) -> str:
    """The summary first (leakbench.reporters.gate: regressions, fixed upstream, changes that do not
    count), then, with details, every compared metric per pair and variant."""
    lines = gate.summary(c, command)
    if not details:
        return "\n".join(lines).rstrip()
    lines += [f"### Every metric (marker past {c.factor:g}×)", ""]
    rows = []
    for r in c.rows:
        if r["metric"] == "verdict":
            old, new, label = r["old"] or "—", r["new"] or "—", "verdict"
        else:
            m = metrics.BY_KEY[r["key"]]
            old, new, label = (
                m.display(r["old"], fit=True),
                m.display(r["new"], fit=True),
                f"{m.label} ({m.shown})",
            )
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}×"
        marker = {REGRESSED: "▲ regressed", IMPROVED: "▼ improved", CHANGED: "**changed**"}.get(
            r["marker"], r["marker"]
        )
        rows.append([r["pair"], r["variant"], label, old, new, ratio, marker])
    lines += markdown_table(
        ["pair", "variant", "metric", c.old, c.new, "ratio", ""], rows, "lllrrrl"
    )
    lines.append("")
    lines += notes({r[side] for r in c.rows if r["metric"] == "verdict" for side in ("old", "new")})
    return "\n".join(lines).rstrip()


def matrix_cell(cell: dict | None) -> str:
    """A matrix cell in words: verdict (bold if not expected), the number it rests on
    (in_words.number: "held +1 KiB/rep"), and for fragmentation or a surprise the evidence."""
    if cell is None:
        return "—"
    word = cell["verdict"] if cell["expected"] else f"**{cell['verdict']}**"
    if not cell["expected"] and cell["signals"]:
        word += f" ({', '.join(cell['signals'])})"  # which signal moved, where it should not have
    word += f" · {in_words.number(cell['decision'])}"
    # the evidence for leak vs fragmentation
    if cell["verdict"] == "fragmentation" or not cell["expected"]:
        for m in metrics.metrics_in(metrics.MATRIX):
            # a rate signed (its unit in the table's words), a level with its unit; not the
            # decision's own number again (a fragmentation's trim)
            if cell.get(m.key) is not None and m.label != cell["decision"].get("label"):
                word += f" · {m.short} {m.display(cell[m.key], sign=m.per_repetition)}"
                word += "" if m.per_repetition else f" {m.shown}"
    return word


def engine_lines(m: dict) -> list[str]:
    """The machine and the engine(s) under a matrix's heading; columns made by another engine than
    the newest release's are named, since their changes may be the engine's, not TensorFlow's."""
    lines = [f"Machine: {m['hardware']}." if m.get("hardware") else "Machine: several CPUs."]
    engines = m.get("engines") or {}
    every = sorted({e for found in engines.values() for e in found})
    if len(every) == 1:
        return [*lines, f"Every record made by {every[0]}.", ""]
    labels = m.get("labels") or {}
    lines.append(
        f"**Mixed engines ({len(every)}):** a change between two columns may be the engine's:"
    )
    lines += [f"- {labels.get(v, v)}: {' and '.join(found)}" for v, found in engines.items()]
    return [*lines, ""]


def matrix_markdown(m: dict) -> str:
    where = f" (asv machine `{m['machine']}`)" if m.get("machine") else ""
    lines = [
        f"## leakbench matrix: verdict per TensorFlow version{where}",
        "",
        'Each cell: the verdict, then the number it rests on (docs/verdicts.md, "The number '
        "beside a verdict\"): a leak's deciding signal, at or over its bar; a no-leak's memory "
        "rate (held memory, RSS where held memory is n/a), under its bar unless it says why; a "
        "peak pair's rise of the peak from the smallest to the largest size, with k in peak ∝ "
        "size^k. Rates are per repetition, as the verdict compares them with their bars (the "
        "least of the whole series' slope and each half's). **Bold**: not what the variant "
        "should read (leakbench.expectation: a scenario leaks, or reads "
        "what it declares; a fix does not). Cells reading fragmentation, and bold ones, add "
        "glibc's malloc in use growth (KiB/repetition) "
        "and what malloc_trim gave back at the end (MiB).",
        "",
    ]
    lines += notes({c["verdict"] for row in m["rows"] for c in row["cells"].values() if c})
    lines += engine_lines(m)
    found = changes(m)
    lines += [f"Verdict changes across the columns: {len(found)}" + (":" if found else "."), ""]
    for c in found:
        b = c["bisect"]
        where = (
            f"; bisected: first {b['bad']} ({b['bad_date']}), after {b['good']}: {b['compare_url']}"
            if b
            else ""
        )
        once = (
            " — one build only, the same verdict on both sides: measure it again"
            if c["one_build"]
            else ""
        )
        lines.append(
            f"- {c['pair']} ({c['variant']}): {c['from']} → {c['to']} on {c['label']} "
            f"(after {builds.label(c['before'])}){where}{once}"
        )
    lines += [""] if found else []
    labels = m.get("labels") or {}
    lines += markdown_table(
        ["pair", "variant", *(labels.get(v, v) for v in m["versions"])],
        (
            [row["pair"], row["variant"], *(matrix_cell(row["cells"][v]) for v in m["versions"])]
            for row in m["rows"]
        ),
    )
    return "\n".join(lines)
