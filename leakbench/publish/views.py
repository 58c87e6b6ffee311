"""Every published view of the reference records, regenerated from them (leakbench publish).

Each view is written by the command a user would run for it (thin glue: the commands decide and
render; this module only names the files), in the order below, so the committed files are what
those commands print today:

    results/<machine>/, results/benchmarks.json   asv's results (leakbench.publish.asv_builds)
    results/run-<machine>-tf-<release>.md          the run table of the default release
    results/matrix-<machine>.md                    leakbench matrix
    results/compare-<machine>-<old>-<new>.md       leakbench compare (COMPARED)
    results/gate-<machine>-<release>-nightly.*     leakbench gate: markdown, JSON, JUnit XML
    results/causes-leave-one-out.md                leakbench causes --leave-one-out
    results/report-back/<pair>.md                  leakbench report-back
    results/flamegraphs/tf-<v>/<pair>-leaky.html   the leaky variants' memray flame graphs
    site/                                          leakbench site (built, not committed)
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from leakbench import version
from leakbench.history import builds, machines, store
from leakbench.reporters import table

# compare's committed pairs of builds: the oldest release with every pair against the default,
# and the default against the nightly (the release gate's question)
COMPARED = (("2.13.1", builds.DEFAULT_RELEASE), (builds.DEFAULT_RELEASE, builds.NIGHTLY))


def _leakbench(args: list[str], ok=(0, 1)) -> None:
    """Run `python -m leakbench ARGS`; exit codes in `ok` are results (1: a verdict or a gate
    said so), anything else raises RuntimeError with the command."""
    done = subprocess.run([sys.executable, "-m", "leakbench", *args])
    if done.returncode not in ok:
        raise RuntimeError(f"leakbench {' '.join(args)} exited {done.returncode}")


def run_table(results: Path, machine: str, release: str) -> Path:
    """results/run-<machine>-tf-<release>.md: the wide run table of that build's records, headed
    by the machine and the engine that made them."""
    recs = store.read_records(store.records_path(results, machine, release))
    cpu, cores = machines.machine_of(recs[0]) or ("unknown CPU", None)
    title = (
        f"leakbench run: TensorFlow {release} on {machine} ({machines.describe((cpu, cores))}), "
        f"{version.describe(recs[0])}"
    )
    path = Path(results) / f"run-{machine}-tf-{release}.md"
    path.write_text(table.markdown(recs, title))
    return path


def tables(results: Path, machine: str) -> list[list[str]]:
    """The `leakbench` commands (argument lists) that write the committed markdown and JSON
    tables of `machine`'s records in `results`, each into its file (--out, --junit): the matrix,
    each COMPARED pair of builds, the gate (markdown and JUnit XML, then JSON), the leave-one-out
    table and the report-back blocks. tests/test_committed_tables.py runs the same list."""
    where = ["--results", str(results), "--machine", machine]
    found = [["matrix", *where, "--out", str(results / f"matrix-{machine}.md")]]
    for old, new in COMPARED:
        out = results / f"compare-{machine}-{old}-{new}.md"
        found.append(["compare", old, new, *where, "--out", str(out)])
    stem = results / f"gate-{machine}-{builds.DEFAULT_RELEASE}-nightly"
    gate = ["gate", "--baseline", builds.DEFAULT_RELEASE, "--candidate", builds.NIGHTLY, *where]
    found.append([*gate, "--out", f"{stem}.md", "--junit", f"{stem}.xml"])
    found.append([*gate, "--format", "json", "--out", f"{stem}.json"])
    causes = results / "causes-leave-one-out.md"
    found.append(["causes", "--leave-one-out", *where, "--out", str(causes)])
    found.append(["report-back", *where, "--out-dir", str(results / "report-back")])
    return found


def regenerate(root: Path, results: Path, machine: str, say: Callable[[str], None]) -> None:
    """Write every view of the module docstring from `machine`'s records in `results`. Raises
    RuntimeError where a command fails, store.VersionError where records cannot be read."""
    from leakbench.publish import asv_builds  # asv: only where asv's results are made

    # `leakbench run --flamegraph-dir` draws every variant's graph; the lessons show the leaky
    # side's (leakbench.site.flamegraphs), so only those are published
    for drawn in (Path(results) / "flamegraphs").glob("tf-*/*-fixed.html"):
        drawn.unlink()
    say("views: asv's results")
    asv_builds.publish_asv(root, results, machine, log=say)
    say("views: the run table, matrix, compare, gate, causes, report-back")
    run_table(results, machine, builds.DEFAULT_RELEASE)
    for args in tables(results, machine):
        _leakbench(args)
    say("views: the site")
    _leakbench(
        ["site", "--results", str(results), "--machine", machine, "--out-dir", str(root / "site")]
    )
