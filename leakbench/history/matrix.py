"""`leakbench matrix`: the pair × TensorFlow release table of verdicts, from the record store.

Each cell keeps the verdict, whether it is what the variant should read
(leakbench.expectation), the record's decision (the number the verdict rests on:
leakbench.analysis.judge.decision), and the fragmentation evidence (the registry's MATRIX
metrics, under their keys). Rendering is leakbench.reporters.history's.
"""

from __future__ import annotations

from pathlib import Path

from leakbench import expectation, jsonfile, metrics, version
from leakbench.analysis.judge import decision
from leakbench.analysis.record_type import Record
from leakbench.history import builds, machines, store
from leakbench.history.compare import order


def verdict_runs(verdicts: dict, versions: list) -> list[tuple[str, str, str]]:
    """Runs of one verdict over consecutive measured releases: [(verdict, first, last)].
    verdicts: TF version -> verdict word (a version missing there was not measured); versions in
    order. A run after the first starts at a release whose
    verdict differs from the one measured before."""
    found: list[tuple[str, str, str]] = []
    for v in versions:
        word = verdicts.get(v)
        if word is None:
            continue
        if found and found[-1][0] == word:
            found[-1] = (word, found[-1][1], v)
        else:
            found.append((word, v, v))
    return found


def cell(rec: Record) -> dict:
    """One matrix cell of a record (see the module docstring); numbers in bytes and bytes/repetition
    (a trend's as metrics.value reads it)."""
    return {
        "verdict": rec["verdict"],
        "expected": expectation.accepts(rec),
        "expectation": expectation.for_record(rec).label,
        "kind": rec.get("kind"),
        "decision": decision.of(rec),
        **{m.key: decision.value(rec, m.key) for m in metrics.metrics_in(metrics.MATRIX)},
        "signals": rec.get("signals", []),
        "skip_reason": rec.get("skip_reason"),
    }


def matrix(results: Path, machine: str | None = None) -> dict:
    """{"machine", "hardware", "engines", "versions": [...], "labels": {version: column name (a
    nightly's build date: builds.label)}, "rows": [{"pair", "variant", "cells": {version: cell or
    None}}], "bisected": the confirmed boundaries of results/bisect/<machine>/ (bisected)}
    from every records file of one machine in `results` (store.pick_machine).
    Raises store.VersionError for results without records."""
    machine = store.pick_machine(results, machine)
    found = store.by_version(results, machine)
    keys = sorted({k for recs in found.values() for k in recs}, key=order)
    if not keys:
        raise store.VersionError(f"{results}: the matrix is empty")
    rows = [
        {
            "pair": pair,
            "variant": variant,
            "cells": {
                v: cell(recs[(pair, variant)]) if (pair, variant) in recs else None
                for v, recs in found.items()
            },
        }
        for pair, variant in keys
    ]
    every = [r for recs in found.values() for r in recs.values()]
    hardware = {m for r in every if (m := machines.machine_of(r)) is not None}
    return {
        "machine": machine,
        # machines.describe of the one CPU model and cores the records name, None where not one
        "hardware": machines.describe(next(iter(hardware))) if len(hardware) == 1 else None,
        # TF version -> the engines that made its records (version.describe), in column order
        "engines": {
            v: sorted({version.describe(r) for r in recs.values()}) for v, recs in found.items()
        },
        "versions": list(found),
        "labels": {v: builds.label(v) for v in found},
        "rows": rows,
        "bisected": bisected(results, machine),
    }


def changes(m: dict) -> list[dict]:
    """Every verdict change along a matrix's columns (matrix()'s dict), in row order:
    [{"pair", "variant", "from", "to", "version": the first column reading "to", "label": its
    name (builds.label), "before": the last column reading "from", "one_build": the new (or the old)
    verdict holds on one build only, the same verdict on both sides of it, "bisect": the confirmed
    `leakbench bisect` boundary inside the change (m["bisected"], _bisect_in) or None}]. A column
    where the row was not measured is passed over (verdict_runs)."""
    found = []
    for row in m["rows"]:
        words = {v: c["verdict"] for v, c in row["cells"].items() if c is not None}
        runs = verdict_runs(words, m["versions"])
        for i, (before, now) in enumerate(zip(runs, runs[1:])):
            found.append(
                {
                    "pair": row["pair"],
                    "variant": row["variant"],
                    "from": before[0],
                    "to": now[0],
                    "before": before[2],
                    "version": now[1],
                    "label": builds.label(now[1]),
                    "one_build": _one_build(runs, i + 1) or _one_build(runs, i),
                }
            )
    for change in found:
        change["bisect"] = _bisect_in(change, m.get("bisected") or [])
    return found


def _one_build(runs: list, i: int) -> bool:
    """True when run i covers one build and the runs on both sides of it read the same verdict:
    A → B → A with B on one build, a reading to measure again before believing it."""
    return 0 < i < len(runs) - 1 and runs[i][1] == runs[i][2] and runs[i - 1][0] == runs[i + 1][0]


def bisected(results: Path, machine: str) -> list[dict]:
    """The found boundaries of `leakbench bisect` in results/bisect/<machine>/*.json:
    [{"pair", "variant", "good", "bad" (versions: the last build reading the old verdict, the first
    reading the new), "bad_date", "compare_url", "file" (its name)}]. Files that cannot be read, or
    whose status is not "found", are passed over: a boundary that was not confirmed is not shown."""
    found = []
    for path in sorted((Path(results) / "bisect" / machine).glob("*.json")):
        try:
            data = jsonfile.load(path)  # a regular file under jsonfile.MAX_BYTES, else Unreadable
            if data.get("status") != "found":
                continue
            good, bad = data["boundary"]["good"], data["boundary"]["bad"]
            found.append(
                {
                    "pair": data["pair"],
                    "variant": data["variant"],
                    "good": good["version"],
                    "bad": bad["version"],
                    "bad_date": bad.get("date"),
                    "compare_url": data["boundary"].get("compare_url"),
                    "file": path.name,
                }
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            # jsonfile.Unreadable is a ValueError
            continue
    return found


def _bisect_in(change: dict, boundaries: list[dict]) -> dict | None:
    """The bisect boundary of the change's pair and variant whose first build lies after `before`
    and at or before `version` (PEP 440), or None."""
    lo, hi = builds.sort_key(change["before"]), builds.sort_key(change["version"])
    return next(
        (
            b
            for b in boundaries
            if (b["pair"], b["variant"]) == (change["pair"], change["variant"])
            and lo < builds.sort_key(b["bad"]) <= hi
        ),
        None,
    )
