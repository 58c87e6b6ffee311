"""repeatability.html's tables, and each lesson's share of them: how often
each verdict repeats, from the files leakbench.repeat.run writes
(results/repeatability/<machine>-tf-<version>[-jobsN].json). The cells are
leakbench.reporters.repeatability's, the same as its markdown.
"""
from __future__ import annotations

import json
from pathlib import Path

from leakbench.history import store
from leakbench.repeat import run as repeat
from leakbench.reporters import repeatability as repeat_report
from leakbench.site.lessons import verdict_css

PAGE = "repeatability.html"


def repeatability(results: Path, machine: str, lessons: set[str], notes: list) -> list[dict]:
    """The tables of repeatability.html: one per results/repeatability/<machine>-tf-*.json that
    leakbench.repeat.run wrote for `machine` (one TF version, one --jobs setting), sorted by TF
    version then jobs; [] when there is none.

    Each table: {"id": its anchor (file stem less the machine), "file", "version", "jobs",
    "title", "about", "totals", "runs_per_variant", "runs", "planned", "head": column titles,
    "rows"}; a row is repeat_report.table's, plus CSS classes, and "href" to the pair's lesson
    when it has one (`lessons`: pair names), else None. A file that is no repeatability result
    of `machine` is left out with a line in `notes`; nothing is raised for it.
    """
    tables = []
    for path in sorted((Path(results) / repeat.FOLDER).glob(f"{machine}-tf-*.json")):
        try:
            result = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            notes.append(f"{path.name} skipped: cannot be read as JSON ({getattr(e, 'msg', None) or e})")
            continue
        if not isinstance(result, dict) or result.get("format") != repeat.FORMAT or "summary" not in result:
            notes.append(f"{path.name} skipped: not a repeatability result of format {repeat.FORMAT}")
            continue
        if result.get("machine") != machine:
            notes.append(f"{path.name} skipped: measured on machine {result.get('machine')!r}, not {machine!r}")
            continue
        head, rows = repeat_report.table(result)
        jobs, summary = result["jobs"], result["summary"]
        tables.append({
            "id": path.stem[len(machine) + 1:], "file": path.name, "version": result.get("tensorflow") or "none",
            "jobs": jobs,
            "title": f"TensorFlow {repeat_report.tensorflow(result)}, {jobs} {'child' if jobs == 1 else 'children'} "
                     "at a time",
            "about": repeat_report.about(result), "totals": repeat_report.totals(result),
            "runs_per_variant": result["runs_requested"], "runs": summary["runs"],
            "planned": result["runs_requested"] * summary["variants"], "head": head,
            "rows": [{**row, "expected_css": verdict_css(row["expected"]),
                      "verdicts": [(word, n, verdict_css(word)) for word, n in row["verdicts"]],
                      "href": f"lessons/{row['pair']}.html" if row["pair"] in lessons else None}
                     for row in rows]})
    return sorted(tables, key=lambda t: (store.version_key(t["version"]), t["jobs"]))


def pair_repeatability(tables: list[dict], name: str) -> list[dict]:
    """A lesson's share of repeatability's tables: [{"id", "title", "rows": pair `name`'s rows}]
    for each table that has the pair, in the tables' order."""
    found = []
    for table in tables:
        rows = [row for row in table["rows"] if row["pair"] == name]
        if rows:
            found.append({"id": table["id"], "title": table["title"], "rows": rows})
    return found
