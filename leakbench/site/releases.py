"""A lesson's release strip: the verdict of each variant on every TensorFlow
release in the results, the releases where the leaky verdict changed marked,
each cell linked to its row of the lesson's table per release (id "tf-<version>").
"""

from __future__ import annotations

from leakbench.catalog import VARIANT_DIRS
from leakbench.history.matrix import verdict_runs
from leakbench.site.lessons import verdict_view


def row_id(version: str) -> str:
    """The id of a release's row in a lesson's table per release, e.g. "tf-2.16.2"."""
    return f"tf-{version}"


def release_strip(name: str, by_version: dict, versions: list[str]) -> dict:
    """The strip of pair `name`. by_version: TF version
    -> {(pair, variant): record}; versions: oldest first.

    Returns {"versions", "rows": [{"variant", "cells": [None (not measured) or verdict_view's keys
    plus "version", "href": "#tf-<version>", "changed": the leaky verdict differs from the release
    measured before]}]}, "changes": [(version, verdict before, verdict now)] of the leaky variant,
    "missing": a cell is not measured}. Raises KeyError for a record without "verdict" (every
    record has one: leakbench.analysis.schema).
    """
    leaky = {
        v: by_version[v][(name, "leaky")]["verdict"]
        for v in versions
        if (name, "leaky") in by_version.get(v, {})
    }
    runs = verdict_runs(leaky, versions)
    changes = [(now[1], before[0], now[0]) for before, now in zip(runs, runs[1:])]
    changed = {version for version, _, _ in changes}
    rows = []
    for variant in VARIANT_DIRS:
        cells = []
        for version in versions:
            rec = by_version.get(version, {}).get((name, variant))
            cells.append(
                rec
                and {
                    **(verdict_view(rec) or {}),
                    "version": version,
                    "href": f"#{row_id(version)}",
                    "changed": variant == "leaky" and version in changed,
                }
            )
        rows.append({"variant": variant, "cells": cells})
    return {
        "versions": list(versions),
        "rows": rows,
        "changes": changes,
        "missing": any(c is None for row in rows for c in row["cells"]),
    }
