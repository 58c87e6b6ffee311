"""The verdict's protocol, top to bottom: from a variant's child runs to its record's verdict.

1. `first`: the first run's reading. Metrics of the first size's run (and the peaks of every
   size), the word and the signals that moved (verdict.decide), the decision with its number.
2. `next_look`: what to measure next, if anything. A leak that rests on byte signals alone
   (looks.needs_confirmation), or a no-leak whose evidence did not settle (looks.unsettled), is
   measured again in a fresh process, longer (looks.confirmation_reps): a confirmation. Where
   that confirmation's later half rose without deciding (its "extend"), once more, longer again
   (looks.extension_reps): an extension. Then nothing.
3. `take`: what a longer look decided (looks.confirm, extension.extended), read from the later half
   of its run (`later_metrics`), as a new record whose verdict, signals and seconds are the
   look's, with the look kept under "confirmation" or "extension".
4. `with_decision`: record["decision"], the number the verdict rests on (decision.decide), from
   the last longer look where one decided, else from the first run.

The engine (leakbench.measure) runs what next_look asks and hands each run to take; nothing
else decides a verdict. A record from a file is judged again by `with_decision` alone
(analysis.schema's migration): its looks are in it.
"""

from __future__ import annotations

from dataclasses import dataclass

from leakbench import metrics as registry
from leakbench.analysis import estimate, record
from leakbench.analysis.judge import decision, extension, looks, verdict
from leakbench.analysis.record_type import Record
from leakbench.metrics import SERIES_UNITS

LOOKS = ("confirmation", "extension")  # a record's longer looks, in the order they were made


@dataclass(frozen=True)
class Look:
    """A longer look to measure: key (one of LOOKS), reps (measured repetitions), candidates
    (the signals it looks for)."""

    key: str
    reps: int
    candidates: list[str]


def first(
    scenario,
    variant: str,
    params: dict,
    settings: dict,
    outcomes: list,
    pair: str | None = None,
    flamegraph: dict | None = None,
) -> Record:
    """The record of one scenario variant from its first runs (Outcomes, default size first),
    with the first run's verdict and its decision. Arguments as record.build's.

    A run that hung in teardown after its result came is measured whole: the verdict is the
    measurement's, and the stall is reported beside it (record teardown_stalled). How long
    freeing live iterators takes is the machine's load, not the pipeline's memory
    (kept_iterators: docs/flaky.md).
    """
    runs = [record.run_entry(o) for o in outcomes]
    found = record.first_metrics(runs, outcomes, scenario, settings["reps"])
    if found:  # which memory series decided, in words
        found["growth_basis"] = verdict.memory_basis(found).words
    word, signals = verdict.decide(record.statuses(runs, outcomes), found)
    rec = record.build(
        scenario,
        variant,
        params,
        settings,
        outcomes,
        runs,
        found,
        (word, signals),
        pair,
        flamegraph,
    )
    return with_decision(rec)


def next_look(rec: Record, reps: int) -> Look | None:
    """The longer look `rec` needs next, or None once its verdict stands. reps: the first run's
    measured repetitions (a look's are a multiple: looks.confirmation_reps, extension_reps)."""
    confirmation = rec.get("confirmation")
    if confirmation:
        if confirmation["extend"] and not rec.get("extension"):
            return Look("extension", looks.extension_reps(reps), confirmation["candidates"])
        return None
    candidates = rec["signals"] if rec["verdict"] == "leak" else []
    if candidates and not looks.needs_confirmation(candidates):
        return None
    if rec["verdict"] == "no-leak":
        found = looks.unsettled(rec["metrics"], rec["signals"])
        candidates = [found] if found else []
    if candidates:
        return Look("confirmation", looks.confirmation_reps(reps), candidates)
    return None


def take(rec: Record, look: Look, outcome) -> Record:
    """A new record: `rec` with what `look`, measured by `outcome` (an Outcome), decided.

    Adds look.key ("confirmation" or "extension"): reps, status, candidates, the signals that
    grew steadily in its later half (verdict.steady_signals), why (one sentence), extend (the
    later half rose without deciding: measure longer), the run (as in rec["runs"]) and its wall
    seconds, which also count in "seconds"; an extension also keeps the envelope it read
    (`envelope_of`).
    """
    run = record.run_entry(outcome)
    later = later_metrics(run) if outcome.result else None
    kept: dict = {}
    if look.key == "confirmation":
        decided = looks.confirm(look.candidates, outcome.status, later, rec["metrics"], look.reps)
    else:
        envelope = envelope_of(run, later) if later is not None else None
        decided = extension.extended(
            look.candidates, outcome.status, later, envelope, rec["metrics"], look.reps
        )
        kept = {"envelope": envelope}
    entry = {
        "reps": look.reps,
        "status": outcome.status,
        "signals": decided.again,
        "candidates": look.candidates,
        "why": decided.why,
        "extend": decided.extend,
        "run": run,
        "seconds": outcome.wall_seconds,
        **kept,
    }
    return with_decision(
        {
            **rec,
            "verdict": decided.verdict,
            "signals": decided.signals if decided.verdict == "leak" else [],
            "seconds": rec["seconds"] + outcome.wall_seconds,
            look.key: entry,
        }
    )


def later_metrics(run: dict) -> dict:
    """Metrics of a longer look's run (record.run_entry) over the later half of its series
    (looks.later_half), the part its decision reads (looks.confirm, extension.extended). One run:
    whatever the scenario's kind, it reads the same."""
    series = {name: looks.later_half(values) for name, values in run["series"].items()}
    half = len(series["rss_bytes"])
    return record.metrics([{**run, "series": series}], None, half)


def envelope_of(run: dict, later: dict) -> dict:
    """What an extension reads of its run's later half (extension.extended): series (the name read,
    looks.envelope_metric's), rises (bytes, of that series' lower envelope per window:
    estimate.envelope_rises), window (repetitions), basis_rises (the same of the memory basis's
    series: held memory's). later: the run's later-half metrics (later_metrics)."""
    basis = verdict.memory_basis(later).metric
    name = looks.envelope_metric(basis).series
    assert name is not None and basis.series is not None  # trends of sample series
    half = looks.later_half(run["series"][name])
    return {
        "series": name,
        "rises": estimate.envelope_rises(half, looks.EXTEND_WINDOWS),
        "window": (len(half) - estimate.NET_EDGE) // looks.EXTEND_WINDOWS,
        "basis_rises": estimate.envelope_rises(
            looks.later_half(run["series"][basis.series]), looks.EXTEND_WINDOWS
        ),
    }


def longer_looks(rec) -> list[tuple[str, dict]]:
    """The longer looks a record holds, [(key of LOOKS, look)], each with its "why" (older
    records lack it: then the signals that grew steadily, in words)."""
    found = []
    for key in LOOKS:
        look = rec.get(key)
        if look:
            why = look.get("why") or (
                f"grew steadily in its later half: {', '.join(look['signals']) or 'nothing'}"
            )
            found.append((key, {**look, "why": why}))
    return found


def with_decision(rec) -> Record:
    """The record with "decision" (decision.decide): the number its verdict rests on, from the
    last longer look where one decided (the metrics of that look's later half, as it read them),
    else from the first run. Built here, once; every view reads it."""
    found = longer_looks(rec)
    later, look = None, None
    if found:
        key, look = found[-1]
        look = {**look, "key": key}
        run = look.get("run") or {}
        series = _summed(run.get("series") or {})
        if (
            look.get("status") == "ok"
            and series.get("rss_bytes")
            and set(SERIES_UNITS) <= set(series)
        ):
            later = later_metrics({**run, "series": series})
    return {**rec, "decision": decision.decide(rec, later, look)}


_SINCE = ("pymalloc_used_bytes",)  # sampled since schema 3's records: older runs lack it


def _summed(series: dict) -> dict:
    """A run's series with what older looks lack: the sums (Series.sum_of: malloc in use,
    allocated bytes), and None for a series sampled only since (pymalloc in use)."""
    found = dict(series)
    length = len(found.get("rss_bytes") or [])
    for name in _SINCE:
        found.setdefault(name, [None] * length)
    for s in registry.SERIES:
        if s.name not in found and s.sum_of and all(p in found for p in s.sum_of):
            parts = zip(*(found[p] for p in s.sum_of))
            found[s.name] = [None if None in vs else sum(vs) for vs in parts]
    return found
