"""`leakbench check TARGET --html FILE`: one self-contained page of a check record.

The same views as a lesson, for the one target: the verdict, the series'
slopes, the memory decomposition chart (leakbench.site.memory), growth by
allocation site (stacks), memory per tf.data stage with AUTOTUNE's values and
the reference chain (stages), the counts, the Python types that grew and the
hints. Its stylesheet and charts are inline (SVG): the page loads nothing, so
it works offline, from a file, and as an e-mail attachment.
"""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape

from leakbench import jsonfile, metrics
from leakbench.analysis.judge import verdict
from leakbench.analysis.record_type import Record
from leakbench.reporters.check import CHECK_SERIES
from leakbench.site import charts, colours, memory, stacks, stages
from leakbench.site.lessons import verdict_view

NAME = "yours"  # the variant name a check report draws its one target under
VARIANTS = (NAME,)


def _env() -> Environment:
    return Environment(
        loader=PackageLoader("leakbench.site", "templates"),
        autoescape=select_autoescape(["html", "j2"], default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )


def series_rows(rec: Record) -> list[dict]:
    """The trends `leakbench check` shows
    (reporters.check.CHECK_SERIES): label, slope, interval, p, unit."""
    m = rec["metrics"] or {}
    return [
        {
            "label": x.label,
            "slope": x.display(m[x.key]["slope"], sign=True),
            "interval": f"{x.display(m[x.key]['low'])} … {x.display(m[x.key]['high'])}",
            "p": f"{m[x.key]['p_increasing']:.3f}",
            "unit": x.shown,
        }
        for x in CHECK_SERIES
        if m.get(x.key)
    ]


def page_data(rec: Record) -> dict:
    """What check.html.j2 shows of a check record (leakbench.check.pipeline.check)."""
    recs = {NAME: rec}
    decomposed = {NAME: memory.decomposition(rec)}
    stack_views = {NAME: stacks.stack_view(rec)}
    diagnosis = rec.get("diagnosis") or {}
    return {
        "variants": VARIANTS,
        "memory": memory.charts(decomposed),
        "memory_keys": memory.legend(),
        "malloc_na": [(NAME, decomposed[NAME]["na"])] if decomposed[NAME].get("na") else [],
        "na_label": memory.NA_LABEL,
        "chart_versions": {NAME: rec["environment"].get("tensorflow")},
        "chart_verdicts": {NAME: verdict_view(rec)},
        "counts": charts.count_svg({NAME: charts.series_of(rec)}),
        "count_panels": charts.PANELS,
        "stacks": stack_views,
        "stack_charts": stacks.stack_charts(stack_views),
        "stages": stages.stage_table(recs, VARIANTS),
        "chains": stages.reference_chains(recs, VARIANTS),
        "series": series_rows(rec),
        "types": diagnosis.get("types") or [],
        "hints": diagnosis.get("hints") or [],
        "signals": [(s, metrics.signal_help(s)) for s in rec["signals"]],
    }


def check_page(rec: Record) -> str:
    """The page of one check record, as HTML text (UTF-8, self-contained)."""
    env = _env()
    style = env.get_template("style.css.j2").render(
        variables={**colours.css_variables(), f"variant-{NAME}": colours.VARIANTS["leaky"]},
        verdicts=colours.VERDICTS,
        unknown=colours.UNKNOWN,
    )
    return env.get_template("check.html.j2").render(
        rec=rec,
        pair=page_data(rec),
        style=style,
        verdict_view=verdict_view(rec),
        meanings=verdict.VERDICTS,
    )


def write_check_page(rec: Record, path: Path) -> Path:
    """Write check_page(rec) to `path`. Raises OSError where it cannot be written."""
    path = Path(path)
    jsonfile.write_text_atomic(path, check_page(rec))
    return path
