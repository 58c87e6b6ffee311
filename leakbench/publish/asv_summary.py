"""asv plugin (asv.conf.json "plugins"): each summary thumbnail is the arithmetic mean of the
benchmark over its pairs and variants at each build, not asv's geometric mean.

asv's summary (asv.graph.make_summary_graph) takes the geometric mean of a benchmark's parameter
combinations at each commit, and one combination at exactly 0 makes it 0: a slope of a series
that did not move (threads, Python objects, RSS pages) is 0 for most pairs, so asv draws a flat
line on the box's border for a metric where a leaky pair grows. The mean of the numbers each build
has (NaN and skipped left out) keeps the growth's shape; its unit is the benchmark's. Only
graphs/summary/*.json change: every benchmark's own graph shows the records' numbers.
"""

from __future__ import annotations

import math

from asv.graph import Graph
from asv.publishing import OutputPublisher


def mean_by_revision(graphs) -> dict[int, float | None]:
    """revision -> the mean of the finite values of `graphs` (asv Graphs of one benchmark, one
    per machine and environment, each point a value or a list over the parameters); None where a
    revision has none."""
    found: dict[int, list[float]] = {}
    for graph in graphs:
        for revision, value, _ in graph.get_data():
            values = value if isinstance(value, list) else [value]
            kept = found.setdefault(revision, [])
            kept += [v for v in values if isinstance(v, int | float) and math.isfinite(v)]
    return {r: (sum(v) / len(v) if v else None) for r, v in sorted(found.items())}


class MeanSummary(OutputPublisher):
    """Rewrites graphs/summary/<benchmark>.json after asv's SummaryGrid wrote them."""

    name = "summarymean"
    button_label = "Summary (mean)"
    description = "Summary thumbnails: the mean over pairs and variants"
    order = 1  # after asv's SummaryGrid (order 0), whose files it replaces

    @classmethod
    def publish(cls, conf, repo, benchmarks, graphs, revisions):
        by_name: dict[str, list] = {}
        for _, graph in graphs:  # asv's GraphSet: (path, Graph), no summary among them
            by_name.setdefault(graph.benchmark_name, []).append(graph)
        for name, group in by_name.items():
            summary = Graph(name, {"summary": ""})
            for revision, mean in mean_by_revision(group).items():
                summary.add_data_point(revision, mean)
            summary.save(conf.html_dir)
