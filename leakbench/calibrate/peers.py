"""Peers on the calibration's designed cases: TensorFlow's MemoryChecker and
pytest-memray's limit_leaks, each given the same scenario file, parameters,
warm-up and repetitions as the engine, in a fresh, capped, timed process.

- memory_checker: `tensorflow.python.framework.memory_checker.MemoryChecker`
  around the measured repetitions, `record_snapshot()` after each, then
  `assert_no_leak_if_all_possibly_except_one()`: a leak if it raises. It
  counts Python objects per type (the C++ half is not in open-source builds),
  so it is blind to size: one object more per repetition is a leak.
- limit_leaks: `pytest --memray` on a generated test file whose module runs
  setup and the warm-up (outside tracking) and whose one test, marked
  `@pytest.mark.limit_leaks(LIMIT_LEAKS)`, runs the measured repetitions: a
  leak if any one allocation stack still holds LIMIT_LEAKS or more at the
  test's end. PYTHONMALLOC=malloc, as pytest-memray recommends for leaks.

The process is watched as the runner watches the engine's child (its tree's
RSS every supervise.POLL_SECONDS, killed past the cap or the timeout) and dies
with its parent (PR_SET_PDEATHSIG). Run as `python -m leakbench.calibrate.peers
CONFIG_JSON`; it prints one JSON line: {"leak": bool, "detail": str}.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

from leakbench.engine import supervise

PEERS = ("memory_checker", "limit_leaks")
LIMIT_LEAKS = "64 KB"  # pytest-memray's KB is 1024 bytes: a stack holding 64 KiB after the test
_LIMIT_LEAKS_TEXT = "per location but at least one location leaked more"

_TEST_FILE = """\
import pytest
from pathlib import Path
from leakbench import contract

MODULE = contract.load_module(Path({path!r}))
STATE = MODULE.setup(**{params!r})
for _ in range({warmup}):
    MODULE.repetition(STATE)


@pytest.mark.limit_leaks({limit!r})
def test_measured_repetitions():
    for _ in range({reps}):
        MODULE.repetition(STATE)
"""


def run_peer(
    peer: str,
    path: Path,
    params: dict,
    *,
    warmup: int,
    reps: int,
    cap_bytes: int,
    timeout_seconds: float,
) -> dict:
    """One peer on one case: {"peer", "status" (ok, over-cap, hang, error), "leak" (bool or None),
    "detail", "wall_seconds", "max_rss_bytes"}."""
    config = {
        "peer": peer,
        "path": str(Path(path).resolve()),
        "params": params,
        "warmup": warmup,
        "reps": reps,
        "parent": os.getpid(),
    }
    env = supervise.child_env({"PYTHONMALLOC": "malloc"} if peer == "limit_leaks" else None)
    with tempfile.TemporaryDirectory(prefix="leakbench-peer-") as tmp:
        out, log = Path(tmp) / "out", Path(tmp) / "log"
        config["folder"] = tmp
        with open(out, "wb") as stdout, open(log, "wb") as stderr:
            child = supervise.Supervised(
                supervise.python("leakbench.calibrate.peers", json.dumps(config)),
                env=env,
                stdout=stdout,
                stderr=stderr,
            )
        status, deadline = "ok", child.started + timeout_seconds
        try:
            while not child.reap():
                status = child.over_limits(cap_bytes, deadline) or "ok"
                if status != "ok":
                    break
                time.sleep(supervise.POLL_SECONDS)
        finally:
            child.kill()
        proc, max_rss = child.proc, child.max_rss_bytes
        found = {
            "peer": peer,
            "status": status,
            "leak": None,
            "detail": None,
            "wall_seconds": child.seconds(),
            "max_rss_bytes": max_rss,
        }
        lines = out.read_text(errors="replace").strip().splitlines()
        if status == "ok":
            try:
                found.update(json.loads(lines[-1]))
            except (IndexError, json.JSONDecodeError):
                found["status"] = "error"
                found["detail"] = f"exit code {proc.returncode}: " + " | ".join(
                    log.read_text(errors="replace").strip().splitlines()[-3:]
                )
    return found


def _memory_checker(config: dict) -> dict:
    from tensorflow.python.framework.memory_checker import MemoryChecker

    from leakbench import contract

    module = contract.load_module(Path(config["path"]))
    state = module.setup(**config["params"])
    for _ in range(config["warmup"]):
        module.repetition(state)
    with MemoryChecker() as checker:
        for _ in range(config["reps"]):
            module.repetition(state)
            checker.record_snapshot()
    try:
        checker.assert_no_leak_if_all_possibly_except_one()
    except AssertionError as err:
        return {
            "leak": True,
            "detail": str(err).strip().splitlines()[0][:300] if str(err).strip() else "leak",
        }
    return {"leak": False, "detail": None}


def _limit_leaks(config: dict) -> dict:
    import pytest

    test = Path(config["folder"]) / "test_peer_limit_leaks.py"
    test.write_text(
        _TEST_FILE.format(
            path=config["path"],
            params=config["params"],
            warmup=config["warmup"],
            reps=config["reps"],
            limit=LIMIT_LEAKS,
        )
    )
    report = Path(config["folder"]) / "pytest.txt"
    with open(report, "w") as f:
        saved = sys.stdout
        sys.stdout = f
        try:
            code = pytest.main(
                [
                    str(test),
                    "--memray",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    "-p",
                    "no:randomly",
                    "--rootdir",
                    config["folder"],
                    "-o",
                    "addopts=",
                    "-o",
                    "timeout=0",
                ]
            )
        finally:
            sys.stdout = saved
    text = report.read_text(errors="replace")
    if code == 0:
        return {"leak": False, "detail": None}
    if code == 1 and _LIMIT_LEAKS_TEXT in text:
        return {
            "leak": True,
            "detail": next(
                (ln.strip() for ln in text.splitlines() if "Test was allowed" in ln), ""
            ),
        }
    raise RuntimeError(f"pytest exit code {code}: " + " | ".join(text.strip().splitlines()[-3:]))


def main(config: dict) -> int:
    supervise.die_with_parent(config["parent"])
    found = (_memory_checker if config["peer"] == "memory_checker" else _limit_leaks)(config)
    print(json.dumps(found), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(json.loads(sys.argv[1])))
