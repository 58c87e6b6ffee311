"""One measurement of every TensorFlow variant per test run, in a process of its own.

tests/conftest.py starts `python tests/tf_session.py OUT PARENT` as the tests are collected;
the tests that assert on the records (tf_records) read OUT once it exits. Its own process, not
threads of pytest's: a test that counts its process's children or open files, or patches
subprocess.Popen (test_engine, test_fuzz), must not see these children, and they must not
see its patches, now that every other test runs beside them.

The product's own settings (those of `make run`, its timeout included), with a cap of its
own, two children at a time, the costliest first. OUT: JSON lines, one per record as it
ends, {"key": [pair, variant] or [target, "factory"], **record}. The process dies with PARENT
(leakbench.engine.supervise.die_with_parent), and its children with it; it is no subreaper
(it supervises its children as the product does).
"""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from leakbench import catalog
from leakbench.check import pipeline as check
from leakbench.engine import supervise
from leakbench.history import pin, store
from leakbench.settings import Settings

# The product's timeout (Settings.timeout_seconds, 300 s) is per step (the most a child may go
# without progress: runner.ChildRun), not for the whole child: docs/protocol.md, "Settings",
# gives the longest steps in the committed records and why a busy machine stays inside it,
# while a real deadlock still reads `hang` within 5 min of its last progress, well inside
# pytest's 1800 s per test. The cap is explicit: two children at a time on any machine.
TF_SETTINGS = Settings(cap_bytes=3 << 30)
TF_CHECK_FILE = Path(__file__).parent / "data" / "check_tf.py"
TF_FACTORIES = ("shuffle_buffer", "stateful_map", "bounded_steps")


def tf_jobs() -> dict:
    """{(pair, variant): scenario or fix file, (name, "factory"): check target}, the costliest
    first: two children at a time, a long pair started last would run alone at the end."""
    root = catalog.find_root()
    jobs = {
        (name, variant): str(root / catalog.VARIANT_DIRS[variant] / f"{name}.py")
        for name in catalog.pair_names(root)
        for variant in ("leaky", "fixed")
    }
    jobs.update({(name, "factory"): f"{TF_CHECK_FILE}:{name}" for name in TF_FACTORIES})
    cost = {}  # seconds each took in the committed records of this TensorFlow (any machine); else 0
    for path in sorted(root.glob(f"results/records/*/tf-{pin.installed_tf_version()}.jsonl")):
        cost.update({(r["pair"], r["variant"]): r["seconds"] for r in store.read_records(path)})
    return dict(sorted(jobs.items(), key=lambda job: -cost.get(job[0], 0.0)))


def main(out: Path, parent: int) -> None:
    supervise.die_with_parent(parent, reaper=False)
    with out.open("w") as f, ThreadPoolExecutor(max_workers=2) as pool:
        jobs = tf_jobs()
        futures = {pool.submit(check.check, spec, TF_SETTINGS): key for key, spec in jobs.items()}
        for future in as_completed(futures):
            f.write(json.dumps({"key": list(futures[future]), **future.result()}) + "\n")
            f.flush()


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
