"""Growth by allocation site: memray's stacks of the heap pass whose bytes grew,
drawn stacked over the heap repetitions (as massif-visualizer and heaptrack do)
and listed with KiB/repetition.

Reads rec["runs"][0]["heap"]["stack_growth"], a list of
    {"frames": [str, ...] innermost first, "user_frame": str or None (the
     innermost frame of the user's own code), "bytes": [int per heap
     repetition], "bytes_per_rep": float (bytes/repetition)}
Records written before it was measured have no such key: the lesson says so.
"""

from __future__ import annotations

from markupsafe import Markup

from leakbench.analysis.record_type import Record
from leakbench.analysis.schema import first_run
from leakbench.site import colours, svg
from leakbench.units import KIB, MIB, format_bytes, in_unit

TOP = 6  # stacks drawn and listed; the rest are summed as "other"
CONTEXT = 4  # frames of TensorFlow's (or Python's) shown as a stack's context
ABSENT = "not in this record: it was measured before leakbench recorded memray's growth per stack"


def stack_view(rec: Record | None) -> dict:
    """A variant's stacks as the lesson lists them.

    Returns {"stacks": [{"name": the user's frame, else the innermost frame, "user": bool,
    "context": [up to CONTEXT other frames, innermost first], "bytes_per_rep": float,
    "kib_per_rep": the same in KiB (the template's), "bytes": [bytes per heap repetition]}] (TOP of
    them, fastest growth first), "other": [bytes per repetition of the rest] or [], "why": None}
    when the record has stack_growth;
    {"stacks": [], "other": [], "why": ABSENT or "not measured"} otherwise. Missing keys of a stack
    read as empty (bytes_per_rep 0); raises TypeError only for a value that is no number.
    """
    if not rec:
        return {"stacks": [], "other": [], "why": "not measured"}
    found = (first_run(rec).get("heap") or {}).get("stack_growth")
    if found is None:
        return {"stacks": [], "other": [], "why": ABSENT}
    ranked = sorted(found, key=lambda s: -(s.get("bytes_per_rep") or 0.0))
    stacks = []
    for s in ranked[:TOP]:
        frames, user = list(s.get("frames") or []), s.get("user_frame")
        name = user or (frames[0] if frames else "(no frame)")
        stacks.append(
            {
                "name": name,
                "user": bool(user),
                "context": [f for f in frames if f != name][:CONTEXT],
                "bytes_per_rep": s.get("bytes_per_rep") or 0.0,
                "kib_per_rep": (s.get("bytes_per_rep") or 0.0) / KIB,
                "bytes": list(s.get("bytes") or []),
            }
        )
    rest = [list(s.get("bytes") or []) for s in ranked[TOP:]]
    other = [sum(col) for col in zip(*rest)] if rest else []
    return {"stacks": stacks, "other": other, "why": None}


def _short(text: str, width: int = 38) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def describe(variant: str, view: dict) -> str:
    """The chart's alt text: which stack grows fastest, and how fast."""
    if not view["stacks"]:
        return f"{variant} variant: no stack grew"
    top = view["stacks"][0]
    return (
        f"memray's heap of the {variant} variant by allocation site, stacked over "
        f"{len(top['bytes'])} heap repetitions: {top['name']} grows fastest, "
        f"{format_bytes(top['bytes_per_rep'], unit=KIB, digits=0)} per repetition, "
        f"of {len(view['stacks'])} stacks shown"
    )


def stack_charts(views: dict) -> dict[str, Markup] | None:
    """One stacked-area inline SVG per variant of `views` (variant -> stack_view()) that has stacks,
    all on the same y range (MiB), None where a value is missing read as 0. None when matplotlib is
    missing or no variant has a stack. Raises nothing of its own."""
    drawn_any = {v: view for v, view in views.items() if any(s["bytes"] for s in view["stacks"])}
    if not drawn_any:
        return None
    plt = svg.pyplot()
    if plt is None:
        return None

    def layers(view):
        found = [s["bytes"] for s in view["stacks"]] + ([view["other"]] if view["other"] else [])
        width = max(len(b) for b in found)
        return [
            [in_unit(b[i] if i < len(b) and b[i] is not None else 0, MIB) for i in range(width)]
            for b in found
        ]

    high = max(max(map(sum, zip(*layers(view)))) for view in drawn_any.values()) or 1.0
    drawn = {}
    for variant, view in drawn_any.items():
        with svg.style():
            fig, ax = plt.subplots(figsize=(4.2, 3.1), layout="constrained")
            found = layers(view)
            labels = [_short(s["name"]) for s in view["stacks"]] + (
                ["other stacks"] if view["other"] else []
            )
            ax.stackplot(
                range(1, len(found[0]) + 1),
                *found,
                labels=labels,
                colors=[colours.STACKS[i % len(colours.STACKS)] for i in range(len(found))],
                alpha=0.85,
            )
            ax.set_ylim(0, high * 1.06)
            ax.set_title(
                f"{variant}: heap by allocation site",
                color=colours.VARIANTS.get(variant, colours.MUTED),
                fontweight="bold",
            )
            ax.set_xlabel("heap-pass repetition")
            ax.set_ylabel("MiB allocated, not freed")
            ax.grid(alpha=0.3)
            fig.legend(loc="outside lower center", ncol=2, frameon=False, fontsize=7)
            drawn[variant] = svg.inline(fig, f"stack-{variant}", describe(variant, view))
    return drawn
