"""What one measurement of a build says, for `leakbench bisect`: its verdict,
whether it is usable, the rate it rests on, and the build's git name.

A record is what `measure(build)` returns to the search (leakbench.history.bisect): a
leakbench record, or a dict with at least "verdict". Its reading is unusable when it says
nothing about the pipeline (error, hang, skipped, or over-cap while importing: the build,
not the pipeline, failed); the search skips that build.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from leakbench.analysis.judge import decision, in_words
from leakbench.history.builds import pep440
from leakbench.history.registry import Build

UNUSABLE = ("error", "hang", "skipped")


def usable(record: Mapping[str, Any]) -> bool:
    """False for a reading that says nothing about the pipeline:
    error, hang, skipped, or over-cap while importing."""
    word = record.get("verdict")
    if word is None or word in UNUSABLE:
        return False
    return not (word == "over-cap" and record.get("phase") == "import")


def rate_of(record: Mapping[str, Any]) -> tuple[str | None, float | None, str | None]:
    """(what, number, unit) the verdict rests on: the record's decision (its label, value and
    unit: leakbench.analysis.judge.decision); Nones where nothing was measured."""
    found = decision.of(record) if record.get("metrics") is not None or "decision" in record else {}
    if found.get("value") is None:
        return None, None, None
    return found["label"], found["value"], found["unit"]


@dataclass
class Reading:
    """One measurement: the build, its verdict, the rate it rests on (rate_unit), seconds measuring
    and installing (0 when the build was installed
    already), and role: "end", "search" or "confirm"."""

    version: str
    dist: str
    date: str | None
    role: str
    verdict: str | None
    usable: bool
    rate_label: str | None = None
    rate: float | None = None
    rate_unit: str | None = None
    decided: str | None = None  # the number in words (leakbench.analysis.judge.in_words.number)
    signals: list = field(default_factory=list)
    seconds: float | None = None
    install_seconds: float = 0.0
    tensorflow: str | None = None
    tensorflow_git: str | None = None
    phase: str | None = None
    error: str | None = None


def reading_of(
    build: Build, record: Mapping[str, Any], role: str, install_seconds: float = 0.0
) -> Reading:
    """A Reading of one record (see measure in the module docstring)."""
    label, rate, unit = rate_of(record)
    env = record.get("environment") or {}
    error = (record.get("error") or "").strip().splitlines()
    return Reading(
        build.version,
        build.dist,
        build.date,
        role,
        record.get("verdict"),
        usable(record),
        label,
        rate,
        unit,
        in_words.number(decision.of(record)) if record.get("metrics") is not None else None,
        list(record.get("signals") or []),
        record.get("seconds"),
        round(install_seconds, 1),
        env.get("tensorflow"),
        env.get("tensorflow_git"),
        record.get("phase"),
        error[-1] if error else None,
    )


def git_ref(build: Build, tensorflow_git: str | None) -> str | None:
    """The git name of a build: a release's or RC's tag (v2.15.1, v2.16.0-rc0), else the commit in
    tf.version.GIT_VERSION ('v1.12.1-148158-gef696751006' -> 'ef696751006'); None when unknown."""
    v = pep440(build.version)
    if not v.is_devrelease and not v.is_postrelease and (v.pre is None or v.pre[0] == "rc"):
        return f"v{v.base_version}" + (f"-rc{v.pre[1]}" if v.pre else "")
    found = re.search(r"-g([0-9a-f]{7,40})$", tensorflow_git or "")
    return found.group(1) if found else None
