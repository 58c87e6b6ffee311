"""Inline SVG from matplotlib for the site's charts: one figure in, one
<svg role="img" aria-label=...> Markup out, its ids prefixed so that several
charts live in one page.
"""

from __future__ import annotations

import io
import re
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from markupsafe import Markup, escape

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType  # matplotlib 3.9+; imported when the charts are drawn

RC: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "leakbench",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def pyplot():
    """matplotlib.pyplot on the Agg backend, or None when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


@contextmanager
def style():
    """The charts' matplotlib settings (RC) for the figures made inside."""
    import matplotlib

    with matplotlib.rc_context(RC):
        yield


def inline(fig, prefix: str, label: str) -> Markup:
    """Figure `fig` as inline SVG (closed after): no XML prolog, every id prefixed with `prefix`
    (letters, digits, "-": unique in the page), role="img" and aria-label `label` (escaped)."""
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r'(\bid="|url\(#|href="#)', rf"\g<1>{prefix}-", text)
    return Markup(text.replace("<svg ", f'<svg role="img" aria-label="{escape(label)}" ', 1))
