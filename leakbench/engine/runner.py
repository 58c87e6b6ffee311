"""Measure one scenario in a fresh child process: the child's protocol over the supervisor.

The child (leakbench.engine.child) is a fresh interpreter started with subprocess
(spawn semantics: nothing of this process, TensorFlow least of all, is forked),
supervised by leakbench.engine.supervise: its process tree's RSS is polled every
supervise.POLL_SECONDS; past the cap the tree is killed and the run ends
`over-cap`, as it does when the kernel killed in the run's memory cgroup at the cap
(where one holds it: leakbench.engine.cgroup); past the timeout it ends `hang`,
naming the phase it was in. This
module reads the child's messages (one JSON object per line on a pipe,
leakbench.engine.messages) into an Outcome.

The timeout is an allowance per step, not for the whole run: every message
the child sends (a phase begun, a warm-up, measured or heap repetition done,
an evidence reading begun: leakbench.engine.child) is a sign of progress, and
the child is killed `timeout_seconds` after the last one. A busy machine
only stretches a run; a deadlock is killed timeout_seconds after it stopped
making progress, and the hang's error says how long it went without progress,
in which phase and after which step. Once the child has said its last word
(its result, its error, or that it is skipped), the teardown limit alone
applies: a child that reported an error and then stalls on its way out
(dropping its state, exiting) is killed teardown_timeout_seconds after the
report and reads `error` with its message (and that it was killed stalling), not `hang`. No separate
bound on the whole run is kept: the protocol sends a fixed number of messages before its result (one
per repetition, plus nine: five phases, the device, two evidence readings begun, the result), so a
run is already bounded by (warm-up + measured + heap repetitions + 9) ×
timeout_seconds, plus the teardown limit.

Nothing on the pipe is filed into the Outcome before it passed messages.problem: a line that is
no message of the child's, type by type, makes the run `error` with one line naming it. A child
that ends without its last word reads `error` in one line too (leakbench.engine.run_errors).
"""

from __future__ import annotations

import json
import os
import selectors
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from leakbench.engine import messages, run_errors, supervise
from leakbench.engine.outcome import Outcome  # its home (messages fills it); read as runner.Outcome

CHILD_MODULE = "leakbench.engine.child"  # the measured child: python -m CHILD_MODULE CONFIG
# after the child's last word, the seconds it has to exit (ChildRun.teardown_timeout_seconds)
TEARDOWN_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class ChildRun:
    """One child run's settings: its protocol's repetition counts, its limits (bytes, seconds),
    and what else the child is given.

    warmup, reps: repetitions before the measured ones, and measured. heap_reps: repetitions of
        the heap pass (memray; 0: none).
    cap_bytes: RSS of the child's process tree (bytes) past which it is killed.
    timeout_seconds: the longest the child may go without a sign of progress (a phase
        begun, a repetition done, an evidence reading begun): per step, not for the
        whole run (see the module docstring). Before its first message the allowance
        counts from its start (the interpreter's start-up belongs to the import).
    teardown_timeout_seconds: once the child has sent its result (or its error, or
        that it skips), the time it has left to tear down and exit. Dropping hundreds of live
        tf.data iterators has stalled for minutes on TF 2.21 (docs/measurements.md, "TensorFlow");
        the measurement is already in hand, so it need not wait that long.
    env: extra environment variables for the child (e.g. LD_PRELOAD).
    child_options: more keys for the child's config (leakbench check: "target", "diagnose").
    heap_file: where the heap pass writes its memray capture, kept for the
        caller; by default it goes into this run's temporary folder and is deleted.
    """

    warmup: int
    reps: int
    heap_reps: int
    cap_bytes: int
    timeout_seconds: float
    teardown_timeout_seconds: float = TEARDOWN_TIMEOUT_SECONDS
    env: dict | None = None
    child_options: dict | None = None
    heap_file: Path | None = None


def run_child(
    path: Path,
    params: dict,
    run: ChildRun,
    on_message: Callable[[dict], None] | None = None,
) -> Outcome:
    """Measure scenario file `path` with `params` in a fresh, capped, timed process, under `run`'s
    settings (ChildRun: repetitions, cap in bytes, timeouts in seconds).

    on_message: called with every message the child sends (progress).
    Never raises for anything the child does; returns an Outcome (status error,
    phase import, when the child cannot even be started).
    """
    read_fd, write_fd = os.pipe()
    # each closed once (a number closed twice may be another thread's file)
    open_fds = {read_fd, write_fd}
    try:
        return _run(open_fds, read_fd, write_fd, path, params, run, on_message)
    finally:
        for fd in open_fds:  # on every path, a failed start included
            os.close(fd)


def _run(open_fds, read_fd, write_fd, path, params, run: ChildRun, on_message) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="leakbench-") as tmp:
        heap_file = Path(run.heap_file).resolve() if run.heap_file else Path(tmp) / "heap.bin"
        config = {
            "path": str(Path(path).resolve()),
            "params": params,
            "warmup": run.warmup,
            "reps": run.reps,
            "heap_reps": run.heap_reps,
            "heap_file": str(heap_file),
            "fd": write_fd,
            "parent": os.getpid(),
            **(run.child_options or {}),
        }
        log_path = Path(tmp) / "child.log"
        try:
            with open(log_path, "wb") as log:
                child = supervise.Supervised(
                    supervise.python(CHILD_MODULE, json.dumps(config)),
                    env=supervise.child_env(run.env),
                    stdout=log,
                    stderr=log,
                    pass_fds=(write_fd,),
                    cap_bytes=run.cap_bytes,
                )
        except OSError as e:
            return Outcome(
                "error", "import", params, 0.0, error=f"could not start the child process: {e}"
            )
        # ours; the child has its copy. Closing it lets EOF arrive when the child exits
        os.close(write_fd)
        open_fds.discard(write_fd)
        return _watch(child, read_fd, params, run, on_message, log_path)


class _Reading:
    """What _watch knows of the run as it reads the pipe. The deadline (time.monotonic) moves
    with every message (a sign of progress) until the child's last word (result, error,
    skipped) is in; from then on the teardown limit alone applies."""

    def __init__(self, child: supervise.Supervised, run: ChildRun):
        self.counts = {"warm-up": run.warmup, "repetitions": run.reps}
        self.last_sign, self.last_at = "the child's start", child.started
        self.result_at: float | None = None
        self.last_word_at: float | None = None
        self.deadline = child.started + run.timeout_seconds
        self.buffer = b""  # read, not yet a whole line
        self.open_pipe = True
        # a line that is no message of the child's (the run's error says which)
        self.refused = False
        self.killed_running = False  # the child still ran when it was killed


def _watch(
    child: supervise.Supervised, read_fd, params, run: ChildRun, on_message, log_path: Path
) -> Outcome:
    outcome = Outcome(status="ok", phase=None, params=params, wall_seconds=0.0)
    reading = _Reading(child, run)
    selector = selectors.DefaultSelector()
    selector.register(read_fd, selectors.EVENT_READ)
    try:
        while reading.open_pipe:
            for _key, _ in selector.select(supervise.POLL_SECONDS):
                _read(read_fd, reading, outcome, run, on_message)
                if outcome.status == "error":
                    break
            if outcome.status == "error":
                break
            if _stopped(child, read_fd, selector, reading, outcome, run):
                break
    finally:
        selector.close()
        _end(child, reading, outcome, run)
    return _judged(child, reading, outcome, run, log_path)


def _read(read_fd, reading: _Reading, outcome: Outcome, run: ChildRun, on_message) -> None:
    """Read what the pipe holds and file each whole line; a line that is no message of the
    child's makes `outcome` an error and stops the filing."""
    chunk = os.read(read_fd, 1 << 16)
    if not chunk:
        reading.open_pipe = False
    reading.buffer += chunk
    *lines, reading.buffer = reading.buffer.split(b"\n")
    if len(reading.buffer) > messages.MAX_MESSAGE_BYTES:
        lines.append(reading.buffer[:80])  # no line end in sight: not a message of ours
    for line in lines:
        message = messages.parse(line)
        # the child's pipe is the scenario's too: trust nothing on it, and file
        # nothing of a message before it passed, type by type
        why = (
            "the measured process wrote on leakbench's message pipe what is "
            f"not a message of leakbench's child: {line[:80]!r}"
            if message is None
            else messages.problem(message, run.reps)
        )
        if message is None or why:
            outcome.status, outcome.error, reading.refused = "error", why, True
            break
        messages.take(outcome, message, on_message)
        if reading.last_word_at is None:
            reading.last_sign = messages.sign(message, reading.counts)
            reading.last_at = time.monotonic()
            reading.deadline = reading.last_at + run.timeout_seconds
        if "result" in message and reading.result_at is None:
            reading.result_at = time.monotonic()
        if messages.LAST_WORDS & message.keys() and reading.last_word_at is None:
            reading.last_word_at = time.monotonic()
            teardown_end = reading.last_word_at + run.teardown_timeout_seconds
            reading.deadline = min(reading.deadline, teardown_end)


def _stopped(child, read_fd, selector, reading: _Reading, outcome: Outcome, run) -> bool:
    """Whether the run ends here: over its cap, past its deadline, or its child gone (then
    `outcome` says which)."""
    stopped = child.over_limits(run.cap_bytes, reading.deadline)
    if stopped == "hang" and (outcome.error is not None or outcome.skipped):
        return True  # its error (or skip) is reported: a stall on its way out does not change it
    if stopped == "over-cap":
        # the phase it was in: the child may have begun one after our last read (the
        # cache it fills in warm-up passed the cap within a poll of "setup" being sent)
        outcome.phase = messages.phase_pending(read_fd, selector, reading.buffer) or outcome.phase
    if stopped:
        outcome.status = stopped
        return True
    # the child exited; a process it forked holds the pipe open: nothing more will come
    return bool(child.reap() and not selector.select(0))


def _end(child, reading: _Reading, outcome: Outcome, run: ChildRun) -> None:
    """Reap or kill the child, on every path, and file what the supervisor read of it."""
    if not reading.open_pipe:  # the child closed its end: give it a moment to exit by itself
        grace = time.monotonic() + 5
        if reading.last_word_at is not None:  # within what is left of its teardown allowance
            grace = min(grace, reading.deadline)
        while not child.reap() and time.monotonic() < grace:
            time.sleep(supervise.POLL_SECONDS)
    reading.killed_running = not child.reap()
    if (
        outcome.error is not None
        and reading.last_word_at is not None
        and reading.killed_running
        and not reading.refused
    ):
        # its error stands (a kill after its report is ours); the stall is told beside it
        outcome.error += run_errors.stalled(time.monotonic() - reading.last_word_at)
    child.kill()
    outcome.max_rss_bytes, outcome.peak_rss_bytes = child.max_rss_bytes, child.peak_rss_bytes
    outcome.cap_enforced_by, outcome.cgroup_peak_bytes = (
        child.cap_enforced_by,
        child.cgroup_peak_bytes,
    )
    outcome.killed_by_kernel = child.killed_at_cap()
    outcome.wall_seconds = child.seconds()


def _judged(child, reading: _Reading, outcome: Outcome, run: ChildRun, log_path: Path) -> Outcome:
    """`outcome`'s status and error from how the run ended (a child that reported its error keeps
    it)."""
    if outcome.status == "hang" and outcome.error is None:
        outcome.phase = outcome.phase or "import"  # no message yet: the interpreter was starting
        killed_at = child.started + outcome.wall_seconds
        if reading.result_at is not None:
            outcome.error = run_errors.teardown_hang(
                killed_at - reading.result_at, run.teardown_timeout_seconds
            )
        else:
            outcome.error = run_errors.no_progress(
                killed_at - reading.last_at,
                outcome.phase,
                run.timeout_seconds,
                reading.last_sign,
                reading.last_at - child.started,
            )
    if outcome.status == "ok" and outcome.killed_by_kernel:
        # the kernel killed at the cap after the last poll (the pipe's end came first): the
        # phase is the last one the child began, every message of it read
        outcome.status = "over-cap"
    if outcome.status == "ok":
        # Judged by what the child said, not its exit code: a kill after the
        # final message is ours, not the scenario's.
        finished = outcome.result is not None and outcome.teardown_seconds is not None
        if outcome.skipped and not outcome.error:
            outcome.status = "skipped"
        elif outcome.error or not finished:
            outcome.status = "error"
            if outcome.error is None:  # it ended without its last word: a crash
                outcome.error = run_errors.died(
                    child, outcome.phase, log_path, reading.killed_running, reading.open_pipe
                )
    return outcome
