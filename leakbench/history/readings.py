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

from packaging.version import Version

from leakbench import metrics
from leakbench.analysis import verdict as verdicts
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
    """(what, rate, unit) the verdict rests on: the first signal that moved (the peak's exponent k
    for a peak), else the memory metric the verdict compares with
    its bar (verdict.memory_basis); Nones without metrics."""
    found = record.get("metrics") or {}
    signals = record.get("signals") or []
    scaling = found.get("peak_scaling") or {}
    if metrics.PEAK_SIGNAL in signals and scaling.get("exponent") is not None:
        return "peak exponent", scaling["exponent"], "k"
    keys = [metrics.BY_SIGNAL[s].key for s in signals if s in metrics.BY_SIGNAL] + (
        [verdicts.memory_basis(found).metric.key] if found else []
    )
    for key in keys:
        if found.get(key):
            return metrics.BY_KEY[key].label, verdicts.rate(found[key]), metrics.BY_KEY[key].unit
    return None, None, None


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
    v = Version(build.version)
    if not v.is_devrelease and not v.is_postrelease and (v.pre is None or v.pre[0] == "rc"):
        return f"v{v.base_version}" + (f"-rc{v.pre[1]}" if v.pre else "")
    found = re.search(r"-g([0-9a-f]{7,40})$", tensorflow_git or "")
    return found.group(1) if found else None
