"""The command line interrupted mid-suite: kill -9 and Ctrl-C (SIGINT).

A suite of two pure-Python pairs copied from tests/data/: `a_leak` (measured
in under a second) and `b_hang` (a repetition that sleeps an hour). The
`leakbench run` process is interrupted once `a_leak`'s record is on disk and
`b_hang`'s child is running: the record written before stays valid JSON, no
measured process outlives the runner, and a rerun appends cleanly. The same
for `leakbench calibrate`, whose result file is replaced atomically after
every run and which resumes from it.

Every run is capped and timed (--cap, --timeout).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from conftest import wait_for

DATA = Path(__file__).parent / "data"
LEAKBENCH = Path(sys.executable).with_name("leakbench")
FAST = ["--cap", "1GiB", "--timeout", "60", "--warmup", "1", "--reps", "6", "--heap-reps", "0"]


@pytest.fixture
def suite(tmp_path):
    root = tmp_path / "root"
    for name, source in (("a_leak", "python_leak"), ("b_hang", "python_hang")):
        for sub in ("scenarios", "fixes"):
            (root / sub).mkdir(parents=True, exist_ok=True)
            shutil.copy(DATA / f"{source}.py", root / sub / f"{name}.py")
    return root


def start(args: list[str], root: Path, cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "LEAKBENCH_ROOT": str(root)}
    # A shell's background job inherits SIGINT ignored, and Python then never turns it into
    # KeyboardInterrupt: give the command the default disposition a terminal gives it.
    return subprocess.Popen(
        [str(LEAKBENCH), *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def measured_child(cli: subprocess.Popen, name: str) -> psutil.Process | None:
    """The runner's child measuring scenario file
    `name`, once it is in its repetitions (or None)."""
    try:
        for proc in psutil.Process(cli.pid).children():
            if f"{name}.py" in " ".join(proc.cmdline()):
                return proc
    except psutil.Error:
        pass
    return None


def lines_of(path: Path) -> list[dict]:
    """Every line of a JSON lines file, parsed: fails on a torn or partial line."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def interrupt_mid_suite(suite: Path, tmp_path: Path, sig: int):
    """Start `leakbench run` on both pairs, wait for
    a_leak's record and b_hang's child, send `sig`."""
    out = tmp_path / "records.jsonl"
    json_out = ["--format", "json", "--out", str(out)]
    cli = start(["run", "--variant", "leaky", *json_out, *FAST], suite, tmp_path)
    try:
        wait_for(lambda: out.is_file() and out.read_text().count("\n") >= 1, 60, "first record")
        child = wait_for(lambda: measured_child(cli, "b_hang"), 30, "child measuring b_hang")
        time.sleep(1.0)  # into its hanging repetition
        os.kill(cli.pid, sig)
        stdout, stderr = cli.communicate(timeout=15)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    _gone, alive = psutil.wait_procs([child], timeout=10)
    assert not alive, f"the measured child outlived the command: {alive}"
    return cli.returncode, stderr, out


@pytest.mark.timeout(120)
def test_kill_9_mid_suite_keeps_records_and_a_rerun_replaces_them(suite, tmp_path):
    code, _stderr, out = interrupt_mid_suite(suite, tmp_path, signal.SIGKILL)
    assert code == -signal.SIGKILL
    before = lines_of(out)
    assert [(r["pair"], r["verdict"]) for r in before] == [("a_leak", "leak")]
    # the next run: the same file, replaced whole (--out), every line still a record
    rerun = start(
        ["run", "a_leak", "--variant", "leaky", "--format", "json", "--out", str(out), *FAST],
        suite,
        tmp_path,
    )
    rerun.communicate(timeout=60)
    assert rerun.returncode == 0
    assert [r["pair"] for r in lines_of(out)] == ["a_leak"]


@pytest.mark.timeout(120)
def test_ctrl_c_stops_the_child_and_keeps_records(suite, tmp_path):
    start_ = time.monotonic()
    code, stderr, out = interrupt_mid_suite(suite, tmp_path, signal.SIGINT)
    assert code == 130, stderr
    assert "Traceback" not in stderr
    assert [(r["pair"], r["verdict"]) for r in lines_of(out)] == [("a_leak", "leak")]
    assert time.monotonic() - start_ < 60  # b_hang's 60 s timeout was not waited for


@pytest.mark.timeout(180)
def test_calibrate_killed_keeps_valid_json_and_resumes(tmp_path):
    out = tmp_path / "calibration.json"
    args = [
        "calibrate",
        "--holders",
        "python",
        "--sizes",
        "0,1MiB",
        "--runs",
        "3",
        "--cap",
        "1GiB",
        "--timeout",
        "60",
        "--out",
        str(out),
        "--suite-records",
        str(tmp_path / "none.jsonl"),
    ]
    cli = start(args, DATA, tmp_path)
    try:
        wait_for(
            lambda: out.is_file() and len(json.loads(out.read_text())["observations"]) >= 2,
            90,
            "two calibration runs",
        )
        os.kill(cli.pid, signal.SIGKILL)
        cli.wait(timeout=10)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    kept = json.loads(out.read_text())["observations"]  # valid JSON: replaced whole, never torn
    assert 2 <= len(kept) <= 6
    rerun = start(args, DATA, tmp_path)
    stdout, stderr = rerun.communicate(timeout=120)
    assert rerun.returncode == 0, stderr
    result = json.loads(out.read_text())
    seen = sorted((o["bytes_per_rep"], o["run"]) for o in result["observations"])
    assert seen == [(0, 1), (0, 2), (0, 3), (1 << 20, 1), (1 << 20, 2), (1 << 20, 3)]  # each once
    # the runs before the kill were kept, not redone
    for before, after in zip(kept, result["observations"]):
        assert {k: v for k, v in before.items() if v != after.get(k)} == {}
    assert "| steady | python | leak | 1 MiB | 3/3 | caught " in stdout
