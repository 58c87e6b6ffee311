"""The site's pages rendered from the templates (leakbench/site/templates/, autoescaped):
style.css, index.html, repeatability.html where there are tables, and one lesson per pair;
and Built, what a build wrote (leakbench.site.build assembles it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape

from leakbench import catalog, contract
from leakbench.analysis.judge import verdict
from leakbench.history import builds
from leakbench.reporters import repeatability as repeat_report
from leakbench.site import colours
from leakbench.site.flamegraphs import FLAMEGRAPHS
from leakbench.site.releases import row_id
from leakbench.site.repeatability import PAGE as REPEATABILITY


@dataclass
class Built:
    """What a build wrote: pages (path relative to out, bytes), seconds, notes."""

    out: Path
    pages: list = field(default_factory=list)
    seconds: float = 0.0
    asv: str = ""  # "asv/index.html" when asv publish ran, else ""
    asv_offline: bool = False  # asv's pages load their libraries from vendor/, not from CDNs
    notes: list = field(default_factory=list)
    vendored: list = field(default_factory=list)  # third-party files copied (leakbench.site.vendor)


def render(
    out: Path,
    built: Built,
    pairs: list,
    tables: list,
    tf_versions: list,
    default: str,
    changes: list,
    about: dict,
) -> None:
    """Write the pages into `out` (the folder being built), each added to built.pages as (path
    relative to out, bytes). Raises OSError where a page cannot be written."""
    env = Environment(
        loader=PackageLoader("leakbench.site", "templates"),
        autoescape=select_autoescape(["html", "j2"], default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    sources = list(dict.fromkeys([*contract.SOURCES, *(p["source"] for p in pairs)]))
    common = {
        "default": default,
        "variants": tuple(catalog.VARIANT_DIRS),
        "versions": tf_versions,
        "asv": built.asv,
        "asv_offline": built.asv_offline,
        "verdicts": verdict.VERDICTS,
        "flamegraphs": FLAMEGRAPHS,
        "repeatability": REPEATABILITY if tables else "",
        "row_id": row_id,
        "label": builds.label,
        "about": about,
    }
    _write(
        out,
        "style.css",
        env.get_template("style.css.j2").render(
            variables=colours.css_variables(), verdicts=colours.VERDICTS, unknown=colours.UNKNOWN
        ),
        built,
    )
    _write(
        out,
        "index.html",
        env.get_template("index.html.j2").render(
            pairs=pairs,
            sources=[s for s in sources if any(p["source"] == s for p in pairs)],
            up="",
            changes=[c for c in changes if any(p["name"] == c["pair"] for p in pairs)],
            tables=tables,
            **common,
        ),
        built,
    )
    if tables:
        _write(
            out,
            REPEATABILITY,
            env.get_template("repeatability.html.j2").render(
                tables=tables,
                slopes_note=repeat_report.SLOPES,
                decided_header=repeat_report.DECIDED_HEADER,
                margins_about=repeat_report.MARGINS,
                up="",
                **common,
            ),
            built,
        )
    for pair in pairs:
        _write(
            out,
            f"lessons/{pair['name']}.html",
            env.get_template("lesson.html.j2").render(pair=pair, up="../", **common),
            built,
        )


def _write(out: Path, rel: str, text: str, built: Built) -> None:
    path = out / rel
    path.write_text(text)
    built.pages.append((rel, path.stat().st_size))
