"""The engine end to end (measure -> runner -> child -> record -> verdict) on
pure-Python scenarios in tests/data/, each in a fresh subprocess.

Project rule: nothing leaky runs without a cap and a timeout, so every run
here passes an explicit small cap_bytes and timeout_seconds.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from conftest import own_processes

from leakbench import contract, expectation
from leakbench.analysis import record
from leakbench.analysis.judge import protocol, verdict
from leakbench.catalog import Target
from leakbench.engine import messages, probes, runner, supervise
from leakbench.measure import measure
from leakbench.settings import Settings

DATA = Path(__file__).parent / "data"
KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
CAP = 1 * GIB
TIMEOUT = 60.0


def target(name: str) -> Target:
    return Target(contract.read_metadata(DATA / f"{name}.py"), "file")


def settings(**overrides) -> Settings:
    base = dict(
        warmup=1, reps=6, heap_reps=5, cap_bytes=CAP, timeout_seconds=TIMEOUT, scales=(1, 2, 4)
    )
    base.update(overrides)
    # never the defaults (half of RAM, 5 min)
    assert base["cap_bytes"] > 0 and base["timeout_seconds"] > 0
    return Settings(**base)


def engine_run(
    name: str, params: dict | None = None, env: dict | None = None, on_message=None, **overrides
) -> dict:
    t = target(name)
    return measure(
        t,
        {**t.scenario.params, **(params or {})},
        settings(**overrides),
        env=env,
        on_message=on_message,
    )


@pytest.fixture
def spawned(monkeypatch):
    """psutil handles of every process the runner starts during the test."""
    handles = []
    real = subprocess.Popen

    class Recording(real):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            handles.append(psutil.Process(self.pid))

    monkeypatch.setattr(supervise.subprocess, "Popen", Recording)
    return handles


def gone(proc: psutil.Process) -> bool:
    """True if the process no longer runs (is_running also checks the start
    time, so a recycled pid does not count). A zombie has exited; whether it
    is reaped is its parent's business (for a grandchild: init's)."""
    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def assert_no_process_left(spawned: list, before: set[int]) -> None:
    assert spawned, "the runner started no child"
    for proc in spawned:
        assert not proc.is_running(), f"child {proc.pid} still exists (running or unreaped)"
    after = own_processes()
    assert after <= before, f"processes left behind: {after - before}"


# --- growth scenarios ------------------------------------------------------


@pytest.mark.timeout(60)
def test_python_leak_is_a_leak(spawned):
    before = own_processes()
    phases = []
    rec = engine_run("python_leak", on_message=lambda m: "phase" in m and phases.append(m["phase"]))
    assert rec["verdict"] == "leak", rec["metrics"]
    assert "held" in rec["signals"] and "heap" in rec["signals"]
    per_rep = target("python_leak").scenario.params["bytes_per_rep"]
    assert rec["metrics"]["held_growth"]["slope"] == pytest.approx(per_rep, rel=0.2)
    assert rec["metrics"]["rss_growth"]["slope"] == pytest.approx(per_rep, rel=0.2)
    assert rec["metrics"]["retained_heap"]["slope"] == pytest.approx(per_rep, rel=0.2)
    assert rec["phase"] is None and rec["error"] is None
    # the first run, then its confirmation (a leak on bytes alone), which runs no heap pass
    once = ["import", "setup", "warm-up", "repetitions"]
    assert phases == [*once, "heap", "teardown", *once, "teardown"]
    run_ = rec["runs"][0]
    assert run_["status"] == "ok"
    assert len(run_["series"]["rss_bytes"]) == 6
    assert len(run_["heap"]["heap_bytes"]) == 5
    assert run_["teardown_seconds"] is not None
    assert_no_process_left(spawned, before)


@pytest.mark.timeout(60)
def test_bounded_twin_is_no_leak():
    rec = engine_run("python_bounded")
    assert rec["verdict"] == "no-leak", rec["metrics"]
    assert rec["signals"] == []
    # it was judged on the same evidence as the leak, not on missing data
    assert rec["metrics"]["held_growth"] is not None
    assert rec["metrics"]["retained_heap"] is not None
    assert abs(rec["metrics"]["held_growth"]["slope"]) < verdict.HELD_SLOPE_MIN


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "name, signal, metric",
    [
        ("python_thread_leak", "threads", "threads_growth"),
        ("python_fd_leak", "open files", "open_files_growth"),
    ],
)
def test_count_leaks_are_leaks(name, signal, metric):
    rec = engine_run(name, heap_reps=0)
    assert rec["verdict"] == "leak"
    assert signal in rec["signals"]
    assert rec["metrics"][metric]["slope"] == pytest.approx(1.0)
    assert rec["metrics"]["retained_heap"] is None  # heap_reps=0 skips the memray pass


# --- failures: over-cap, hang, error ----------------------------------------


@pytest.mark.timeout(90)
def test_over_cap_is_killed_near_the_cap(spawned):
    before = own_processes()
    cap = 300 * MIB
    rec = engine_run("python_over_cap", cap_bytes=cap, reps=50, heap_reps=0)
    assert rec["verdict"] == "over-cap"
    assert rec["signals"] == [] and rec["metrics"] == {}
    assert rec["phase"] in ("warm-up", "repetitions")
    run = rec["runs"][0]
    # the kernel's peak of the child (wait4), between the runner's polls too
    assert cap - 16 * MIB < run["peak_rss_bytes"] < cap + 200 * MIB
    if run["cap_enforced_by"] == "poll":  # the poll killed once it saw the tree past the cap
        assert cap < run["max_rss_bytes"] < cap + 200 * MIB
    else:  # the run's cgroup: the kernel or the poll killed; what it charged stayed within the cap
        assert run["cap_enforced_by"] in ("cgroup v1", "cgroup v2")
        assert run["cgroup_peak_bytes"] is None or run["cgroup_peak_bytes"] <= cap
        assert cap - 64 * MIB < run["max_rss_bytes"] < cap + 200 * MIB
    # killed long before 50 repetitions of 64 MiB (3.2 GiB) could happen
    assert len(run["series"]["rss_bytes"]) < 10
    assert_no_process_left(spawned, before)


@pytest.mark.timeout(60)
def test_hang_in_repetition_is_cut_at_the_timeout(spawned):
    before = own_processes()
    timeout = 10.0
    start = time.monotonic()
    rec = engine_run("python_hang", timeout_seconds=timeout, heap_reps=0)
    elapsed = time.monotonic() - start
    assert rec["verdict"] == "hang"
    assert rec["phase"] == "warm-up"  # warmup=1: the first repetition is a warm-up one
    assert re.match(
        r"no progress for 1\d s in warm-up \(timeout_seconds 10 s per step\): "
        r"the last sign was warm-up begun, \d+(\.\d)? s into the run$",
        rec["error"],
    ), rec["error"]
    assert rec["signals"] == []
    assert timeout <= rec["runs"][0]["wall_seconds"] < timeout + 10
    assert elapsed < timeout + 10
    assert_no_process_left(spawned, before)


def test_hang_in_teardown_keeps_the_measurement(spawned):
    """A stalled teardown is cut at the teardown timeout, not the whole timeout;
    the measurement was in, so the verdict is its leak and the stall is reported beside it."""
    before = own_processes()
    start = time.monotonic()
    rec = engine_run("python_teardown_hang", teardown_timeout_seconds=3.0, heap_reps=0)
    assert (rec["verdict"], rec["phase"]) == ("leak", None)
    assert rec["runs"][0]["status"] == "hang" and rec["runs"][0]["phase"] == "teardown"
    assert re.match(
        r"teardown did not end within \d\.\d s of the result \(teardown_timeout_seconds 3 s\)",
        rec["teardown_stalled"],
    ), rec["teardown_stalled"]
    assert "held" in rec["signals"]
    assert rec["metrics"]["held_growth"]["slope"] == pytest.approx(1 << 20, rel=0.2)
    assert time.monotonic() - start < TIMEOUT / 2
    assert expectation.LEAK.accepts(rec) and not expectation.NO_LEAK.accepts(rec)
    assert_no_process_left(spawned, before)


@pytest.mark.timeout(60)
def test_hang_without_warmup_is_in_repetitions():
    rec = engine_run("python_hang", timeout_seconds=3.0, warmup=0, heap_reps=0)
    assert (rec["verdict"], rec["phase"]) == ("hang", "repetitions")


# --- the timeout is per step: counted from the child's last sign of progress ---
# Steps of STEP seconds against a timeout of PER_STEP: each step has 4x its time (the
# slack is for a busy machine's start-up and heap replay, not a stopwatch), while every
# phase with repetitions, and the run, last longer than the timeout.
STEP, PER_STEP = 1.0, 4.0


def timed_messages():
    """(on_message, list of (time.monotonic(), message)) for a run."""
    seen = []
    return (lambda m: seen.append((time.monotonic(), m))), seen


@pytest.mark.timeout(90)
def test_steady_slow_progress_outlasts_the_timeout_and_ends_ok(spawned):
    """Warm-up, measured and heap repetitions of STEP s each: every phase, and the
    run, lasts longer than the timeout, yet each step is well inside it."""
    before = own_processes()
    on_message, seen = timed_messages()
    rec = engine_run(
        "python_hang",
        {"seconds": STEP},
        on_message=on_message,
        timeout_seconds=PER_STEP,
        warmup=5,
        reps=5,
        heap_reps=5,
    )
    run_ = rec["runs"][0]
    assert [r["status"] for r in rec["runs"]] == ["ok"], (rec["phase"], rec["error"])
    assert rec["verdict"] == "no-leak" and rec["error"] is None
    for phase in ("warm-up", "repetitions", "heap"):
        assert run_["seconds"][phase] > PER_STEP, (phase, run_["seconds"])
    assert run_["wall_seconds"] > 3 * PER_STEP
    progress = [m for _, m in seen if "progress" in m]
    assert progress == (
        [{"progress": "warm-up", "rep": i} for i in range(5)]
        + [{"progress": "heap", "rep": i} for i in range(5)]
        + [{"progress": "stages"}, {"progress": "reference chain"}]
    )
    gaps = [b - a for (a, _), (b, _) in zip(seen, seen[1:])]
    assert max(gaps) < PER_STEP
    assert_no_process_left(spawned, before)


@pytest.mark.timeout(90)
def test_a_run_that_stops_making_progress_is_a_hang_a_timeout_after_its_last_progress(spawned):
    """Steady progress for longer than the timeout, then a repetition that never ends
    (the 7th call: measured repetition 5 after 2 warm-up ones): killed about
    timeout_seconds after the last sign of progress, `hang` in repetitions."""
    before = own_processes()
    on_message, seen = timed_messages()
    rec = engine_run(
        "python_slow_then_stuck",
        {"seconds": STEP, "stuck_at": 7},
        on_message=on_message,
        timeout_seconds=PER_STEP,
        warmup=2,
        heap_reps=0,
    )
    ended = time.monotonic()
    assert (rec["verdict"], rec["phase"]) == ("hang", "repetitions")
    last_at, last = seen[-1]
    assert last == {"sample": last["sample"], "rep": 3}
    assert PER_STEP <= ended - last_at < PER_STEP + 5
    # it made progress past one timeout first
    assert rec["runs"][0]["wall_seconds"] > PER_STEP + 6 * STEP
    assert re.match(
        r"no progress for \d\.\d s in repetitions \(timeout_seconds 4 s per step\): the last "
        r"sign was measured repetition 4 of 6 done, \d+(\.\d)? s into the run$",
        rec["error"],
    ), rec["error"]
    # the samples sent before it stopped are kept
    assert len(rec["runs"][0]["series"]["rss_bytes"]) == 4
    assert_no_process_left(spawned, before)


@pytest.mark.timeout(60)
def test_hang_in_setup_kills_the_whole_tree(spawned, tmp_path):
    """Setup starts a grandchild (`sleep`) and then hangs: the kill must reach both."""
    before = own_processes()
    pidfile = tmp_path / "grandchild.pid"
    rec = engine_run(
        "python_hang_setup",
        timeout_seconds=6.0,
        heap_reps=0,
        env={"LEAKBENCH_TEST_PIDFILE": str(pidfile)},
    )
    assert (rec["verdict"], rec["phase"]) == ("hang", "setup")
    assert re.match(
        r"no progress for \d\.\d s in setup .*: the last sign was setup begun, ", rec["error"]
    ), rec["error"]
    grandchild_pid = int(pidfile.read_text())
    try:
        grandchild = psutil.Process(grandchild_pid)
    except psutil.NoSuchProcess:
        grandchild = None
    if grandchild is not None:  # still in the process table: it must at least have died
        deadline = time.monotonic() + 5
        while not gone(grandchild) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gone(grandchild), f"grandchild {grandchild_pid} survived the kill"
    assert_no_process_left(spawned, before)


@pytest.mark.timeout(60)
def test_process_left_by_a_finished_child_does_not_make_a_hang(spawned, tmp_path):
    """The forked leftover holds the message pipe open after the child exits:
    the run is complete (results and teardown were sent) and must say so, not
    wait for the timeout and report `hang`; the leftover is killed."""
    before = own_processes()
    pidfile = tmp_path / "forked.pid"
    timeout = 20.0
    rec = engine_run(
        "python_fork_leftover",
        timeout_seconds=timeout,
        heap_reps=0,
        env={"LEAKBENCH_TEST_PIDFILE": str(pidfile)},
    )
    assert rec["verdict"] == "no-leak", (rec["verdict"], rec["phase"], rec["error"])
    assert rec["runs"][0]["teardown_seconds"] is not None
    assert rec["seconds"] < timeout / 2
    forked = int(pidfile.read_text())
    try:
        leftover = psutil.Process(forked)
    except psutil.NoSuchProcess:
        leftover = None
    if leftover is not None:
        deadline = time.monotonic() + 5
        while not gone(leftover) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gone(leftover), f"forked process {forked} outlived the run"
    assert_no_process_left(spawned, before)


@pytest.mark.timeout(60)
def test_exception_in_repetition_is_an_error_with_its_text(spawned):
    before = own_processes()
    rec = engine_run("python_raises")
    assert rec["verdict"] == "error"
    assert rec["phase"] == "warm-up"
    assert "RuntimeError: scenario exploded with code 42" in rec["error"]
    assert rec["runs"][0]["error"] == rec["error"]
    assert_no_process_left(spawned, before)


@pytest.mark.timeout(60)
def test_exception_in_first_measured_repetition_names_that_phase():
    """warmup=0: the scenario raises in the first measured repetition."""
    rec = engine_run("python_raises", warmup=0)
    assert (rec["verdict"], rec["phase"]) == ("error", "repetitions")
    assert "scenario exploded with code 42" in rec["error"]


@pytest.mark.timeout(60)
def test_crash_without_exception_is_an_error_with_exit_code_and_output(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # the crash's output file goes here
    rec = engine_run("python_crashes")
    assert rec["verdict"] == "error"
    assert rec["phase"] == "warm-up"
    assert "exited with code 7" in rec["error"]
    assert "native code says goodbye" in rec["error"]


@pytest.mark.timeout(60)
def test_missing_scenario_file_at_run_time_is_an_error(tmp_path):
    """The file is read in the parent, then vanishes before the child imports it."""
    path = tmp_path / "vanishing.py"
    path.write_text((DATA / "python_leak.py").read_text())
    t = Target(contract.read_metadata(path), "file")
    path.unlink()
    rec = measure(t, t.scenario.params, settings())
    assert (rec["verdict"], rec["phase"]) == ("error", "import")
    assert "vanishing.py" in rec["error"]


# --- peak scenarios ----------------------------------------------------------

PEAK_SIZE = 24 * MIB


@pytest.mark.timeout(90)
def test_peak_that_scales_with_size_is_a_leak():
    rec = engine_run("python_peak", heap_reps=0)
    assert rec["verdict"] == "leak", rec["metrics"]
    assert rec["signals"] == ["peak"]  # nothing grows per repetition
    scaling = rec["metrics"]["peak_scaling"]
    assert scaling["sizes"] == [PEAK_SIZE, 2 * PEAK_SIZE, 4 * PEAK_SIZE]
    assert scaling["exponent"] == pytest.approx(1.0, abs=0.15)
    for size, peak in zip(scaling["sizes"], scaling["peaks_bytes"]):
        assert peak == pytest.approx(size, rel=0.2)
    assert [r["params"]["size_bytes"] for r in rec["runs"]] == scaling["sizes"]
    assert rec["runs"][1]["heap"] is None  # the heap pass runs at the first size only
    assert scaling["peaks_bytes"] == [r["peak_above_baseline_bytes"] for r in rec["runs"]]


@pytest.mark.timeout(90)
def test_peak_bounded_twin_is_no_leak():
    rec = engine_run("python_peak_bounded", heap_reps=0)
    assert rec["verdict"] == "no-leak", rec["metrics"]
    scaling = rec["metrics"]["peak_scaling"]
    assert len(scaling["peaks_bytes"]) == 3
    assert abs(scaling["exponent"]) < 0.2
    # a real, fixed peak was measured each time (not zeros floored to 1 MiB)
    for peak in scaling["peaks_bytes"]:
        assert peak == pytest.approx(PEAK_SIZE, rel=0.2)


@pytest.mark.timeout(90)
def test_transient_peak_is_measured_whatever_the_warmup():
    """A buffer built and dropped each repetition: with three warm-up
    repetitions glibc keeps its 24 MiB of pages before the baseline, yet the
    peak must still be the 24 MiB the work costs."""
    rec = engine_run("python_transient_peak", warmup=3, heap_reps=0)
    scaling = rec["metrics"]["peak_scaling"]
    assert scaling["peaks_bytes"][0] == pytest.approx(PEAK_SIZE, rel=0.2)
    assert scaling["exponent"] == pytest.approx(1.0, abs=0.15)
    assert rec["verdict"] == "leak" and rec["signals"] == ["peak"]


@pytest.mark.timeout(90)
def test_peak_run_stops_at_the_first_size_that_fails():
    """scales 1, 4, 8 of 24 MiB: the 96 MiB run passes an 80 MiB cap; 192 MiB is never tried.

    Ten warm-up repetitions of 50 ms keep the 96 MiB child above the cap for
    0.5 s, ten of the runner's 50 ms polls (a child that passes the cap for less
    than one poll is not caught; the runner documents that overshoot)."""
    rec = engine_run(
        "python_peak",
        {"rep_seconds": 0.05},
        cap_bytes=80 * MIB,
        scales=(1, 4, 8),
        warmup=10,
        heap_reps=0,
    )
    assert [r["status"] for r in rec["runs"]] == ["ok", "over-cap"]
    assert [r["params"]["size_bytes"] for r in rec["runs"]] == [PEAK_SIZE, 4 * PEAK_SIZE]
    assert rec["verdict"] == "over-cap"
    assert rec["phase"] in ("setup", "warm-up", "repetitions")


# --- the record ----------------------------------------------------------------


@pytest.mark.timeout(60)
def test_record_is_json_with_schema_environment_and_units():
    rec = engine_run("python_leak")
    text = json.dumps(rec, allow_nan=False)  # strict JSON: no NaN or Infinity
    back = json.loads(text)
    assert back["verdict"] == rec["verdict"] == "leak"

    assert rec["schema"] == record.SCHEMA == 4 and (rec["expects"], rec["requires"]) == (None, None)
    assert rec["pair"] == "python_leak" and rec["variant"] == "file"
    assert rec["kind"] == "growth" and rec["size_param"] == "bytes_per_rep"
    assert rec["params"] == {"bytes_per_rep": 1048576}
    assert rec["settings"]["cap_bytes"] == CAP and rec["settings"]["timeout_seconds"] == TIMEOUT
    assert rec["verdict"] in verdict.VERDICTS

    env = rec["environment"]
    assert isinstance(env["cpu"], str) and env["cpu"]
    assert env["cores"] == psutil.cpu_count() >= 1
    assert env["ram_bytes"] == psutil.virtual_memory().total
    assert env["python"] == platform.python_version()  # reported by the child, same interpreter
    assert env["tensorflow"] is None  # the child never imported it

    metrics = rec["metrics"]
    units = {
        "held_growth": "bytes/repetition",
        "rss_growth": "bytes/repetition",
        "uss_growth": "bytes/repetition",
        "heap_used_growth": "bytes/repetition",
        "retained_heap": "bytes/repetition",
        "threads_growth": "threads/repetition",
        "open_files_growth": "file descriptors/repetition",
        "python_objects_growth": "objects/repetition",
    }
    for name, unit in units.items():
        assert metrics[name]["unit"] == unit, name
        for key in ("slope", "low", "high", "p_increasing"):
            assert math.isfinite(metrics[name][key]), (name, key)
    assert metrics["peak_above_baseline_bytes"] > 0
    assert metrics["seconds_per_repetition"] > 0
    looks = [rec[k]["seconds"] for k in ("confirmation", "extension") if k in rec]
    assert rec["seconds"] == pytest.approx(sum(r["wall_seconds"] for r in rec["runs"]) + sum(looks))


@pytest.mark.timeout(60)
def test_failed_record_is_json_too():
    rec = engine_run("python_raises")
    back = json.loads(json.dumps(rec, allow_nan=False))
    assert back["verdict"] == "error" and back["metrics"] == {} and back["signals"] == []
    assert back["environment"]["python"] == platform.python_version()


def test_a_record_is_built_whole_and_a_confirmation_makes_a_new_one():
    """Nothing rewrites a record after the judge's first reading (protocol.first, record.build).
    It takes what the record calls its target (catalog.Target.pair), the repetition the child
    learned (a check target's) and the flame graph (after build's own keys); protocol.take returns
    a new record with the verdict the confirmation gives, "confirmation" after every key the
    first record had."""
    t = Target(contract.read_metadata(DATA / "python_leak.py"), "check", "python_leak.py:leaky")
    told = runner.Outcome(
        "ok",
        None,
        {},
        1.0,
        result={"samples": [], "versions": {}, "repetition": "one call of the function"},
    )
    rec = protocol.first(
        t.scenario, t.variant, {}, {"reps": 6}, [told], pair=t.pair, flamegraph={"error": "none"}
    )
    assert (rec["pair"], rec["variant"], rec["repetition"]) == (
        "python_leak.py:leaky",
        "check",
        "one call of the function",
    )
    assert list(rec)[-4:] == ["seconds", "engine", "flamegraph", "decision"]
    plain = protocol.first(
        t.scenario, "file", {}, {"reps": 6}, [runner.Outcome("error", "import", {}, 1.0)]
    )
    assert (plain["pair"], plain["repetition"]) == ("python_leak", t.scenario.repetition)
    assert "flamegraph" not in plain

    first = {**rec, "verdict": "leak", "signals": ["held"]}
    look = protocol.Look("confirmation", 18, ["held"])
    again = protocol.take(first, look, runner.Outcome("over-cap", "repetitions", {}, 2.0))
    assert (
        list(again) == [*first, "confirmation"]
        and first["verdict"] == "leak"
        and "confirmation" not in first
    )
    assert (again["verdict"], again["signals"], again["seconds"]) == (
        "leak",
        ["held"],
        first["seconds"] + 2.0,
    )
    assert again["confirmation"]["reps"] == 18 and again["confirmation"]["status"] == "over-cap"


def test_killing_the_runner_kills_the_child(tmp_path):
    """kill -9 of the runner: the kernel ends the child too (PR_SET_PDEATHSIG),
    so a leaky scenario never goes on without its cap and timeout."""
    script = (
        "import sys; from leakbench.engine import runner;"
        f"runner.run_child({str(DATA / 'python_hang.py')!r}, {{'seconds': 3600}}, runner.ChildRun("
        "warmup=1, reps=5, heap_reps=0, cap_bytes=1 << 30, timeout_seconds=120))"
    )
    runner_proc = subprocess.Popen([sys.executable, "-c", script])
    children = []
    try:
        deadline = time.monotonic() + 30
        while not children and time.monotonic() < deadline:
            time.sleep(0.2)
            children = psutil.Process(runner_proc.pid).children()
        assert children, "the runner started no child"
        time.sleep(3.0)  # let the child reach its hanging repetition: no more writes to the pipe
        runner_proc.kill()
        runner_proc.wait()
        gone_, alive = psutil.wait_procs(children, timeout=10)
        assert not alive, f"child outlived its runner: {alive}"
    finally:
        runner_proc.kill()
        for child in children:  # only reached alive when the test fails
            try:
                child.kill()
            except psutil.NoSuchProcess:
                pass


def test_a_child_that_cannot_start_is_an_error_and_leaks_no_pipe(monkeypatch):
    """run_child used to leave both ends of its pipe open when Popen raised."""

    def refuse(*args, **kwargs):
        raise OSError(24, "Too many open files")

    before = len(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(supervise.subprocess, "Popen", refuse)
    outcome = runner.run_child(
        DATA / "python_leak.py",
        {},
        runner.ChildRun(warmup=0, reps=5, heap_reps=0, cap_bytes=CAP, timeout_seconds=TIMEOUT),
    )
    assert (outcome.status, outcome.phase) == (
        "error",
        "import",
    ) and "could not start" in outcome.error
    assert len(os.listdir("/proc/self/fd")) == before


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", range(4))
def test_garbage_on_the_message_pipe_is_an_error_in_one_line_never_a_traceback(spawned, kind):
    before = own_processes()
    rec = engine_run("python_garbler", {"kind": kind}, timeout_seconds=60, warmup=1, heap_reps=0)
    assert rec["verdict"] == "error" and "is not a message of leakbench's child" in rec["error"], (
        rec["error"]
    )
    assert "\n" not in rec["error"]
    assert_no_process_left(spawned, before)


def test_an_over_cap_run_is_told_in_the_phase_the_child_last_began():
    """Messages the child wrote after the runner's last read are read before an over-cap is
    recorded: a cache that passes the cap within a poll of "warm-up" is not blamed on import."""
    import selectors

    read_fd, write_fd = os.pipe()
    selector = selectors.DefaultSelector()
    selector.register(read_fd, selectors.EVENT_READ)
    try:
        os.write(write_fd, b'{"phase": "setup"}\n{"phase": "warm-up"}\n{"progress": "warm-up", "re')
        assert messages.phase_pending(read_fd, selector, b'{"device": {}}\n') == "warm-up"
        assert messages.phase_pending(read_fd, selector, b"") is None  # nothing more: never waits
    finally:
        selector.close()
        os.close(read_fd)
        os.close(write_fd)


@pytest.mark.parametrize("name, allocator", [("python_leak", "1"), ("python_peak", "0")])
def test_a_growth_child_measures_tensors_on_malloc_and_a_peak_child_on_onednns_pool(
    monkeypatch, name, allocator
):
    """supervise.allocator: growth reads malloc's counters; peak reads VmHWM, which malloc's
    arenas inflated and scattered (unbounded_cache's k under 0.5 in 2 of 4 runs)."""
    monkeypatch.delenv(supervise.TF_SYSTEM_ALLOCATOR, raising=False)
    seen = []

    def fake_child(path, params, child, on_message=None):
        seen.append(supervise.child_env(child.env)[supervise.TF_SYSTEM_ALLOCATOR])
        return runner.Outcome("error", "import", params, 0.0, error="not run")

    monkeypatch.setattr(runner, "run_child", fake_child)
    engine_run(name)
    assert seen == [allocator]
    # a caller's own setting wins, for either kind
    monkeypatch.setenv(supervise.TF_SYSTEM_ALLOCATOR, "7")
    seen.clear()
    engine_run(name)
    assert seen == ["7"]


def test_pymalloc_in_use_counts_the_small_objects_malloc_never_sees():
    """100,000 ints kept (32 bytes each, in CPython's arenas) raise pymalloc's bytes in use by
    their size, malloc's by far less; with PYTHONMALLOC=malloc the series reads 0 (the objects
    are then malloc's)."""
    before = probes.pymalloc_used_bytes()
    kept = list(range(10**9, 10**9 + 100_000))
    after = probes.pymalloc_used_bytes()
    assert before is not None and after is not None
    assert after - before >= 0.9 * 32 * len(kept)
    both = probes.allocated(1000)
    assert both["allocated_bytes"] == 1000 + both["pymalloc_used_bytes"]
    assert probes.allocated(None)["allocated_bytes"] is None
    code = "from leakbench.engine import probes; print(probes.pymalloc_used_bytes())"
    env = {**os.environ, "PYTHONMALLOC": "malloc"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.stdout.strip() == "0", out.stderr
