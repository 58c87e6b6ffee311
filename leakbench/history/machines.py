"""Machines and their names: which machine a record was measured on (CPU model, logical cores),
the name the running one files under (asv's), a user's own runs apart from the published ones
(LOCAL), and the published dataset's manifest (reference). leakbench.history.store reads
and writes the records under these names."""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from leakbench import jsonfile

# A user's own runs (leakbench run, make run, gate --measure) go to <machine>.local/, which git
# ignores: only `leakbench publish` writes a published folder; a run never edits a committed file.
LOCAL = ".local"
# The published dataset's manifest: its machine, engine, builds and wall time (leakbench.publish).
REFERENCE_FILE = "reference.json"


def asv_machine(results: Path) -> str:
    """The asv machine name the running asv suite files its results under.

    asv does not tell a benchmark its machine, so, in order: $ASV_MACHINE (set
    it with `asv run --machine NAME`; the GitHub workflow does); else the
    machine whose results/<machine>/machine.json was written last (`asv run`
    rewrites it as it starts, before any benchmark runs); else asv's default
    name, the host name (platform.uname().node).
    """
    if os.environ.get("ASV_MACHINE"):
        return os.environ["ASV_MACHINE"]
    written = sorted(Path(results).glob("*/machine.json"), key=lambda p: p.stat().st_mtime)
    return written[-1].parent.name if written else platform.uname().node


def this_machine() -> tuple[str, int | None]:
    """The running machine as records name it: (CPU model, logical cores), read where
    leakbench.analysis.record.environment reads them for every record."""
    # imported here: the analysis (scipy) is slow to import, and reading records never needs it
    from leakbench.analysis import record

    env = record.environment(None)
    return env["cpu"], env["cores"]


def machine_of(rec: Mapping[str, Any]) -> tuple[str, int | None] | None:
    """A record's machine: (environment.cpu, environment.cores); None where it names no CPU model
    (or, in a line not yet checked by the schema, names one that is not a string)."""
    env = rec.get("environment")
    if not isinstance(env, dict):
        return None
    cpu, cores = env.get("cpu"), env.get("cores")
    if not isinstance(cpu, str) or not cpu:
        return None
    return cpu, cores if isinstance(cores, int) and not isinstance(cores, bool) else None


def describe(machine: tuple) -> str:
    """'AMD EPYC, 2 cores': a machine (machine_of) in a message."""
    cpu, cores = machine
    return f"{cpu}, {cores if cores is not None else 'unknown'} cores"


def machine_slug(machine: tuple) -> str:
    """'intel-xeon-processor-2c' for ('Intel(R) Xeon(R) Processor', 2): the CPU model in lower
    case without (r) and (tm), every run of other characters than a-z and 0-9 a '-', then the
    cores."""
    cpu, cores = machine
    text = re.sub(r"\((r|tm)\)", "", str(cpu).lower())
    text = re.sub(r"[^a-z0-9]+", "-", text).strip("-") or "cpu"
    return f"{text}-{cores}c" if cores is not None else text


def name_beside(name: str, machine: tuple) -> str:
    """'vm-intel-xeon-processor-2c' for a folder `vm` and another machine; a user's folder keeps
    its LOCAL suffix last: 'box-intel-xeon-processor-2c.local'."""
    base = name.removesuffix(LOCAL)
    return f"{base}-{machine_slug(machine)}" + (LOCAL if is_local(name) else "")


def name_here(results: Path) -> str:
    """'vm-amd-epyc-2c': asv's machine name (asv_machine) and this machine's CPU (name_beside), as
    the measurement scripts name their files under results/."""
    return name_beside(asv_machine(results), this_machine())


def is_local(machine: str) -> bool:
    """Whether a machine folder holds a user's own runs (LOCAL), not published records."""
    return machine.endswith(LOCAL)


def local(machine: str) -> str:
    """The folder a user's runs under `machine` go to: 'vm' -> 'vm.local' (kept as it is)."""
    return machine if is_local(machine) else machine + LOCAL


def label(machine: str) -> str:
    """'vm' for a published machine, 'vm.local (this machine's own runs, not published)'."""
    return f"{machine} (this machine's own runs, not published)" if is_local(machine) else machine


def reference(results: Path) -> dict | None:
    """The published dataset's manifest (results/reference.json: machine, cpu, cores, engine,
    builds, wall_seconds), or None where there is none or it cannot be read."""
    try:
        found = jsonfile.parse(jsonfile.read_text(Path(results) / REFERENCE_FILE))
    except (jsonfile.Unreadable, jsonfile.BadJSON):
        return None
    return found if isinstance(found, dict) and isinstance(found.get("machine"), str) else None
