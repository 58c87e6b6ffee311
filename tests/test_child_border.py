"""Bad input at the child's border: the measured code runs in the child, beside the engine's own
channel (the pipe its messages go to), and may tamper with it. The parent reads nothing it has
not checked, and a child that dies says so in one line.

- a message of the wrong type (an int where the result or the error goes, a str in a sample)
  turns the run into `error`, with one line naming the message and where it is wrong
  (leakbench.engine.messages.problem), never a traceback;
- a target that closes the pipe's descriptor (os.closerange) or puts another file in its place
  (os.dup2, an open that gets its number) makes the child stop with ChannelLost: the run reads
  `error` in one line that names the file the child's output, its traceback, is kept in;
- the schema of every kind of message passes what an honest child sends: the messages of one
  `leakbench check` child on TensorFlow (tests/data/child_messages_tf.ndjson: stages, attribution,
  the heap's stacks) and of one in pure Python (child_messages_python.ndjson: a reference chain,
  the Python types that grew), recorded as the child wrote them on its pipe.

The targets are tests/data/child_border.py; `leakbench check` runs each in a process of its own,
capped (--cap 1GiB) and timed (--timeout, and a timeout on the command), with TMPDIR the test's
folder, where a kept output must land.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from leakbench.engine import messages, runner

DATA = Path(__file__).parent / "data"
FAST = ["--cap", "1GiB", "--timeout", "60", "--warmup", "1", "--reps", "6", "--heap-reps", "0"]
SECONDS = 120  # a run here takes a few; the command is killed past this
KEPT = re.compile(r"\(its whole output is kept in (\S+\.log)\)$")
STREAMS = sorted(DATA.glob("child_messages_*.ndjson"))


def check(tmp_path: Path, name: str, call: int = 1) -> subprocess.CompletedProcess:
    """`leakbench check child_border.py:NAME` in a process of its own, the target tampering at its
    CALL-th call, TMPDIR the test's folder."""
    shutil.copy(DATA / "child_border.py", tmp_path / "child_border.py")
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp"), "CHILD_BORDER_CALL": str(call)}
    return subprocess.run(
        [sys.executable, "-m", "leakbench", "check", f"child_border.py:{name}", *FAST],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=SECONDS,
    )


def error_in_one_line(done: subprocess.CompletedProcess) -> str:
    """Exit 3 (an error: the target could not be measured, leakbench.cli.exits.FAILED), no
    traceback anywhere, and exactly one line on stderr: check's 'leakbench: error in PHASE: ...'
    (its view of the failed run is on stdout; a refusal, which prints nothing there, is
    conftest.refused). Returns that line."""
    assert done.returncode == 3, (done.returncode, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("leakbench: error in "), done.stderr
    return lines[0]


def kept_file(line: str, tmp_path: Path) -> Path:
    """The file the line names for the child's output: in TMPDIR, holding its traceback."""
    found = KEPT.search(line)
    assert found, line
    path = Path(found[1])
    assert path.parent == tmp_path / "tmp" and path.name.startswith("leakbench-child-"), path
    text = path.read_text()
    assert text.startswith("Traceback (most recent call last):") and "ChannelLost: " in text, text
    return path


# --- a message of the wrong type --------------------------------------------------------------


@pytest.mark.timeout(SECONDS)
@pytest.mark.parametrize(
    "name, said",
    [
        ("int_result", "the child's result message: result is an int, not a dict"),
        ("int_error", "the child's error message: error is an int, not a string"),
        ("str_in_a_sample", "the child's sample message: rss_bytes is a str, not a number"),
    ],
)
def test_a_message_of_the_wrong_type_is_an_error_in_one_line(tmp_path, name, said):
    line = error_in_one_line(check(tmp_path, name))
    assert line.endswith(f": {said}"), line
    assert not list((tmp_path / "tmp").iterdir())  # no crash: no output kept, nothing left


# --- a closed or reused channel ---------------------------------------------------------------


@pytest.mark.timeout(SECONDS)
@pytest.mark.parametrize("call", [1, 3])  # check's setup; a warm-up or measured repetition
@pytest.mark.parametrize(
    "name, said",
    [
        ("closes_fds", "was closed by the measured code (os.close, os.closerange)"),
        ("dup2_over", "was replaced by another file"),
        ("reopens", "was replaced by another file"),
    ],
)
def test_a_closed_or_reused_channel_is_one_line_and_the_traceback_is_kept(
    tmp_path, name, said, call
):
    line = error_in_one_line(check(tmp_path, name, call))
    assert (
        "child exited with code 1 during " in line
        and "ChannelLost: leakbench's message pipe" in line
    )
    assert said in line, line
    kept = kept_file(line, tmp_path)
    assert said in kept.read_text()


@pytest.mark.timeout(SECONDS)
def test_a_child_that_replaces_its_channel_and_runs_on_is_killed_in_one_line(tmp_path):
    """Its pipe ends (EOF) while it runs: after a short grace it is killed, and says so."""
    line = error_in_one_line(check(tmp_path, "dup2_and_stay"))
    assert "closed leakbench's message pipe during setup and was killed, still running" in line
    assert line.endswith("with no output"), line


@pytest.mark.timeout(SECONDS)
def test_the_pipe_dup2_onto_itself_is_still_the_pipe(tmp_path):
    done = check(tmp_path, "same_pipe")
    assert done.returncode == 0 and done.stderr == "", (done.returncode, done.stderr)


@pytest.mark.timeout(60)
def test_a_crash_is_one_line_naming_the_kept_output(tmp_path, monkeypatch):
    """A child that dies without a Python exception (os._exit, as native code may): its exit code,
    its phase and its last line of output, and where its whole output is kept."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    outcome = runner.run_child(
        DATA / "python_crashes.py",
        {"code": 7},
        runner.ChildRun(warmup=1, reps=6, heap_reps=0, cap_bytes=1 << 30, timeout_seconds=60),
    )
    assert (outcome.status, outcome.phase) == ("error", "warm-up")
    assert outcome.error is not None and "\n" not in outcome.error
    assert outcome.error.startswith(
        "child exited with code 7 during warm-up: native code says goodbye (its whole output"
    ), outcome.error
    found = KEPT.search(outcome.error)
    assert found and Path(found[1]).parent == tmp_path, outcome.error
    assert Path(found[1]).read_text() == "native code says goodbye\n"


# --- the schemas, message by message ----------------------------------------------------------


@pytest.mark.parametrize("stream", STREAMS, ids=lambda p: p.stem)
def test_every_message_an_honest_child_sends_passes(stream):
    kinds = set()
    for line in stream.read_bytes().splitlines():
        message = messages.parse(line)
        assert message is not None and messages.problem(message) is None, (
            line[:120],
            message and messages.problem(message),
        )
        kinds.add(next(k for k in messages.KINDS if k in message))
    assert kinds == set(messages.KINDS) - {"error", "skipped"}


def honest(kind: str) -> dict:
    """The first message of `kind` in the TensorFlow stream."""
    for line in (DATA / "child_messages_tf.ndjson").read_bytes().splitlines():
        message = json.loads(line)
        if kind in message:
            return message
    raise AssertionError(kind)


def _with(message: dict, path: tuple, value) -> dict:
    changed = json.loads(json.dumps(message))
    where = changed
    for key in path[:-1]:
        where = where[key]
    where[path[-1]] = value
    return changed


@pytest.mark.parametrize(
    "message, said",
    [
        ({"result": 5}, "the child's result message: result is an int, not a dict"),
        (
            {"error": 5, "phase": "setup"},
            "the child's error message: error is an int, not a string",
        ),
        ({"error": "boom"}, "the child's error message: the message lacks 'phase'"),
        (
            {"phase": "setup", "rep": 1},
            "the child's phase message: the message has a key the child never sends: 'rep'",
        ),
        ({"phase": None}, "the child's phase message: phase is null, not a string"),
        (
            {"progress": "heap", "rep": "1"},
            "the child's progress message: rep is a str, not an integer",
        ),
        (
            {"rep": 1},
            "the child sent a message of no kind it sends (keys 'rep'; each of its messages has "
            "one of error, result, sample, progress, device, skipped, teardown_seconds, phase)",
        ),
        ({}, "the child sent a message of no kind it sends (keys none;"),
        (
            {"teardown_seconds": True},
            "the child's teardown_seconds message: teardown_seconds is a bool, not a number",
        ),
        (
            {"teardown_seconds": float("nan")},
            "the child's teardown_seconds message: teardown_seconds is nan, not a finite number",
        ),
        (
            {"teardown_seconds": 10**400},
            "the child's teardown_seconds message: teardown_seconds is an int of 401 digits",
        ),
        (
            {"skipped": "\ud800"},
            "the child's skipped message: skipped is a string with a lone surrogate",
        ),
        (
            {"device": {"device": "CPU"}, "versions": {"python": "3.11"}},
            "the child's device message: device lacks 'gpu'",
        ),
    ],
)
def test_a_bad_message_is_named_in_one_line(message, said):
    found = messages.problem(message)
    assert found is not None and found.startswith(said), found
    assert "\n" not in found


@pytest.mark.parametrize(
    "kind, path, value, said",
    [
        (
            "result",
            ("result", "samples", 3, "rss_bytes"),
            "x",
            "samples[3].rss_bytes is a str, not a number",
        ),
        ("result", ("result", "import_baseline"), None, "import_baseline is null, not a dict"),
        (
            "result",
            ("result", "heap", "stack_growth", 0, "bytes", 1),
            [],
            "heap.stack_growth[0].bytes[1] is a list, not a number",
        ),
        (
            "result",
            ("result", "stages", "stages", 0, "autotune", "a\nb"),
            "1",
            "stages.stages[0].autotune.a\\nb is a str, not a number",
        ),
        (
            "result",
            ("result", "diagnostics", "attribution", "nodes", 0, "inputs"),
            {},
            "diagnostics.attribution.nodes[0].inputs is a dict, not a list",
        ),
        (
            "result",
            ("result", "reference_chain"),
            {"na": 1},
            "reference_chain.na is an int, not a string",
        ),
        (
            "result",
            ("result", "versions", "python"),
            3.11,
            "versions.python is a float, not a string",
        ),
        (
            "sample",
            ("sample", "held_bytes"),
            float("inf"),
            "held_bytes is inf, not a finite number",
        ),
        ("device", ("device", "gpu"), "none", "device.gpu is a str, not a dict or null"),
    ],
)
def test_a_wrong_type_deep_in_a_message_is_named_where_it_is(kind, path, value, said):
    found = messages.problem(_with(honest(kind), path, value))
    assert found is not None and found.startswith(f"the child's {kind} message: {said}"), found
    assert "\n" not in found
