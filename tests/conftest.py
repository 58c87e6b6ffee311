"""Fixtures and helpers shared by several test files."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from leakbench.engine import memlimit

# Debian's chromium, for the browser tests (test_site, test_check_html). make's setup installs
# it as root on Debian (scripts/system-packages) and prints the apt-get line elsewhere.
CHROMIUM = Path("/usr/bin/chromium")
_REAL_POPEN = subprocess.Popen  # before a test's monkeypatch replaces it (leakbench below)


def need_system_package(missing: str | None) -> None:
    """Skip the calling test when `missing` (what the machine lacks, and how to get it) is set;
    under CI=true (.ci/run, GitHub Actions) fail instead: make's setup installs the Debian
    packages the tests use (scripts/system-packages), so in CI a missing one is a broken set-up,
    and its tests must not pass by skipping."""
    if missing is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{missing}; CI=true: these tests must run", pytrace=False)
    pytest.skip(missing)


def need_chromium(path: Path = CHROMIUM) -> None:
    """need_system_package for the browser tests: chromium at `path`."""
    need_system_package(
        None
        if path.exists()
        else f"no {path} (Debian: apt-get install chromium; make test's setup, "
        "scripts/system-packages, installs it when run as root)"
    )


@pytest.fixture
def chromium() -> Path:
    """The chromium binary, or a skip (a failure under CI=true) without it: need_chromium."""
    need_chromium()
    return CHROMIUM


@pytest.fixture
def fake_cgroup(tmp_path, monkeypatch):
    """Point leakbench.engine.memlimit at a fake /proc/self/cgroup and /sys/fs/cgroup.

    Returns write(proc_line, folder, files): proc_line is /proc/self/cgroup's
    text, folder the cgroup's directory under the fake root, files name -> text.
    """
    monkeypatch.setattr(memlimit, "CGROUP_ROOT", tmp_path / "sys")
    monkeypatch.setattr(memlimit, "PROC_CGROUP", tmp_path / "cgroup")

    def write(proc_line: str, folder: str, files: dict) -> None:
        (tmp_path / "cgroup").write_text(proc_line + "\n")
        where = tmp_path / "sys" / folder
        where.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (where / name).write_text(text + "\n")

    return write


# --- one measurement of every TensorFlow variant per test run (tests/tf_session.py) ---
# test_pairs, test_check and test_fragmentation assert on these records; none re-measures a pair.
# Each session writes its own files (SESSION_DIR/records.jsonl, .log: the records as they end,
# and the measuring process's stdout and stderr), so that two sessions in one checkout never
# write into each other's; they are left for reading once the session ends, until the next.
SESSION_DIR = Path(__file__).parent.parent / ".pytest_cache" / "leakbench-tf-session"
# In the environment of the measuring process, which its children inherit (supervise.child_env).
SESSION_MARK = "LEAKBENCH_TESTS_TF_SESSION"
_TF_SESSION: subprocess.Popen | None = None
_SESSION_FILES: Path | None = None  # this session's folder under SESSION_DIR


def needs_records(item) -> bool:
    """True if the test `item` uses the tf_records fixture (directly or through another)."""
    return "tf_records" in getattr(item, "fixturenames", ())


# --- the one skip for TensorFlow: the `tf` marker (pyproject.toml) ---
HAS_TF = importlib.util.find_spec("tensorflow") is not None
NO_TF_REASON = "TensorFlow is not installed (the tf marker; pip install -e '.[tf]' brings it)"


def pytest_collection_modifyitems(config, items):
    """With TensorFlow, the tests that need tf_records go last, in their order: every other test
    runs while the session's children measure (pytest_collection_finish), where they used to wait
    at the first such test and leave a core idle for the tests after it (docs/measurements.md,
    "Run time"). Without TensorFlow, skip every test marked `tf`: the suite's only skip on
    TensorFlow (no test imports-or-skips it, or has a skipif of its own). `-m "not tf"` deselects
    the same."""
    if HAS_TF:
        items.sort(key=needs_records)
        return
    for item in items:
        if item.get_closest_marker("tf") is not None:
            item.add_marker(pytest.mark.skip(reason=NO_TF_REASON))


def pytest_collection_finish(session):
    """Start measuring every TensorFlow variant as soon as a selected test will need the records:
    tests/tf_session.py, in a process of its own, beside the tests that need none (the machine is
    busy, as verdicts must allow); the first test that needs them waits for what is left. Without
    TensorFlow, nothing starts (the tests that need the records are skipped: they are marked
    `tf`)."""
    global _TF_SESSION, _SESSION_FILES
    if session.config.option.collectonly or not HAS_TF:
        return
    if not any(needs_records(item) for item in session.items):
        return
    SESSION_DIR.mkdir(parents=True, exist_ok=True)
    for old in SESSION_DIR.glob("pid*-*"):  # the folders of sessions that have ended
        if not psutil.pid_exists(int(old.name[3:].split("-")[0])):
            shutil.rmtree(old, ignore_errors=True)
    _SESSION_FILES = Path(tempfile.mkdtemp(prefix=f"pid{os.getpid()}-", dir=SESSION_DIR))
    with (_SESSION_FILES / "records.log").open("w") as log:
        _TF_SESSION = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("tf_session.py"))]
            + [str(_SESSION_FILES / "records.jsonl"), str(os.getpid())],
            env={**os.environ, SESSION_MARK: "1"},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def wait_for(condition, seconds: float, what: str):
    """condition()'s first true value, polled every 50 ms; AssertionError naming `what` if none
    comes within `seconds` (a safety net sized with room, not a stopwatch)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if found := condition():
            return found
        time.sleep(0.05)
    raise AssertionError(f"no {what} within {seconds} s")


def own_processes() -> set[int]:
    """The pids of this process's descendants that a test started: every one but the measuring
    process of tests/tf_session.py and its children (SESSION_MARK in their environment), which
    start and end as they will while the tests run; the measuring process by its pid too, since
    once it has exited and until tf_records reaps it, it is a zombie whose environment cannot be
    read. A process that ended as it was looked at left nothing; any other unreaped one counts
    where this process is its parent."""
    session = _TF_SESSION.pid if _TF_SESSION is not None else None
    found = set()
    for proc in psutil.Process().children(recursive=True):
        if proc.pid == session:
            continue
        try:
            try:
                if proc.environ().get(SESSION_MARK) != "1":
                    found.add(proc.pid)
            except psutil.ZombieProcess:
                if proc.ppid() == os.getpid():
                    found.add(proc.pid)
        except psutil.NoSuchProcess:  # from environ(), or from ppid() once the zombie was reaped
            pass
    return found


def pytest_terminal_summary(terminalreporter):
    """After the run: tests/test_fuzz.py's summary (cases per kind, failures by cause) where its
    cases ran, also written to LEAKBENCH_FUZZ_SUMMARY=FILE. It was a test that could not fail."""
    fuzz = sys.modules.get("test_fuzz")
    text = fuzz.summary() if fuzz is not None else None
    if text is None:
        return
    terminalreporter.write_sep("-", "leakbench fuzz")
    terminalreporter.write_line(text)
    if fuzz.SUMMARY:
        fuzz.SUMMARY.parent.mkdir(parents=True, exist_ok=True)
        fuzz.SUMMARY.write_text(text)


def pytest_sessionfinish(session):
    # an interrupted session: the measuring process and its children end with it (SIGKILL)
    if _TF_SESSION is not None and _TF_SESSION.poll() is None:
        _TF_SESSION.kill()
        _TF_SESSION.wait()


@pytest.fixture(scope="session")
def tf_records():
    """{(pair, variant): record} for every scenario and fix file, measured once by
    `leakbench check` (the engine plus its evidence), and {(name, "factory"): record}
    for the targets in tests/data/check_tf.py: tests/tf_session.py, started at collection
    (pytest_collection_finish), writes them to this session's folder under SESSION_DIR."""
    if _TF_SESSION is None:  # without TensorFlow, only a test not marked `tf` gets here
        pytest.fail(
            "tf_records: nothing was measured (no TensorFlow, or the test does not name the "
            "fixture); a test that needs the records is marked @pytest.mark.tf and names it",
            pytrace=False,
        )
    assert _SESSION_FILES is not None  # set with _TF_SESSION
    code = _TF_SESSION.wait()  # each child has its timeout; pytest's per-test timeout is the net
    if code != 0:
        tail = (_SESSION_FILES / "records.log").read_text()[-3000:]
        pytest.fail(f"tests/tf_session.py exited {code}:\n{tail}", pytrace=False)
    lines = (_SESSION_FILES / "records.jsonl").read_text().splitlines()
    return {tuple(r.pop("key")): r for r in map(json.loads, lines)}


DATA = Path(__file__).parent / "data"
REPO = Path(__file__).parent.parent


def pair_checkout(
    where: Path, leaky: str = "python_leak", fixed: str = "python_bounded", name: str = "pyleak"
) -> Path:
    """A checkout under where/root holding one pair `name`: tests/data's `leaky` as its scenario,
    `fixed` as its fix. Returns the root (for LEAKBENCH_ROOT)."""
    root = where / "root"
    for sub, source in (("scenarios", leaky), ("fixes", fixed)):
        (root / sub).mkdir(parents=True, exist_ok=True)
        shutil.copy(DATA / f"{source}.py", root / sub / f"{name}.py")
    return root


def pure_python_checkout(where: Path) -> Path:
    """pair_checkout's pure-Python pair `pyleak` (tests/data's python_leak and python_bounded) and
    stateful_map, and where/ok.py (check targets): the world of the bad-input and fuzz tests,
    which never measure TensorFlow. Returns the root (for LEAKBENCH_ROOT)."""
    root = pair_checkout(where)
    for sub in ("scenarios", "fixes"):
        shutil.copy(REPO / sub / "stateful_map.py", root / sub / "stateful_map.py")
    shutil.copy(DATA / "check_python.py", where / "ok.py")
    return root


@pytest.fixture(scope="session")
def committed_results(tmp_path_factory) -> Path:
    """results/ as committed (git HEAD), extracted into a folder of its own: the committed
    tables are checked against the committed records, not against the records a `make run` in
    this checkout files over them (README's first command, then its second, must pass). The
    working tree's results/ where this is no git checkout."""
    if not (REPO / ".git").exists():
        return REPO / "results"
    return extract_results_at_head(tmp_path_factory.mktemp("committed"))


def extract_results_at_head(dest: Path) -> Path:
    """results/ as committed at git HEAD, extracted into `dest`; returns dest/results."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", "HEAD", "results"],
        capture_output=True,
        check=True,
        timeout=300,
    )
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return dest / "results"


def held_decision(verdict: str, value: float) -> dict:
    """A record's decision (leakbench.analysis.judge.decision) resting on held memory: `value` in
    bytes/repetition against the engine's bar, from the first run, no why."""
    from leakbench import metrics

    held = metrics.HELD
    return {
        "verdict": verdict,
        "signal": held.signal,
        "label": held.label,
        "value": value,
        "unit": held.unit,
        "bar": held.threshold,
        "source": "first run",
        "why": None,
    }


@pytest.fixture
def shipped(tmp_path, monkeypatch) -> Path:
    """The suite as the installed package ships it (catalog.SHIPPED, found by find_root): the
    checkout's scenarios/ and fixes/ under tmp_path/site-packages/suite, with a results/ folder
    to fill; the cwd an empty folder outside it, tmp_path/elsewhere. Returns the package's root,
    whose results a command reads and never writes."""
    from leakbench import catalog

    package = tmp_path / "site-packages" / "suite"
    (package / "results").mkdir(parents=True)
    for folder in ("scenarios", "fixes"):
        (package / folder).symlink_to(REPO / folder)
    monkeypatch.setattr(catalog, "SHIPPED", package.resolve())
    monkeypatch.setenv("LEAKBENCH_ROOT", str(package))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    return package


@pytest.fixture
def checkout(tmp_path, monkeypatch) -> Path:
    """pure_python_checkout under tmp_path as LEAKBENCH_ROOT, tmp_path as cwd; returns the root."""
    root = pure_python_checkout(tmp_path)
    monkeypatch.setenv("LEAKBENCH_ROOT", str(root))
    monkeypatch.chdir(tmp_path)
    return root


@pytest.fixture
def here(checkout, tmp_path, monkeypatch) -> Path:
    """checkout, with results/ (the site fixture's records, machine vm) and a cache folder of its
    own (XDG_CACHE_HOME: bisect's registry answers); returns the cwd, tmp_path."""
    shutil.copytree(DATA / "site_results", tmp_path / "results")
    monkeypatch.setenv("ASV_MACHINE", "vm")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


# The one way a test runs the command line in process (issue 41; test_one_test_helper checks that
# no other test module uses click's CliRunner). Then what a refusal must look like, and what it
# must leave as it was (test_bad_input, test_refusals).
def invoke(*args, env: dict | None = None, cwd: Path | None = None, catch_exceptions: bool = True):
    """`leakbench ARGS` in this process: leakbench.cli.main through click's CliRunner (the command
    starts no process of its own; the children it measures start as from the installed one).

    args and env's values are turned into strings. env: added to the environment for this call
    only (a value of None unsets the variable). cwd: the working folder for this call only.
    catch_exceptions=False: an exception out of the command, where a real process would print a
    traceback, is raised here and fails the test (SystemExit, any exit, is never raised).
    Returns click's Result: exit_code, stdout and stderr apart, output (both, as a terminal
    shows them), exception (the SystemExit of an exit, or what the command raised)."""
    from click.testing import CliRunner

    from leakbench import cli

    env = {k: None if v is None else str(v) for k, v in (env or {}).items()}
    with contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext():
        return CliRunner().invoke(
            cli.main, [str(a) for a in args], env=env, catch_exceptions=catch_exceptions
        )


def refused(done, *fragments: str) -> str:
    """Exit 2, one line 'leakbench: error: ...' on stderr holding every fragment, no traceback,
    nothing on stdout, no exception but SystemExit (in process: nothing started). Returns the
    line. `done`: invoke's result, or a finished process (subprocess.CompletedProcess)."""
    if isinstance(done, subprocess.CompletedProcess):
        code = done.returncode
    else:
        assert done.exception is None or isinstance(done.exception, SystemExit), repr(
            done.exception
        )
        code = done.exit_code
    assert code == 2, (code, done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("leakbench: error: "), done.stderr
    assert "Traceback" not in done.stdout + done.stderr and done.stdout == "", done.stdout
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def leakbench(*args, seconds: float = 60) -> subprocess.CompletedProcess:
    """`python -m leakbench ARGS` as a child in a session of its own, killed after `seconds` (a
    refusal takes about one; a command waiting on a FIFO or reading /dev/full would never end);
    then no process of that session may be left. Starts it even where a test made
    subprocess.Popen refuse (test_refusals)."""
    child = _REAL_POPEN(
        [sys.executable, "-m", "leakbench", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = child.communicate(timeout=seconds)
    finally:
        child.kill()
        child.wait()
    try:  # SIGKILL, where 0 would do to ask: a leftover must not outlive the test either
        os.killpg(child.pid, signal.SIGKILL)
        left = True
    except ProcessLookupError:
        left = False
    assert not left, f"a process of `leakbench {' '.join(map(str, args))[:80]}` is left"
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


def state(*paths: Path) -> dict:
    """What is at each path (folders walked, links not followed): type and mode, mtime in ns, and
    the bytes of regular files (the size of big ones), a link's target. A FIFO is only stat'ed.
    A folder's mtime is left out: it moves when `writable` probes it with a file it then removes;
    what the folder holds is compared entry by entry."""
    found = {}
    for top in map(Path, paths):
        names = [top]
        if top.is_dir() and not top.is_symlink():
            names += sorted(Path(d) / n for d, dirs, files in os.walk(top) for n in dirs + files)
        for path in names:
            if not os.path.lexists(path):
                found[str(path)] = None
                continue
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):  # a sparse file of MAX_BYTES by its size alone
                held = path.read_bytes() if st.st_size < 16 << 20 else st.st_size
            else:
                held = os.readlink(path) if stat.S_ISLNK(st.st_mode) else None
            found[str(path)] = (
                st.st_mode,
                None if stat.S_ISDIR(st.st_mode) else st.st_mtime_ns,
                held,
            )
    return found
