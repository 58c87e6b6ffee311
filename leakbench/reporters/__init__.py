"""Views of records and results: rich tables for the terminal, markdown for files.

`markdown_table` is the one way they build a markdown table."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def markdown_table(
    head: Sequence[str], rows: Iterable[Sequence[str]], align: str = ""
) -> list[str]:
    """The lines of a markdown table: the header, its rule and one line per row, cells joined by
    " | ". align: one letter per column, "l" (left, the default for every column) or "r" (right)."""
    align = align or "l" * len(head)
    if len(align) != len(head) or set(align) - {"l", "r"}:
        raise ValueError(f"align {align!r} does not give l or r for each of {len(head)} columns")
    line = lambda cells: "| " + " | ".join(cells) + " |"  # noqa: E731
    return [
        line(head),
        "|" + "".join("---:|" if a == "r" else "---|" for a in align),
        *map(line, rows),
    ]
