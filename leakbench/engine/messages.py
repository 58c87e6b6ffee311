"""The parent's side of the child's messages: one JSON object per line on a pipe.

The measured child (leakbench.engine.child, whose docstring lists them all) writes each
message as one JSON object on a line of the pipe it is given: a phase begun, its device and
versions after the import, a sample after each measured repetition, a warm-up or heap
repetition done, an evidence reading begun, its result, its teardown's seconds, its error, or
that it is skipped. The runner (leakbench.engine.runner) reads the pipe and hands each line
here: parse makes it a message, or None for anything else (the pipe is the scenario's too);
take files it into the run's Outcome (phase, samples, result, device, error, ...); sign tells
the step it marks, for a hang's error. After a last word (LAST_WORDS) the child has only to
exit. phase_pending reads what was written but not yet read, for the phase a run over its cap
was in.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from leakbench.engine.runner import Outcome

MAX_MESSAGE_BYTES = 256 << 20  # a line longer than any result (records are < 1 MiB): not a message
LAST_WORDS = {"result", "error", "skipped"}  # after any of these, the child has only to exit


def sign(message: dict, counts: dict) -> str:
    """What a child's message says was done, for a
    hang's error: "measured repetition 3 of 12 done"."""
    if "error" in message:
        return "its error report"
    if "sample" in message:
        return f"measured repetition {message['rep'] + 1} of {counts['repetitions']} done"
    if "rep" in message:  # {"progress": "warm-up" or "heap", "rep": i}
        of = f" of {counts[message['progress']]}" if message["progress"] in counts else ""
        return f"{message['progress']} repetition {message['rep'] + 1}{of} done"
    if "progress" in message:
        return f"the {message['progress']} reading begun"
    if "phase" in message:
        return f"{message['phase']} begun"
    if "device" in message:
        return "the import done (its device message)"
    return f"its {next(iter(message), 'empty')} message"


def parse(line: bytes) -> dict | None:
    """One line of the pipe as the child's message (a JSON object), or None if it is none."""
    try:
        found = json.loads(line)
    except (ValueError, RecursionError):  # not UTF-8, not JSON, a 4,300-digit int, deep nesting
        return None
    return found if isinstance(found, dict) else None


def phase_pending(read_fd: int, selector, buffer: bytes) -> str | None:
    """The last phase among the messages already written on the pipe but not yet read (reads at
    most 1 MiB more, never waits), or None."""
    pending = buffer
    while len(pending) <= len(buffer) + (1 << 20) and selector.select(0):
        chunk = os.read(read_fd, 1 << 16)
        if not chunk:
            break
        pending += chunk
    phases = [m["phase"] for m in map(parse, pending.split(b"\n")[:-1]) if m and "phase" in m]
    return phases[-1] if phases and isinstance(phases[-1], str) else None


def take(outcome: Outcome, message: dict, on_message) -> None:
    """File a message into `outcome` (its phase, a sample, the result, the device, a skip, the
    teardown, an error), then hand it to on_message."""
    if "phase" in message:
        outcome.phase = message["phase"]
    if "sample" in message:
        outcome.samples.append(message["sample"])
    if "result" in message:
        outcome.result = message["result"]
    if "device" in message:
        outcome.device = message["device"]
        outcome.versions = message.get("versions")
    if "skipped" in message:
        outcome.skipped = message["skipped"]
        outcome.phase = None  # not cut short in a phase: nothing was to be measured
    if "teardown_seconds" in message:
        outcome.teardown_seconds = message["teardown_seconds"]
        outcome.phase = None
    if "error" in message:
        outcome.error = message["error"]
    if on_message:
        on_message(message)
