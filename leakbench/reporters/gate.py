"""The summary of `leakbench gate` and `leakbench compare` (data: leakbench.history.compare):
what decides the exit code first, then what TensorFlow fixed, then what changed without counting.
Each side of a line is its verdict with the number it rests on, as the comparison gives it
(leakbench.analysis.judge.in_words.words)."""

from __future__ import annotations

from leakbench import metrics
from leakbench.history import machines
from leakbench.history.compare import (
    CHANGE,
    FIXED_UPSTREAM,
    NOT_MEASURED,
    REGRESSED,
    REGRESSION,
    SKIPPED,
    UNCHANGED,
    Comparison,
)

# (outcome, heading) of the summary's sections, in order; unchanged variants are only counted
SECTIONS = (
    (REGRESSION, "Regressions"),
    (FIXED_UPSTREAM, "Fixed upstream"),
    (CHANGE, "Changes that do not count"),
    (SKIPPED, "Skipped"),
    (NOT_MEASURED, "Not measured"),
)
_NONE = {
    REGRESSION: "None: no fix or declared no-leak leaks, no new hang, error or over-cap, "
    "no peak pair's fix past the factor.",
    FIXED_UPSTREAM: "None.",
    CHANGE: "None.",
}


def exit_line(c: Comparison) -> str:
    """'Exit 1: 2 regressions.' / 'Exit 0: no regression.'"""
    n = len(c.of(REGRESSION))
    return f"Exit 1: {_plural(n, 'regression')}." if n else "Exit 0: no regression."


def counts_line(c: Comparison) -> str:
    """How many variants fell in each outcome, in the summary's order (skipped and not measured
    only where there are some): "44 variants: regressions 0, fixed upstream 2, ..."."""
    found = c.count()
    words = {o: heading.lower() for o, heading in SECTIONS}
    shown = [REGRESSION, FIXED_UPSTREAM, CHANGE, UNCHANGED]
    shown += [o for o in (SKIPPED, NOT_MEASURED) if found[o]]
    counts = ", ".join(f"{words.get(o, o)} {found[o]}" for o in shown)
    return f"{_plural(len(c.entries), 'variant')}: {counts}."


def entry_line(e: dict, factor: float) -> str:
    """One variant: its verdict on each side with the number it rests on, why it is in its
    section, and for a change the metrics past the factor (their numbers: the details)."""
    old, new = e["old"] or "no record", e["new"] or "no record"
    if old == new:
        line = f"- {e['pair']} ({e['variant']}): {new}, on both"
    else:
        line = f"- {e['pair']} ({e['variant']}): {old} → {new}"
    if e["why"] and e["outcome"] != SKIPPED:
        line += f": {e['why']}"
    if e["moved"] and e["outcome"] == CHANGE:
        moved = ", ".join(
            f"{metrics.BY_KEY[r['key']].label} {'▲' if r['marker'] == REGRESSED else '▼'}"
            for r in e["moved"]
        )
        line += f"; past {factor:g}×: {moved}"
    return line


def measure_hint(c: Comparison) -> str:
    """How to measure the variants a side has no record of, on this machine."""
    if c.old_version and c.new_version:
        machine = f" --machine {c.machine}" if c.machine else ""
        return (
            "Measure them on this machine: `leakbench gate --baseline "
            f"{c.old_version} --candidate {c.new_version}{machine} --measure`."
        )
    return "Measure them on this machine with `leakbench gate ... --measure`."


def across_line(c: Comparison) -> str:
    """The summary's first line where the sides are two machines' records (c.machines)."""
    old, new = c.machines or ("?", "?")
    return (
        "**Across machines:** the two sides were measured on different machines: "
        f"old ({c.old}) on {old}; new ({c.new}) on {new}. Any change below may be the "
        "hardware's, not TensorFlow's."
    )


def summary(c: Comparison, command: str = "gate") -> list[str]:
    """The summary's markdown lines: title, the two machines where they differ (across_line), exit
    code and counts, then one section per outcome (SECTIONS; skipped and not measured only where
    there are some)."""
    lines = [f"## leakbench {command}: TensorFlow {c.old} → {c.new}", ""]
    if c.machines:
        lines += [across_line(c), ""]
    if c.machine:
        on = f" ({c.hardware})" if c.hardware else ""
        own = machines.label(c.machine)[len(c.machine) :]  # a user's own runs say so
        lines += [f"Records of asv machine `{c.machine}`{own}{on}.", ""]
    if len(c.engines) > 1:
        lines += [
            f"**Across engines:** old ({c.old}) made by {c.engines[0]}; new ({c.new}) by "
            f"{c.engines[1]}. Any change below may be the engine's, not TensorFlow's: "
            "measure both sides with one engine.",
            "",
        ]
    elif c.engines:
        lines += [f"Made by {c.engines[0]}.", ""]
    lines += [f"**{exit_line(c)}** {counts_line(c)}", ""]
    for outcome, heading in SECTIONS:
        found = c.of(outcome)
        if not found and outcome not in _NONE:
            continue
        lines += [f"### {heading}: {len(found)}", ""]
        lines += [entry_line(e, c.factor) for e in found] or [_NONE[outcome]]
        if outcome == NOT_MEASURED and found:
            lines += ["", f"Not measured is no regression. {measure_hint(c)}"]
        lines.append("")
    return lines


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
