"""Every colour the site uses, in one place: the pages' CSS (style.css.j2 renders
these as CSS variables and verdict classes) and the charts (matplotlib) both read
this module, so leaky is the same red and fixed the same green on every chart and
table, and each verdict has one colour.

All values are CSS hex colours ("#rrggbb").
"""

from __future__ import annotations

# The two variants: chart titles, lines, frames and table headers.
VARIANTS = {"leaky": "#c0392b", "fixed": "#1e7b45"}

# Each verdict of leakbench.analysis.judge.verdict.VERDICTS:
# (background, text). A word missing here is "unknown".
VERDICTS = {
    "leak": ("#f8d3cf", "#7b1d12"),
    "no-leak": ("#d2f0dc", "#145a2e"),
    "fragmentation": ("#fdf0c4", "#6b5200"),
    "over-cap": ("#e9d5f5", "#5a1f7d"),
    "hang": ("#ffe0b8", "#7a3d00"),
    "error": ("#3b3f45", "#ffffff"),
    "skipped": ("#e4e9ee", "#3b4a5a"),
}
UNKNOWN = ("#eeeeee", "#333333")

# The lines of the memory decomposition (leakbench.site.memory)
# and the stacks' fill (leakbench.site.stacks).
SERIES = {
    "rss": "#6b7280",  # RSS: grey, the total
    "held": "#1f4e99",  # held memory: dark blue, what the verdict rests on
    "malloc": "#138d90",  # malloc in use: teal
    "free": "#d98200",  # malloc's free bytes: orange, fragmentation
    "heap": "#b03a8c",  # memray's heap: magenta, dashed
    "trim": "#111111",  # the malloc_trim drop
}
STACKS = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#9d755d", "#bab0ac")
MUTED = "#555555"


def css_variables() -> dict[str, str]:
    """CSS custom property name (without "--") -> colour, for style.css.j2's :root."""
    found = {f"variant-{v}": c for v, c in VARIANTS.items()}
    found.update({f"series-{k}": c for k, c in SERIES.items()})
    return found
