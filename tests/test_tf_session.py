"""The session's TensorFlow measurements (tests/tf_session.py) run in a process of their own,
marked, so that a test counting its own processes (conftest.own_processes) never counts them."""

import os
import subprocess
import sys
from types import SimpleNamespace

import conftest


def test_the_measurements_start_in_a_marked_process_of_their_own(monkeypatch, tmp_path):
    started = []
    monkeypatch.setattr(conftest, "HAS_TF", True)
    monkeypatch.setattr(conftest, "_TF_SESSION", None)
    monkeypatch.setattr(conftest, "RECORDS_COPY", tmp_path / "records.jsonl")
    monkeypatch.setattr(conftest, "SESSION_LOG", tmp_path / "records.log")
    monkeypatch.setattr(
        conftest.subprocess, "Popen", lambda args, **kw: started.append((args, kw)) or "started"
    )
    config = SimpleNamespace(option=SimpleNamespace(collectonly=False))
    items = [SimpleNamespace(fixturenames=["tf_records"])]
    conftest.pytest_collection_finish(SimpleNamespace(config=config, items=items))
    ((args, kw),) = started
    assert args[1].endswith("tf_session.py") and args[2:] == [
        str(tmp_path / "records.jsonl"),
        str(os.getpid()),
    ]
    assert kw["env"][conftest.SESSION_MARK] == "1"
    assert conftest._TF_SESSION == "started"


def test_own_processes_leave_the_marked_tree_out():
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    mine = subprocess.Popen(sleep)
    theirs = subprocess.Popen(sleep, env={**os.environ, conftest.SESSION_MARK: "1"})
    try:
        found = conftest.own_processes()
        assert mine.pid in found and theirs.pid not in found
    finally:
        for proc in (mine, theirs):
            proc.kill()
            proc.wait()
    assert not {mine.pid, theirs.pid} & conftest.own_processes()
