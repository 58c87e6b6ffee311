"""Run a watched job (tests/data/watch_job.py) as the engine runs a child: in its own session,
its process tree's RSS capped and its time without progress limited
(leakbench.engine.supervise), killed past either. A leaky job is never run without them
(tests/test_watch.py, tests/test_keras_watch.py).
"""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

from leakbench.engine import memlimit, supervise
from leakbench.history import store
from leakbench.units import GIB

JOB = Path(__file__).with_name("data") / "watch_job.py"
REPO = Path(__file__).resolve().parents[1]
CAP_BYTES = 2 * GIB  # each job's tree (a TensorFlow process is ~0.5 GiB; the leaks add < 0.5)
# Seconds a job may go without progress (a line in its log: a phase begun, or 12 more samples
# while it is undecided) before it is killed as a hang: per step, as the engine's --timeout, not
# for the whole job. A job decides in about 10-60 s on the 2-core VM beside other work, but a rate
# near its bar keeps the watch looking, sample by sample, up to watch_job's MOST samples (about
# 0.75 s each when quiet): predict_in_loop's leaky side keeps about +9 KiB/rep against the bar of
# 13 and has taken 97 s (docs/watch.md); a whole-job limit of 150 s once killed it in CI.
TIMEOUT_SECONDS = 150.0


def run_watched(kind: str, pair: str, variant: str, folder: Path) -> dict:
    """The WatchResult (as_dict, without its series) of one watched job; AssertionError naming
    the job where it went over the cap, its timeout, or failed."""
    out = folder / f"{kind}-{pair}-{variant}.json"
    log = folder / f"{kind}-{pair}-{variant}.log"
    cap = min(CAP_BYTES, memlimit.default_cap_bytes())
    stopped = None
    with log.open("w") as sink:
        child = supervise.Supervised(
            [sys.executable, str(JOB), kind, pair, variant, str(out)],
            env=supervise.child_env(),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
        deadline, logged = time.monotonic() + TIMEOUT_SECONDS, 0
        try:
            while not child.reap() and stopped is None:
                size = log.stat().st_size
                if size > logged:  # progress: the timeout starts again
                    deadline, logged = time.monotonic() + TIMEOUT_SECONDS, size
                stopped = child.over_limits(cap, deadline)
                time.sleep(supervise.POLL_SECONDS)
        finally:
            child.kill()
    tail = log.read_text()[-2000:]
    ended = f"{stopped} after {child.seconds():.0f} s"
    assert stopped is None, f"{kind} {pair} {variant}: {ended}; its log:\n{tail}"
    assert child.returncode == 0, f"{kind} {pair} {variant} exited {child.returncode}:\n{tail}"
    return json.loads(out.read_text())


def tensorflow_version() -> str | None:
    """The installed TensorFlow's version, read without importing it."""
    for name in ("tensorflow-cpu", "tensorflow"):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return None


@functools.cache
def results_at_head() -> Path:
    """results/ as committed (git HEAD), extracted once into a folder of its own, removed at exit
    (as conftest's committed_results fixture, which these helpers cannot request): not the
    records a `make run` in this checkout files beside them. The working tree's results/ where
    this is no git checkout."""
    if not (REPO / ".git").exists():
        return REPO / "results"
    from conftest import extract_results_at_head

    dest = Path(tempfile.mkdtemp(prefix="leakbench-committed-"))
    atexit.register(shutil.rmtree, dest, ignore_errors=True)
    return extract_results_at_head(dest)


def committed_verdict(pair: str, variant: str) -> str | None:
    """`leakbench run`'s verdict for a variant on the installed TensorFlow, as committed in the
    published dataset (results/records/<its machine>/tf-<version>.jsonl, the machine
    store.published_machine names), None where no record is committed."""
    results = results_at_head()
    try:
        path = store.records_path(
            results, store.published_machine(results), str(tensorflow_version())
        )
    except store.VersionError:  # no published records at all
        return None
    if not path.exists():
        return None
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("pair") == pair and rec.get("variant") == variant:
            return rec["verdict"]
    return None


def assert_reads_as_run(kind: str, pair: str, variant: str, folder: Path) -> None:
    """A watched job's verdict is `leakbench run`'s committed one (committed_verdict), or where
    none is committed, what its variant should read: leak for leaky, no-leak for fixed."""
    expected = committed_verdict(pair, variant) or ("leak" if variant == "leaky" else "no-leak")
    found = run_watched(kind, pair, variant, folder)
    assert found["verdict"] == expected, found
