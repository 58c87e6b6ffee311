"""The session's TensorFlow measurements (tests/tf_session.py) run in a process of their own,
marked, so that a test counting its own processes (conftest.own_processes) never counts them."""

import os
import subprocess
import sys
from types import SimpleNamespace

import conftest
import psutil
from conftest import wait_for


def test_the_measurements_start_in_a_marked_process_of_their_own(monkeypatch, tmp_path):
    started = []
    monkeypatch.setattr(conftest, "HAS_TF", True)
    monkeypatch.setattr(conftest, "_TF_SESSION", None)
    monkeypatch.setattr(conftest, "_SESSION_FILES", None)
    monkeypatch.setattr(conftest, "SESSION_DIR", tmp_path)
    (tmp_path / "pid999999999-ended").mkdir()  # a session that has ended: its folder goes
    monkeypatch.setattr(
        conftest.subprocess, "Popen", lambda args, **kw: started.append((args, kw)) or "started"
    )
    config = SimpleNamespace(option=SimpleNamespace(collectonly=False))
    items = [SimpleNamespace(fixturenames=["tf_records"])]
    conftest.pytest_collection_finish(SimpleNamespace(config=config, items=items))
    ((args, kw),) = started
    (folder,) = tmp_path.iterdir()
    assert folder.name.startswith(f"pid{os.getpid()}-") and folder == conftest._SESSION_FILES
    assert args[1].endswith("tf_session.py")
    assert args[2:] == [str(folder / "records.jsonl"), str(os.getpid())]
    assert kw["env"][conftest.SESSION_MARK] == "1"
    assert conftest._TF_SESSION == "started"


def test_own_processes_leave_the_marked_tree_out():
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    mine = subprocess.Popen(sleep)
    theirs = subprocess.Popen(sleep, env={**os.environ, conftest.SESSION_MARK: "1"})
    try:
        # between fork and exec a child's environment is still its parent's, without the mark:
        # look once both run the interpreter (a clean-clone CI run read "theirs" as ours)
        for proc in (mine, theirs):
            wait_for(
                lambda p=proc: "time.sleep" in " ".join(psutil.Process(p.pid).cmdline()), 60, "exec"
            )
        found = conftest.own_processes()
        assert mine.pid in found and theirs.pid not in found
    finally:
        for proc in (mine, theirs):
            proc.kill()
            proc.wait()


def test_own_processes_leave_the_measuring_process_out_once_it_has_ended(monkeypatch):
    """Ended and not yet reaped (tf_records waits for it last), the measuring process is a zombie
    whose marked environment cannot be read: it is known by its pid. Another zombie of ours
    counts: a test left it behind."""
    quick = [sys.executable, "-c", "pass"]
    session = subprocess.Popen(quick, env={**os.environ, conftest.SESSION_MARK: "1"})
    left = subprocess.Popen(quick)
    monkeypatch.setattr(conftest, "_TF_SESSION", session)
    try:
        for proc in (session, left):  # it only starts Python and exits
            zombie = psutil.Process(proc.pid)
            wait_for(lambda z=zombie: z.status() == psutil.STATUS_ZOMBIE, 120, "exit")
        found = conftest.own_processes()
        assert session.pid not in found and left.pid in found
    finally:
        session.wait()
        left.wait()
