"""A record's type: its keys (Record), the keys every schema requires (REQUIRED), and the schema
records are written in today (SCHEMA; leakbench.analysis.schema lists the schemas and migrates
older ones).

Here, apart from schema.py, so that what builds a record (leakbench.analysis.record) and what
validates one (leakbench.analysis.json_schemas, whose record schema is derived from Record) read
the type without importing the migration that uses both: this module imports nothing of
leakbench. leakbench.analysis.schema re-exports all three; callers import them from there.
"""

from __future__ import annotations

from typing import TypedDict

SCHEMA = 4
REQUIRED = ("schema", "pair", "variant", "verdict", "metrics", "environment")


class Record(TypedDict, total=False):
    """One measured variant. Units are in the names (*_bytes bytes, seconds seconds);
    growth metrics carry their unit ("bytes/repetition", ...)."""

    schema: int
    pair: str  # scenario file stem, or the check target
    variant: str  # "leaky", "fixed", "file", "check"
    path: str
    title: str
    source: str
    reported: dict | None  # the contract's REPORTED claim
    expects: str | None  # the contract's EXPECTED ("fragmentation") or None
    # what the variant needs that a machine may lack (contract.Scenario.needs): the contract's
    # REQUIRES ("GPU"), else the libraries its ENV preloads ("libtcmalloc_minimal.so.4"), or None
    requires: str | None
    kind: str  # "growth" or "peak"
    repetition: str
    size_param: str
    params: dict
    settings: dict  # leakbench.settings.Settings, flamegraph_dir left out
    environment: dict  # versions, CPU, cores, RAM, device
    runs: list[dict]  # one per size (record.run_entry)
    metrics: dict  # leakbench.metrics.METRICS keys, and the fragmentation inputs
    signals: list[str]
    verdict: str  # a word of verdict.VERDICTS
    teardown_stalled: str | None
    phase: str | None
    error: str | None
    skip_reason: str | None
    seconds: float
    confirmation: (
        dict  # only on a leak (or an unsettled no-leak) measured again (leakbench.measure)
    )
    extension: dict  # only where the confirmation rose without deciding (leakbench.measure)
    flamegraph: dict  # only where memray drew one
    diagnosis: dict  # only from leakbench check
    decision: (
        dict  # the number the verdict rests on (leakbench.analysis.judge.decision), schema 3 on
    )
    engine: dict | None  # leakbench.version.engine(): version, commit, source; schema 4 on
