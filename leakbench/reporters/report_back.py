"""`leakbench report-back`'s markdown: for a pair from a public report, a short
block to paste into the upstream issue — the thread's claim, the verdict per
TensorFlow release, where it changed, the machine, how to reproduce it.

Pure functions from matrix data (leakbench.history.matrix) and a scenario's
metadata (leakbench.contract) to text; every number is a matrix cell's, shown
as the matrix's markdown shows it (leakbench.reporters.history.matrix_cell).
"""

from __future__ import annotations

import re

from leakbench import metrics
from leakbench.analysis.judge.verdict import VERDICTS
from leakbench.contract import Scenario
from leakbench.history import builds
from leakbench.history.matrix import verdict_runs
from leakbench.reporters import markdown_table
from leakbench.reporters.history import matrix_cell

ISSUE_URL = "https://github.com/{repo}/issues/{number}"
_ISSUE = re.compile(r"([\w.-]+/[\w.-]+)#(\d+)")
# The clone line's address: this checkout names no remote, so the block says what to put there.
CLONE = "git clone <leakbench repository URL> leakbench"
LAST_LINE = "Measured with leakbench; the verdict rules are in docs/verdicts.md."


def is_report(scenario: Scenario) -> bool:
    """A report pair: its SOURCE names a public issue ('owner/repo#N'), not a seed source word."""
    return _ISSUE.fullmatch(scenario.source or "") is not None


def issue_link(source: str) -> str:
    """'owner/repo#N' -> '[owner/repo#N](https://github.com/owner/repo/issues/N)'."""
    match = _ISSUE.fullmatch(source)
    assert match is not None, source  # called for report pairs only: their SOURCE names an issue
    return f"[{source}]({ISSUE_URL.format(repo=match.group(1), number=match.group(2))})"


def first_paragraph(docstring: str | None) -> str:
    """A docstring's first paragraph as one line ('' without a docstring)."""
    paragraphs = re.split(r"\n\s*\n", (docstring or "").strip())
    return " ".join(paragraphs[0].split()) if paragraphs else ""


def _words(text: str) -> set:
    return set(re.findall(r"\w+", text.lower())) - {"a", "an", "the"}


def _sentence(text: str) -> str:
    text = text.strip()
    return text if not text or text.endswith((".", "!", "?")) else text + "."


def claim(scenario: Scenario, docstring: str | None) -> list[str]:
    """The thread's claim in one or two lines: REPORTED (leaks on, fixed in, note), or
    without it the scenario's TITLE and the first paragraph of its docstring."""
    reported = scenario.reported
    if reported:
        fixed = (
            f"fixed in {reported['fixed_in']}"
            if reported["fixed_in"]
            else "no release named as fixed"
        )
        per = "" if reported["issue"] == scenario.source else f" ({reported['issue']})"
        lines = [
            f"**The thread's claim{per}:** leaks on {', '.join(reported['leaks_on'])}; {fixed}."
        ]
        if reported.get("note"):
            lines.append(f"Note: {_sentence(reported['note'])}")
        return lines
    title, paragraph = (
        _sentence(scenario.title[:1].upper() + scenario.title[1:]),
        first_paragraph(docstring),
    )
    words = (
        title
        if not paragraph
        else paragraph
        if _words(title) <= _words(paragraph)
        else f"{title} {paragraph}"
    )
    return [f"**The report, in leakbench's words:** {_sentence(words)}"]


def cell_text(cell: dict | None) -> str:
    """A matrix cell as the matrix's markdown shows it (the verdict and the number it rests on)."""
    return matrix_cell(cell)


def segments(cells: dict, versions: list) -> list[tuple[str, str, str]]:
    """Runs of one verdict over consecutive measured
    releases of matrix cells (matrix.verdict_runs)."""
    return verdict_runs({v: c["verdict"] for v, c in cells.items() if c is not None}, versions)


def _span(first: str, last: str) -> str:
    first, last = builds.label(first), builds.label(last)  # a nightly by its build date
    return first if first == last else f"{first}–{last}"


def change_line(cells: dict, versions: list) -> str | None:
    """Where the leaky verdict changed: the first release whose verdict differs from the
    previous measured one, and the runs of verdicts; None when nothing was measured."""
    runs = segments(cells, versions)
    if not runs:
        return None
    if len(runs) == 1:
        verdict, first, last = runs[0]
        return (
            f"The leaky variant reads {verdict} on every release measured ({_span(first, last)})."
        )
    path = " → ".join(f"{verdict} {_span(first, last)}" for verdict, first, last in runs)
    return (
        f"**Changed at {builds.label(runs[1][1])}** (the first release "
        f"whose leaky verdict differs from the one before): {path}."
    )


def other_release(cells: dict, versions: list) -> str:
    """The release to name for `make run TF_VERSION=`: the newest whose leaky verdict differs
    from the newest release's (where it reads otherwise), else the oldest measured."""
    runs = segments(cells, versions)
    if len(runs) > 1:
        return builds.NIGHTLY if builds.is_nightly(runs[-2][2]) else runs[-2][2]
    return versions[0] if versions else builds.DEFAULT_RELEASE


def machine_line(environments: list[dict], versions: list, machine: str | None) -> str:
    """The machine from the records' environment: CPU
    model, cores, OS, Python, tensorflow-cpu releases."""
    described = []
    for env in environments:
        parts = [
            env.get("cpu"),
            f"{env['cores']} cores" if env.get("cores") else None,
            (env.get("platform") or "").split("-")[0] or None,
            f"Python {env['python']}" if env.get("python") else None,
        ]
        text = ", ".join(p for p in parts if p)
        if text and text not in described:
            described.append(text)
    released = [v for v in versions if not builds.is_nightly(v)]
    nightlies = [d.isoformat() for v in versions if (d := builds.build_date(v))]
    releases = (
        f"tensorflow-cpu {_span(released[0], released[-1])}" if released else "tensorflow-cpu"
    )
    if nightlies:
        releases += f" and tf-nightly ({', '.join(nightlies)})"
    where = f" (asv machine `{machine}`)" if machine else ""
    return (
        f"Machine{where}: {'; '.join(described) + ', ' if described else ''}{releases}, "
        "one virtualenv per release."
    )


def _numbers_line(scenario: Scenario) -> str:
    if scenario.kind == "peak":
        return (
            "Each cell: the verdict and the number it rests on: the rise of the peak above "
            f"baseline from the smallest to the largest {scenario.size_param}, and k in peak ∝ "
            f"{scenario.size_param}^k."
        )
    return (
        "Each cell: the verdict and the number it rests on, per repetition (held memory, or the "
        "signal that decided a leak); one repetition is "
        f"{scenario.repetition}."
    )


def _legend(cells: list) -> list[str]:
    found = []
    if any(c and not c["expected"] for c in cells):
        found.append("**Bold**: not what the variant should read (docs/verdicts.md).")
    if any(
        c
        and (c["verdict"] == "fragmentation" or not c["expected"])
        and c.get(metrics.TRIM.key) is not None
        for c in cells
    ):
        found.append(
            "malloc: glibc's malloc in use, KiB/repetition; trim: what malloc_trim gave back, MiB."
        )
    if any(c and c["verdict"] == "fragmentation" for c in cells):
        found.append(f"fragmentation: {VERDICTS['fragmentation']}.")
    return [" ".join(found)] if found else []


def block(
    pair: str,
    scenario: Scenario,
    docstring: str | None,
    rows: dict,
    versions: list,
    environments: list[dict],
    machine: str | None = None,
    bisected: list | None = None,
) -> str:
    """The markdown block of one report pair. rows: variant -> {version: matrix cell or None}
    (leakbench.history.matrix rows of this pair); versions in order; environments: the
    `environment` of the pair's records; bisected: this pair's confirmed `leakbench bisect`
    boundaries (leakbench.history.matrix.bisected)."""
    leaky, fixed = rows.get("leaky", {}), rows.get("fixed", {})
    lines = [f"### {issue_link(scenario.source)}: leakbench pair `{pair}`", ""]
    lines += claim(scenario, docstring) + [""]
    lines += markdown_table(
        ["TF release", "leaky (the pattern reported)", "fixed (the workaround)"],
        ([builds.label(v), cell_text(leaky.get(v)), cell_text(fixed.get(v))] for v in versions),
    )
    lines += ["", _numbers_line(scenario)]
    lines += _legend([*leaky.values(), *fixed.values()])
    changed = change_line(leaky, versions)
    if changed:
        lines += ["", changed]
    for b in bisected or []:
        lines += [
            "",
            f"`leakbench bisect` ({b['variant']}): the first build reading otherwise is "
            f"{b['bad']} ({b['bad_date']}), after {b['good']}; commits: {b['compare_url']}",
        ]
    lines += [
        "",
        machine_line(environments, versions, machine),
        "",
        "Reproduce (Linux with make and python3; see README.md):",
        "```sh",
        f'{CLONE} && cd leakbench && make run ARGS="{pair}"',
        f'make run TF_VERSION={other_release(leaky, versions)} ARGS="{pair}"   # another release',
        f"diff scenarios/{pair}.py fixes/{pair}.py   # the workaround",
        "```",
        "",
        LAST_LINE,
    ]
    return "\n".join(lines) + "\n"
