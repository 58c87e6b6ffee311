"""Nothing runaway: no process a scenario starts outlives its run, and a child that has
said its last word (an error) is not kept for the whole timeout when it stalls on its
way out.

The scenarios are written to tmp_path. Every process they start carries a mark (a uuid
in its environment and on its command line) that the `mark` fixture looks for after the
run, and kills in its teardown, so a failing test never leaves a process behind either.
Every run is capped and timed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
from conftest import wait_for

from leakbench import contract
from leakbench.catalog import Target
from leakbench.engine import runner, supervise, tree_kill
from leakbench.measure import measure
from leakbench.settings import Settings

MARK = "LEAKBENCH_TEST_RUNAWAY"  # the environment variable holding the mark
SLEEPING = "import time; time.sleep(600)"  # the code of the processes the scenarios leave behind
CAP = 1 << 30
TIMEOUT = 60.0

HEAD = '''"""Starts processes that leave the child's session."""
import atexit
import os
import subprocess
import sys
import time

TITLE = "processes that leave the child's session"
SOURCE = "stateful functions"
REPETITION = "sleep"
KIND = "growth"
SIZE_PARAM = "seconds"
PARAMS = {"seconds": 0.2}
MARK = os.environ["LEAKBENCH_TEST_RUNAWAY"]
SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)", MARK]
HOG = [sys.executable, "-c", "import time; held = b'x' * (256 << 20); time.sleep(600)", MARK]


def double_fork_setsid(argv=SLEEPER, env=None):
    """A grandchild in a session of its own, whose parent has exited (and is reaped) on return."""
    middle = os.fork()
    if middle == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                os.execve(argv[0], argv, os.environ if env is None else env)
        finally:
            os._exit(0)
    os.waitpid(middle, 0)
'''

RUNAWAYS = {
    "a double fork with setsid": "double_fork_setsid()",
    # seen only by the runner's polls (no token in its environment): the child is its subreaper
    "a double fork with setsid and an empty environment": "double_fork_setsid(env={})",
    "a subprocess in a new session": "subprocess.Popen(SLEEPER, start_new_session=True)",
    # after the last poll, as the child exits: found by the run's token alone
    "a double fork with setsid at exit": "atexit.register(double_fork_setsid)",
}


def scenario(
    tmp_path: Path,
    setup_body: str,
    name: str = "runaway",
    repetition_body: str = "time.sleep(seconds)",
) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(
        HEAD + f"\n\ndef setup(seconds):\n    {setup_body}\n    return seconds\n"
        f"\n\ndef repetition(seconds):\n    {repetition_body}\n"
    )
    return path


def marked(mark: str) -> list[psutil.Process]:
    """Running processes (zombies aside) with `mark`
    on their command line or in their environment."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.pid == os.getpid() or proc.status() == psutil.STATUS_ZOMBIE:
                continue
            if mark in proc.cmdline() or proc.environ().get(MARK) == mark:
                found.append(proc)
        except psutil.Error:
            pass
    return found


def left_running(mark: str, seconds: float = 5.0) -> list[psutil.Process]:
    """The marked processes still running after up to
    `seconds` (a killed process may take a moment)."""
    deadline = time.monotonic() + seconds
    while (found := marked(mark)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


@pytest.fixture
def mark():
    """A fresh mark; whatever still carries it at the end is killed."""
    made = []

    def new() -> str:
        made.append(uuid.uuid4().hex)
        return made[-1]

    yield new
    for one in made:
        for proc in marked(one):
            try:
                proc.kill()
            except psutil.Error:
                pass


def run_outcome(path: Path, mark: str, **overrides) -> runner.Outcome:
    options = dict(
        warmup=1,
        reps=5,
        heap_reps=0,
        cap_bytes=CAP,
        timeout_seconds=TIMEOUT,
        teardown_timeout_seconds=5.0,
        env={MARK: mark},
    )
    options.update(overrides)
    return runner.run_child(path, {"seconds": 0.2}, runner.ChildRun(**options))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", list(RUNAWAYS))
def test_a_process_that_leaves_the_session_ends_with_the_run(tmp_path, mark, how):
    """Such a process used to go on running after the run (and after leakbench)."""
    m = mark()
    outcome = run_outcome(scenario(tmp_path, RUNAWAYS[how]), m)
    assert outcome.status == "ok", (outcome.phase, outcome.error)
    assert left_running(m) == []


@pytest.mark.timeout(90)
def test_an_orphan_in_its_own_session_counts_against_the_cap(tmp_path, mark):
    """A grandchild in a session of its own, whose parent exited, holding 256 MiB while setup
    hangs: it stays in the measured tree (the child is its subreaper), so the run ends over
    the cap, not `hang` a timeout later, and the grandchild ends with it."""
    m = mark()
    path = scenario(tmp_path, "double_fork_setsid(HOG)\n    time.sleep(3600)")
    outcome = run_outcome(path, m, cap_bytes=200 << 20)
    assert (outcome.status, outcome.phase) == ("over-cap", "setup"), outcome.error
    assert left_running(m) == []


@pytest.mark.timeout(90)
def test_two_runs_at_once_each_end_their_own_processes(tmp_path, mark):
    """Runs in two threads of one process (as `repeat --jobs 2`): the one that ends first
    kills its own orphan and leaves the other run's running; the other's ends with it."""
    first, second = mark(), mark()
    flag = tmp_path / "go"
    waits = scenario(
        tmp_path,
        "double_fork_setsid()",
        "waits",
        "while not os.path.exists(os.environ['LEAKBENCH_TEST_FLAG']):\n        time.sleep(0.05)",
    )
    with ThreadPoolExecutor(max_workers=1) as pool:
        try:
            later = pool.submit(
                run_outcome, waits, second, env={MARK: second, "LEAKBENCH_TEST_FLAG": str(flag)}
            )
            theirs = wait_for(
                lambda: [p for p in marked(second) if SLEEPING in p.cmdline()],
                30,
                "orphan of the waiting run",
            )
            outcome = run_outcome(scenario(tmp_path, "double_fork_setsid()"), first)
            assert outcome.status == "ok", (outcome.phase, outcome.error)
            assert left_running(first) == []
            # not ours to kill
            assert all(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in theirs)
        finally:
            flag.touch()
        assert later.result().status == "ok"
    assert left_running(second) == []


@pytest.mark.timeout(60)
def test_the_supervisor_alone_ends_an_orphan_made_as_the_child_exits(mark):
    """Supervised without the runner (as the calibration's peers use it): the child double-forks
    and exits at once, before any poll; its grandchild, in a session of its own and reparented
    away, is found by the run's token and killed."""
    m = mark()
    code = (
        "import os, sys; from leakbench.engine import supervise; "
        "supervise.die_with_parent(int(sys.argv[1]))\nif os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        os.execv(sys.executable, [sys.executable, '-c', "
        "'import time; time.sleep(600)', sys.argv[2]])\n    os._exit(0)\n"
        "os.wait()\n"
    )
    child = supervise.Supervised(
        [sys.executable, "-c", code, str(os.getpid()), m],
        env=supervise.child_env({MARK: m}),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(child.reap, 30, "exit of the child")
        assert child.returncode == 0
        assert marked(m), "the grandchild should outlive the child until the kill"
    finally:
        child.kill()
    assert left_running(m) == []


@pytest.mark.parametrize(("reaper", "expected"), [(True, 1), (False, 0)])
def test_a_child_is_a_subreaper_unless_it_supervises_its_own(reaper, expected):
    """die_with_parent makes a measured child a subreaper; not a process that is itself a
    supervisor (tests/tf_session.py), which would be left the zombies of others' orphans."""
    code = (
        "import ctypes, os, sys; from leakbench.engine import supervise; "
        f"supervise.die_with_parent(os.getppid(), reaper={reaper}); v = ctypes.c_int(); "
        "ctypes.CDLL(None).prctl(37, ctypes.byref(v)); print(v.value)"  # PR_GET_CHILD_SUBREAPER
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == str(expected), done.stderr


def test_a_reused_pid_is_never_signalled():
    """A process remembered from a poll whose pid now belongs to another process (another
    start time) is not signalled by the kill."""
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        real = psutil.Process(other.pid)

        # what a poll kept of an earlier process on the same pid: not equal to this one
        class Remembered:
            pid = other.pid

            def kill(self):
                raise AssertionError("signalled without comparing the process first")

        tree_kill.kill_process(Remembered())
        time.sleep(0.2)
        assert other.poll() is None and real.status() != psutil.STATUS_ZOMBIE
        tree_kill.kill_process(real)  # the process itself is
        assert other.wait(timeout=10) == -9
    finally:
        other.kill()
        other.wait()


STALLS_AFTER_ERROR = {
    # its state dropped as the child's main returns, the message pipe still open
    "dropping its state": (
        "class Stuck:\n    def __del__(self):\n        time.sleep(600)\n\n\n"
        "def setup(seconds):\n    return Stuck()\n\n\n"
        "def repetition(state):\n    raise RuntimeError('failed on purpose, then stalls')\n",
        "warm-up",
    ),
    "in an exit handler": (
        "def setup(seconds):\n    atexit.register(time.sleep, 600)\n"
        "    raise RuntimeError('failed on purpose, then stalls')\n\n\n"
        "def repetition(state):\n    pass\n",
        "setup",
    ),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("where", list(STALLS_AFTER_ERROR))
def test_an_error_then_a_stall_on_the_way_out_reads_error(tmp_path, mark, where):
    """The child reports its error, then stalls: it gets the teardown allowance from its
    report, not the timeout, and the record reads `error` with the message (it used to
    wait the whole timeout and read `hang`)."""
    m = mark()
    body, phase = STALLS_AFTER_ERROR[where]
    path = tmp_path / "stalls.py"
    path.write_text(HEAD + "\n\n" + body)
    settings = Settings(
        warmup=1,
        reps=5,
        heap_reps=0,
        cap_bytes=CAP,
        timeout_seconds=TIMEOUT,
        teardown_timeout_seconds=2.0,
    )
    rec = measure(
        Target(contract.read_metadata(path), "file"), {"seconds": 0.2}, settings, env={MARK: m}
    )
    assert (rec["verdict"], rec["phase"]) == ("error", phase), rec["error"]
    assert "RuntimeError: failed on purpose, then stalls" in rec["error"]
    assert re.search(r"; then it did not exit within [0-9.]+ s and was killed$", rec["error"]), rec[
        "error"
    ]
    assert rec["runs"][0]["wall_seconds"] < TIMEOUT / 2  # the allowance, not the timeout
    assert left_running(m) == []
