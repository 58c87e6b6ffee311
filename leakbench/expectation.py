"""What each variant should read, and whether a record reads it: the one rule
that `make run`'s exit code, `leakbench check`, the pytest helper, compare,
the matrix, repeat and calibration all ask.

The scenario contract (leakbench.contract) declares it, and only what it
declares passes:

    a scenario (leaky)   leak; or what the scenario declares instead:
                         EXPECTED = "fragmentation" (the pair shows allocator
                         fragmentation, not a leak), or a REPORTED claim that
                         ties the leak to some TensorFlow releases (leak or
                         no-leak: which one a release gives is a measurement).
                         A leak cut short passes as a leak: over-cap once the
                         pipeline runs (warm-up, repetitions, heap pass; not
                         in the import or setup), or a hang in teardown after
                         its signals moved (freeing what leaked stalled).
    a fix (fixed)        no-leak.
    a check target       no-leak or fragmentation (`leakbench check`, the pytest
                         helper, `leakbench run FILE.py`): a user asks whether
                         the pipeline holds memory, and fragmentation holds none.
    a designed control   no-leak (calibration: every other verdict is a false alarm).

A scenario that needs what a machine may lack (contract.Scenario.needs: a
device it REQUIRES, "GPU", or a library its ENV preloads, LD_PRELOAD) may read
`skipped` where that is not there: nothing measured, nothing wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

LEAK_PHASES = ("warm-up", "repetitions", "heap")  # where an over-cap is the leak growing


@dataclass(frozen=True)
class Expectation:
    """The verdicts a variant may read. label: in words, as tables show it."""

    label: str
    verdicts: frozenset
    # an over-cap in LEAK_PHASES, or a stall in teardown after signals moved
    leak_cut_short: bool = False
    skipped: bool = False  # the scenario needs a device or a library: `skipped` passes

    def accepts(self, rec: Mapping[str, Any]) -> bool:
        """True if the record's verdict is one this
        expectation allows (see the module docstring)."""
        word = rec["verdict"]
        if word in self.verdicts or (word == "skipped" and self.skipped):
            return True
        return self.leak_cut_short and leak_cut_short(rec)

    def with_requirement(self) -> Expectation:
        """The same, for a scenario that needs a device or a library: `skipped` passes too."""
        return Expectation(
            f"{self.label} or skipped", self.verdicts, self.leak_cut_short, skipped=True
        )


LEAK = Expectation("leak", frozenset({"leak"}), leak_cut_short=True)
NO_LEAK = Expectation("no-leak", frozenset({"no-leak"}))
VERSION_DEPENDENT = Expectation(
    "leak or no-leak", frozenset({"leak", "no-leak"}), leak_cut_short=True
)
FRAGMENTATION = Expectation("fragmentation", frozenset({"fragmentation"}))
CHECK = Expectation(
    "no-leak or fragmentation", frozenset({"no-leak", "fragmentation"}), skipped=True
)
DECLARABLE = {"fragmentation": FRAGMENTATION}  # the contract's EXPECTED values


def leak_cut_short(rec: Mapping[str, Any]) -> bool:
    """An over-cap once the pipeline ran, or a hang in teardown after its signals moved."""
    if rec["verdict"] == "over-cap":
        return rec.get("phase") in LEAK_PHASES
    return stalled_after_leak(rec)


def stalled_after_leak(rec: Mapping[str, Any]) -> bool:
    """A record that hung in teardown after its signals moved: freeing what leaked stalled."""
    return rec["verdict"] == "hang" and rec.get("phase") == "teardown" and bool(rec["signals"])


def for_variant(
    variant: str,
    reported: dict | None = None,
    expects: str | None = None,
    requires: str | None = None,
) -> Expectation:
    """The expectation of a variant ("leaky", "fixed", or "file"/"check" for a user's own code),
    from its scenario's REPORTED, EXPECTED and what it needs (requires: contract.Scenario.needs,
    REQUIRES or the libraries its ENV preloads)."""
    if variant == "leaky":
        found = DECLARABLE[expects] if expects else VERSION_DEPENDENT if reported else LEAK
    elif variant == "fixed":
        found = NO_LEAK
    else:
        found = CHECK
    return found.with_requirement() if requires else found


def for_record(rec: Mapping[str, Any]) -> Expectation:
    """The expectation of a record, from the copy of its
    contract it keeps (leakbench.analysis.record)."""
    return for_variant(rec["variant"], rec.get("reported"), rec.get("expects"), rec.get("requires"))


def accepts(rec: Mapping[str, Any]) -> bool:
    """for_record(rec).accepts(rec)."""
    return for_record(rec).accepts(rec)
