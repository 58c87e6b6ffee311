"""The records `leakbench run` files: where they go, checked before anything is measured
(`destination`), and their filing once measured (`write`).

At the default settings (no measurement option, no --param) the records of the catalog's pairs
go to results/records/<machine>.local/tf-<installed TensorFlow>.jsonl, a folder git ignores
(leakbench.history.store.write_records replaces those pairs and keeps the rest); otherwise one
line says why none are written. A refusal ends the command in one line: exit 2 before anything
is measured, exit 3 (leakbench.cli.exits.FAILED) where the TensorFlow pin did not hold.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from leakbench.analysis.record_type import Record
from leakbench.catalog import VARIANT_DIRS, Target
from leakbench.cli.base import fail, failed, say
from leakbench.cli.options import OPTION_NAMES
from leakbench.history import machines, pin, store
from leakbench.settings import Settings


def destination(
    results: Path, machine: str | None, targets: list[Target], settings: Settings, overrides: dict
) -> tuple[str, str] | None:
    """(machine, TensorFlow version) the records will be filed under, checked before anything is
    measured (store.check_writable; a refusal ends here, one line, exit 2), or None, said in one
    line: settings other than the defaults (a flame graph's folder aside), no pair of the catalog
    among the targets, no TensorFlow installed."""
    given = [
        OPTION_NAMES.get(f.name, f.name)
        for f in fields(Settings)
        if f.name != "flamegraph_dir" and getattr(settings, f.name) != getattr(Settings(), f.name)
    ]
    given += ["--param"] if overrides else []
    if given:
        say(
            f"leakbench: records not written: {', '.join(given)} set; records are compared "
            "across TensorFlow versions at the default settings"
        )
        return None
    if not any(t.variant in VARIANT_DIRS for t in targets):
        say("leakbench: records not written: no pair of the catalog measured (a file by path)")
        return None
    version = pin.installed_tf_version()
    if version is None:
        say("leakbench: records not written: no TensorFlow installed to file them under")
        return None
    if machine is None:
        machine, why = store.default_machine(results)
        if why:
            say(f"leakbench: {why}")
    machine = machines.local(machine)  # a user's run never edits the published dataset
    try:
        store.check_writable(results, machine, version)
    except store.VersionError as e:
        fail(str(e))
    return machine, version


def write(results: Path, machine: str, version: str, records: list[Record]) -> None:
    """The pairs' records into their file (store.write_records); a pin that did not hold
    (pin.check_tf_version) ends here, one line, exit 3 (exits.FAILED), the file untouched."""
    try:
        pin.check_tf_version(records, version)
        path = store.write_records(results, machine, version, records)
    except store.VersionError as e:
        failed(f"records not written: {e}")
    say(f"leakbench: {len(records)} records written to {path}")
