"""The parent's side of the child's messages: one JSON object per line on a pipe.

The measured child (leakbench.engine.child, whose docstring lists them all) writes each
message as one JSON object on a line of the pipe it is given: a phase begun, its device and
versions after the import, a sample after each measured repetition, a warm-up or heap
repetition done, an evidence reading begun, its result, its teardown's seconds, its error, or
that it is skipped. The runner (leakbench.engine.runner) reads the pipe and hands each line
here: parse makes it a message, or None for anything else (the pipe is the scenario's too);
problem checks it, type by type, against the schema of its kind
(leakbench.engine.message_schemas); take files a message
that passed into the run's Outcome (phase, samples, result, device, error, ...); sign tells
the step it marks, for a hang's error. After a last word (LAST_WORDS) the child has only to
exit. phase_pending reads what was written but not yet read, for the phase a run over its cap
was in.

The measured code runs in the child and may write on the pipe, so nothing on it is trusted:
a message is read only once `problem` passed it, as a records file is read only once
leakbench.analysis.validate passed it. Its schemas (message_schemas.SCHEMAS) are compiled once by
fastjsonschema on the first message.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any

from leakbench import jsonfile
from leakbench.engine.message_schemas import SCHEMAS
from leakbench.engine.outcome import Outcome

MAX_MESSAGE_BYTES = 256 << 20  # a line longer than any result (records are < 1 MiB): not a message
LAST_WORDS = {"result", "error", "skipped"}  # after any of these, the child has only to exit
# The kinds of message, each named by its key, in the order a message is named by (an error
# message carries its phase too). message_schemas.SCHEMAS has one schema per kind.
KINDS = ("error", "result", "sample", "progress", "device", "skipped", "teardown_seconds", "phase")
# No count, size or time of a process reaches it; past it, a number is no reading of ours (an
# integer of 400 digits would make float() raise in the estimates).
NUMBER_BOUND = 2**63


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


def problem(message: dict, reps: int | None = None) -> str | None:
    """What makes `message` (parse's) no message of leakbench's child, in one line naming its
    kind and where ("the child's result message: samples[3].rss_bytes is a str, not a number"),
    or None: its kind (KINDS) by its key, its keys, their types (SCHEMAS), every number finite and
    within ±NUMBER_BOUND, every string valid UTF-8; where `reps` (the measured repetitions the
    child was asked for) is given, a result holds one sample per repetition (the analysis cuts
    the series into halves and windows by that count)."""
    import fastjsonschema

    kind = next((k for k in KINDS if k in message), None)
    if kind is None:
        return (
            f"the child sent a message of no kind it sends (keys {_keys(message)}; each of its "
            f"messages has one of {', '.join(KINDS)})"
        )
    try:
        _validators()[kind](message)
    except fastjsonschema.JsonSchemaValueException as e:
        return f"the child's {kind} message: {_wrong(e, kind)}"
    except RecursionError:
        return f"the child's {kind} message: nested too deeply"
    found = _bad_value(message, ())
    if found:
        return f"the child's {kind} message: {_where(found[0], kind)} {found[1]}"
    if kind == "result" and reps is not None and len(message["result"]["samples"]) != reps:
        held = len(message["result"]["samples"])
        return f"the child's result message: {held} samples, not one per repetition ({reps})"
    return None


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
    """File a message (one `problem` passed) into `outcome` (its phase, a sample, the result, the
    device, a skip, the teardown, an error), then hand it to on_message."""
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


@functools.cache
def _validators() -> dict:
    """Each kind's compiled validator (fastjsonschema: the schema made Python code once)."""
    import fastjsonschema

    return {kind: fastjsonschema.compile(schema) for kind, schema in SCHEMAS.items()}


# --- saying what is wrong, in one line ------------------------------------------------------------

_SHORT = 40  # characters of a key or value shown


def _wrong(e, kind: str) -> str:
    """One fastjsonschema error as "where is what, not what it must be"."""
    where = _where(e.name[len("data") :], kind)
    value, rule, wanted = e.value, e.rule, e.rule_definition
    if rule == "type":
        return f"{where} is {_a(value)}, not {jsonfile.type_words(wanted)}"
    if rule == "required":
        missing = [k for k in wanted if k not in (value or {})]
        return f"{where} lacks {_show(missing[0]) if missing else 'a key'}"
    if rule == "additionalProperties":
        extra = sorted(set(value) - set(e.definition.get("properties", {})), key=str)
        return f"{where} has a key the child never sends: {_show(extra[0]) if extra else '?'}"
    return f"{where}: {e.message.split(' ', 1)[-1][: _SHORT * 2]}"


def _where(path, kind: str) -> str:
    """fastjsonschema's ".result.samples[3].rss_bytes" (or a walk's tuple) as "samples[3].rss_bytes"
    in the `kind` message; the message itself is "the message", its kind's key that key."""
    if isinstance(path, tuple):
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    if kind in ("result", "sample") and path.startswith(f".{kind}") and path != f".{kind}":
        path = path[len(kind) + 1 :]
    text = path.lstrip(".") or "the message"
    return _show(text, quote=False)


def _show(text: Any, quote: bool = True) -> str:
    """A key or path as one short line: line breaks and other control characters escaped."""
    shown = repr(text) if quote else repr(str(text))[1:-1]
    return shown if len(shown) <= 2 * _SHORT else shown[: 2 * _SHORT] + "…"


def _a(value: Any) -> str:
    if value is None:
        return "null"
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _keys(message: dict) -> str:
    return ", ".join(_show(k) for k in list(message)[:5]) or "none"


def _bad_value(value: Any, where: tuple) -> tuple[tuple, str] | None:
    """(where, what) of the first number that is not finite or past ±NUMBER_BOUND, or string that
    is not valid UTF-8 (json reads NaN, Infinity, 1e400 and a lone surrogate, "\\ud800"), or None
    (jsonfile.bad_value's walk, in this module's words).
    """
    found = jsonfile.bad_value(value, where, NUMBER_BOUND)
    if found is None:
        return None
    at, what, culprit = found
    if what == jsonfile.NOT_FINITE:
        return at, f"is {culprit}, not a finite number (JSON has no NaN or infinity)"
    if what == jsonfile.PAST_BOUND:
        shown = (
            f"{culprit:.3g}"
            if isinstance(culprit, float)
            else f"an int of {len(str(culprit))} digits"
        )
        return at, f"is {shown}, past ±2**63 (no count, size or time is)"
    if what == jsonfile.BAD_KEY:
        return at, "has a key with a lone surrogate, not valid UTF-8"
    return at, "is a string with a lone surrogate, not valid UTF-8"
