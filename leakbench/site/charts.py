"""A lesson's count charts: small inline SVGs (matplotlib) of the counted sample
series (the registry's COUNTS view: threads, open files, Python objects) of
both variants over the measured repetitions. The memory series are
leakbench.site.memory's.

Panel titles and the caption's help texts come from leakbench.metrics (the
series' labels); the variants' colours from leakbench.site.colours.
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from leakbench import metrics
from leakbench.analysis.record_type import Record
from leakbench.site import colours, svg

COLOURS = colours.VARIANTS


@dataclass(frozen=True)
class Panel:
    """One chart panel. key: its key in series_of's dicts
    (the sample series' name); unit: per sample."""

    key: str
    label: str
    help: str
    unit: str

    @property
    def title(self) -> str:
        """The panel's title with its unit, e.g. "threads (count)"."""
        return f"{self.label} (count)"


# In the order drawn, side by side.
PANELS = tuple(Panel(s.name, s.label, s.help, s.unit) for s in metrics.series_in(metrics.COUNTS))


def series_of(rec: Record | None) -> dict:
    """The panels' series of a record's default-size run (its first): {panel key: [counts, None
    where not sampled]}; {} for None or a record without runs."""
    if not rec or not rec.get("runs"):
        return {}
    found = rec["runs"][0].get("series") or {}
    return {p.key: list(found.get(p.key) or []) for p in PANELS}


def _describe(panel: Panel, series: dict) -> str:
    parts = []
    for variant, found in series.items():
        values = [v for v in (found.get(panel.key) or []) if v is not None]
        if values:
            change = values[-1] - values[0]
            parts.append(
                f"{variant} {'stays at' if not change else 'goes from'} {values[0]:,.0f}"
                f"{'' if not change else f' to {values[-1]:,.0f}'}"
            )
    return (
        f"{panel.label} over "
        f"{max((len(f.get(panel.key) or []) for f in series.values()), default=0)} "
        f"repetitions: {'; '.join(parts) or 'no values'}"
    )


def count_svg(series: dict) -> list[Markup] | None:
    """One inline SVG per PANELS entry of both variants over repetitions (side by side on a wide
    screen, one above the other on a phone), each with an aria-label saying where its lines go.

    series: variant ("leaky", "fixed") -> series_of(record). Element ids are prefixed with the
    panel key, unique in a page. Returns None when matplotlib is missing or no panel has a value.
    """
    if not any(any(found.get(p.key) for p in PANELS) for found in series.values()):
        return None
    plt = svg.pyplot()
    if plt is None:
        return None
    from matplotlib.ticker import MaxNLocator, StrMethodFormatter

    panels = []
    for panel in PANELS:
        with svg.style():
            fig, ax = plt.subplots(figsize=(3.2, 2.3), layout="constrained")
            for variant, found in series.items():
                points = [
                    (i + 1, v) for i, v in enumerate(found.get(panel.key) or []) if v is not None
                ]
                if points:
                    ax.plot(
                        *zip(*points),
                        marker="o",
                        markersize=2.5,
                        linewidth=1.4,
                        color=COLOURS.get(variant, colours.MUTED),
                        label=variant,
                    )
            known = [v for f in series.values() for v in (f.get(panel.key) or []) if v is not None]
            # a flat count: whole numbers around it, not 8.00 ± 0.4
            if known and max(known) - min(known) < 4:
                ax.set_ylim(min(known) - 2, max(known) + 2)
            ax.yaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
            ax.set_title(panel.title)
            ax.set_xlabel("measured repetition")
            ax.grid(alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(frameon=False, fontsize=8)
            panels.append(svg.inline(fig, panel.key, _describe(panel, series)))
    return panels
