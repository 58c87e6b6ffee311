"""repeatability.html's tables, and each lesson's share of them: how often
each verdict repeats, from the files leakbench.repeat.repeatability writes
(results/repeatability/<machine>-tf-<version>[-jobsN].json). The cells are
leakbench.reporters.repeatability's, the same as its markdown.
"""

from __future__ import annotations

from pathlib import Path

from leakbench import jsonfile
from leakbench.history import store
from leakbench.repeat import repeatability as repeat
from leakbench.reporters import repeatability as repeat_report
from leakbench.site.lessons import verdict_css

PAGE = "repeatability.html"


def repeatability(results: Path, machine: str, lessons: set[str], notes: list) -> list[dict]:
    """The tables of repeatability.html: one per results/repeatability/<machine>-tf-*.json that
    leakbench.repeat.repeatability wrote for `machine` (one TF version, one --jobs setting), sorted
    by TF version then jobs; [] when there is none.

    Each table: {"id": its anchor (file stem less the machine), "file", "version", "jobs",
    "title", "about", "totals", "margins" (repeat_report.peak_margins, without the list marks),
    "runs_per_variant", "runs", "planned", "head": column titles,
    "rows"}; a row is repeat_report.table's, plus CSS classes, and "href" to the pair's lesson
    when it has one (`lessons`: pair names), else None; "order", its sort key. A file that is no
    repeatability result of `machine` (unreadable, a FIFO or device, over jsonfile.MAX_BYTES, not
    JSON, parts of other types) is left out with a line in `notes`; nothing is raised for it.
    """
    tables = []
    for path in sorted((Path(results) / repeat.FOLDER).glob(f"{machine}-tf-*.json")):
        try:  # a regular file under jsonfile.MAX_BYTES: a FIFO or a device is never opened
            result = jsonfile.load(path)
        except jsonfile.Unreadable as e:
            notes.append(f"{path.name} skipped: {e.reason}")
            continue
        if (
            not isinstance(result, dict)
            or result.get("format") != repeat.FORMAT
            or "summary" not in result
        ):
            notes.append(
                f"{path.name} skipped: not a repeatability result of format {repeat.FORMAT}"
            )
            continue
        if result.get("machine") != machine:
            notes.append(
                f"{path.name} skipped: measured on machine "
                f"{result.get('machine')!r}, not {machine!r}"
            )
            continue
        try:
            tables.append(_table(path, result, machine, lessons))
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
            # made by hand, or damaged
            why = f"{type(e).__name__}: {e}".splitlines()[0]
            notes.append(
                f"{path.name} skipped: not a repeatability result of format {repeat.FORMAT} ({why})"
            )
    return sorted(tables, key=lambda t: t["order"])


def _table(path: Path, result: dict, machine: str, lessons: set[str]) -> dict:
    """repeatability's table of one file. Raises KeyError, TypeError, ValueError, ... for a result
    whose parts are not what leakbench.repeat.repeatability writes: the types the page compares and
    sorts by are checked here, so that rendering the page cannot fail on them."""
    head, rows = repeat_report.table(result)
    jobs, summary = result["jobs"], result["summary"]
    version = result.get("tensorflow") or "none"
    planned = result["runs_requested"] * summary["variants"]
    if not all(isinstance(n, int) for n in (jobs, summary["runs"], planned)) or not isinstance(
        version, str
    ):
        raise TypeError(
            "jobs, runs_requested, summary.runs and "
            "summary.variants must be integers, tensorflow a string"
        )
    return {
        "id": path.stem[len(machine) + 1 :],
        "file": path.name,
        "version": version,
        "jobs": jobs,
        "order": (store.version_key(version), jobs),
        "title": (
            f"TensorFlow {repeat_report.tensorflow(result)}, {jobs} "
            f"{'child' if jobs == 1 else 'children'} "
            "at a time"
        ),
        "about": repeat_report.about(result),
        "totals": repeat_report.totals(result),
        "margins": [line.removeprefix("- ") for line in repeat_report.peak_margins(result)],
        "runs_per_variant": result["runs_requested"],
        "runs": summary["runs"],
        "planned": planned,
        "head": head,
        "rows": [
            {
                **row,
                "expected_css": verdict_css(row["expected"]),
                "verdicts": [(word, n, verdict_css(word)) for word, n in row["verdicts"]],
                "href": f"lessons/{row['pair']}.html" if row["pair"] in lessons else None,
            }
            for row in rows
        ],
    }


def pair_repeatability(tables: list[dict], name: str) -> list[dict]:
    """A lesson's share of repeatability's tables: [{"id", "title", "rows": pair `name`'s rows}]
    for each table that has the pair, in the tables' order."""
    found = []
    for table in tables:
        rows = [row for row in table["rows"] if row["pair"] == name]
        if rows:
            found.append({"id": table["id"], "title": table["title"], "rows": rows})
    return found
