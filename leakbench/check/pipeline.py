"""`leakbench check`: measure a user's own pipeline, then say what moved and where.

The measurement is the engine's own (measure -> runner -> child -> record ->
verdict): a check target is adapted to the scenario contract in the child
(leakbench.engine.target), which also gathers extra evidence (leakbench.engine.pytypes,
leakbench.engine.buffers).
This module turns that evidence into data the views render: Python types that
grew, bytes buffered per transformation, the largest live allocation stacks,
and hints at the seed source. Hints are read from the evidence and say so;
they are never a certainty.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from leakbench.analysis.record_type import Record
from leakbench.analysis.schema import first_run
from leakbench.catalog import Target
from leakbench.check import causes
from leakbench.check.diagnosis import attribution, hints
from leakbench.contract import Scenario, read_metadata
from leakbench.engine import target as check_target
from leakbench.measure import measure
from leakbench.settings import Settings


def plan(spec: str) -> tuple[Target, dict, dict]:
    """Target, parameters and child options for a TARGET string. Raises ContractError (one line)."""
    parsed = check_target.parse(spec)
    # a scenario file: measured as `run` measures it, with the extra evidence
    if parsed.name is None:
        assert parsed.path is not None  # no NAME: a scenario file
        scenario = read_metadata(parsed.path)
        return Target(scenario, "check", spec), dict(scenario.params), {"diagnose": True}
    where = parsed.path if parsed.path is not None else Path(str(parsed.module))
    scenario = Scenario(
        path=where,
        title=f"check {parsed.spec}",
        source="unknown",
        repetition=f"one repetition of {parsed.name}",
        kind="growth",
        size_param="",
        params={},
    )
    # Its repetition is told once the child has set it up
    # (a dataset or a function: engine.target.REPETITIONS).
    return Target(scenario, "check", spec), {}, {"diagnose": True, "target": parsed.as_config()}


def check(
    spec: str,
    settings: Settings,
    env: dict | None = None,
    on_message: Callable[[dict], None] | None = None,
) -> Record:
    """Measure TARGET `spec` and return its record, variant "check", with a "diagnosis".

    settings: as for `leakbench run`; pass an explicit cap_bytes and timeout_seconds.
    Raises ContractError for a target that is bad before anything runs.
    """
    target, params, options = plan(spec)
    with ThreadPoolExecutor(max_workers=1) as pool:
        # the committed records (the known causes) are read while the child imports TensorFlow
        # and measures, not after it: about 0.6 s of a check's fixed cost on this machine
        # (results/peers/: wall minus the record's own seconds)
        known = pool.submit(causes.known_or_why)
        rec = measure(
            target, params, settings, env=env, on_message=on_message, child_options=options
        )
        # check's reading of the record, beside it: the record itself is whole
        rec["diagnosis"] = diagnosis(rec, known.result())
    return rec


def diagnosis(rec: Record, known: causes.Known | str | None = None) -> dict:
    """Evidence of the first (default-size) run, summarized: types, attribution, stacks (the largest
    live and the growing ones, leakbench.engine.heap), the reference chain, the nearest known
    causes (leakbench.check.causes: the suite's pairs, by the committed records), hints (the
    nearest known cause first, with its lesson and fix). known: causes.known_or_why's, if read."""
    run = first_run(rec)
    evidence = run.get("diagnostics") or {}
    found = {
        "target_kind": evidence.get("target_kind"),
        "types": run.get("python_type_growth") or [],
        "attribution": attribution(evidence.get("attribution")),
        "top_stacks": (run.get("heap") or {}).get("top_stacks") or [],
        # growth by allocation site
        "stack_growth": (run.get("heap") or {}).get("stack_growth") or [],
        "reference_chain": run.get("reference_chain"),  # what keeps the type that grew most alive
    }
    found["causes"] = named_causes = causes.for_diagnosis(rec, known)
    named = causes.hint(named_causes)
    found["hints"] = ([named] if named else []) + hints(rec, found)
    return found
