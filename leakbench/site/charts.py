"""A lesson's memory chart: four small inline SVGs (matplotlib) of the sample
series of both variants over the measured repetitions.

Panel titles and the caption's help texts come from leakbench.metrics (the
series' labels); the memray heap, which is no sample series but memray's own
pass, takes its label from the retained_heap metric.
"""
from __future__ import annotations

import io
import re
from dataclasses import dataclass

from markupsafe import Markup

from leakbench import metrics
from leakbench.units import MIB

_SERIES = {s.name: s for s in metrics.SERIES}
COLOURS = {"leaky": "#c0392b", "fixed": "#1e7b45"}


@dataclass(frozen=True)
class Panel:
    """One chart panel. key: its key in memory_svg's series dicts; scale: bytes -> MiB, or 1 for counts."""

    key: str
    label: str
    help: str
    scale: float

    @property
    def title(self) -> str:
        """The panel's title, e.g. "RSS (MiB)", "threads"."""
        return f"{self.label} (MiB)" if self.scale == MIB else self.label


def _of(key: str, series: str) -> Panel:
    found = _SERIES[series]
    return Panel(key, found.label, found.help, MIB if found.unit == "bytes" else 1)


# In the order drawn, two by two.
PANELS = (
    _of("rss", "rss_bytes"),
    _of("malloc", "malloc_used_bytes"),
    Panel("heap", metrics.BY_KEY["retained_heap"].label,
          "the bytes memray sees allocated and not freed, from its own pass (fewer repetitions)", MIB),
    _of("threads", "threads"),
)
MALLOC = next(p for p in PANELS if p.key == "malloc")
NO_MALLOC_VALUES = "the record has no malloc heap values"


def malloc_unavailable(rec: dict | None) -> str | None:
    """Why a record's malloc counters are n/a (probes.malloc_heap_unavailable, as the record keeps it:
    on its first run, else in its metrics), else None. rec: a record, or None."""
    if not rec:
        return None
    run = (rec.get("runs") or [{}])[0]
    return run.get("malloc_heap_unavailable") or (rec.get("metrics") or {}).get("malloc_heap_unavailable")


def series_of(rec: dict | None) -> dict:
    """The chart's series of a record's default-size run (its first), for memory_svg.

    Returns {"rss": [bytes], "malloc": [bytes] (the malloc_used_bytes series), "heap": [bytes]
    (memray's pass), "threads": [counts], "malloc_na": why the malloc series is n/a, or None};
    {} for None or a record without runs. A value may be None (not sampled).
    """
    if not rec or not rec.get("runs"):
        return {}
    run = rec["runs"][0]
    found = run.get("series") or {}
    used = found.get("malloc_used_bytes") or []
    why = malloc_unavailable(rec)
    if not why and used and all(v is None for v in used):
        why = NO_MALLOC_VALUES
    return {"rss": found.get("rss_bytes") or [], "threads": found.get("threads") or [],
            "malloc": used, "malloc_na": why, "heap": (run.get("heap") or {}).get("heap_bytes") or []}


def memory_svg(series: dict) -> list[Markup] | None:
    """One inline SVG per PANELS entry (RSS, malloc in use, memray heap in MiB; threads) of both
    variants over repetitions: two by two on a wide screen, one above the other on a phone.

    series: variant ("leaky", "fixed") -> series_of(record). A variant whose malloc series is n/a
    is named in that panel ("n/a for fixed (see below)"); the reason is the page's to print
    (escaped), not the SVG's. Element ids are prefixed with the panel key, unique in a page.
    Returns None when matplotlib is missing or no panel has a value.
    """
    if not any(any(found.get(p.key) for p in PANELS) for found in series.values()):
        return None
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    panels = []
    for panel in PANELS:
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "leakbench", "font.size": 9,
                                    "axes.spines.top": False, "axes.spines.right": False}):
            fig, ax = plt.subplots(figsize=(4, 2.5), layout="constrained")
            missing = []
            for variant, found in series.items():
                values = [v for v in (found.get(panel.key) or []) if v is not None]
                if panel is MALLOC and found.get("malloc_na"):
                    missing.append(variant)
                elif values:
                    ax.plot(range(1, len(values) + 1), [v / panel.scale for v in values], marker="o",
                            markersize=2.5, linewidth=1.4, color=COLOURS.get(variant), label=variant)
            if missing:
                ax.text(0.5, 0.5, f"n/a for {' and '.join(missing)} (see below)", transform=ax.transAxes,
                        ha="center", va="center", color="#555")
            ax.set_title(panel.title)
            ax.set_xlabel("repetition")
            ax.grid(alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(frameon=False, fontsize=8)
            buffer = io.StringIO()
            fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
            plt.close(fig)
        svg = buffer.getvalue()
        svg = svg[svg.index("<svg"):]  # drop the XML declaration and DOCTYPE: inline in HTML
        # matplotlib numbers its ids per figure (figure_1, axes_1, ...): prefix them, unique in the page
        svg = re.sub(r'(\bid="|url\(#|href="#)', rf"\g<1>{panel.key}-", svg)
        svg = svg.replace("<svg ", f'<svg role="img" aria-label="{panel.title} over repetitions" ', 1)
        panels.append(Markup(svg))
    return panels
