"""The judge (leakbench.analysis.judge.protocol) recomputes every committed record's verdict.

Each published record keeps what its runs measured: the first runs' metrics and every longer
look's run. Replaying the protocol on them (the first reading, which look to measure next and
how long, what each look decided, the decision with its number) must give back the record's
verdict, signals, looks and decision exactly: the judge's rules and the published dataset are
one. Committed records only (results/records/<machine>/, never a user's *.local runs), read as
written, without the store's migration. No subprocess, no TensorFlow.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leakbench.analysis.judge import extension, looks, protocol, verdict

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = sorted(
    p
    for p in (ROOT / "results" / "records").glob("*/*.jsonl")
    if not p.parent.name.endswith(".local")
)


def _records() -> list[dict]:
    found = []
    for path in COMMITTED:
        for line in path.read_text().splitlines():
            if line.strip():
                found.append(json.loads(line))
    return found


RECORDS = _records()
IDS = [f"{r['environment']['tensorflow']}-{r['pair']}-{r['variant']}" for r in RECORDS]


def _statuses(rec: dict) -> list[str]:
    """The runs' statuses as the first reading read them: a run that stalled in teardown after
    its measurement was in reads ok (record.statuses)."""
    return [
        "ok"
        if rec["teardown_stalled"] and r["status"] == "hang" and r["phase"] == "teardown"
        else r["status"]
        for r in rec["runs"]
    ]


def _replay(rec: dict) -> dict:
    """The record the protocol makes of `rec`'s own measurements."""
    metrics = rec["metrics"]
    word, signals = verdict.decide(_statuses(rec), metrics)
    first = {k: v for k, v in rec.items() if k not in protocol.LOOKS and k != "decision"}
    first = protocol.with_decision({**first, "verdict": word, "signals": signals})
    first["seconds"] = rec["seconds"] - sum(
        look["seconds"] for _, look in protocol.longer_looks(rec)
    )
    replayed = first
    while (look := protocol.next_look(replayed, rec["settings"]["reps"])) is not None:
        kept = rec.get(look.key)
        assert kept, f"the judge asks for a {look.key} the record did not measure"
        assert (look.reps, look.candidates) == (kept["reps"], kept["candidates"])
        run = kept["run"]
        later = protocol.later_metrics(run) if kept["status"] == "ok" else None
        if look.key == "confirmation":
            decided = looks.confirm(look.candidates, kept["status"], later, metrics, look.reps)
        else:
            envelope = protocol.envelope_of(run, later) if later is not None else None
            assert envelope == kept["envelope"]
            decided = extension.extended(
                look.candidates, kept["status"], later, envelope, metrics, look.reps
            )
        assert (decided.again, decided.why, decided.extend) == (
            kept["signals"],
            kept["why"],
            kept["extend"],
        )
        replayed = protocol.with_decision(
            {
                **replayed,
                "verdict": decided.verdict,
                "signals": decided.signals if decided.verdict == "leak" else [],
                look.key: kept,
            }
        )
    return replayed


def test_there_are_committed_records_to_judge():
    assert len(RECORDS) >= 400 and any(r.get("extension") for r in RECORDS)


@pytest.mark.parametrize("rec", RECORDS, ids=IDS)
def test_the_judge_gives_back_every_committed_verdict_and_decision(rec):
    if rec["verdict"] == "skipped" or not rec["metrics"]:
        assert protocol.with_decision(rec)["decision"] == rec["decision"]
        return
    replayed = _replay(rec)
    assert (replayed["verdict"], replayed["signals"]) == (rec["verdict"], rec["signals"])
    assert [k for k in protocol.LOOKS if replayed.get(k)] == [
        k for k in protocol.LOOKS if rec.get(k)
    ]
    assert replayed["decision"] == rec["decision"]


def test_the_judge_asks_for_each_look_once_and_in_order():
    """next_look: a leak on bytes alone is confirmed, a count leak is not; a confirmation that
    rose without deciding is extended; after an extension, nothing."""
    metrics: dict = {}
    count = {"verdict": "leak", "signals": ["python objects"], "metrics": metrics}
    assert protocol.next_look(count, 12) is None
    held = {"verdict": "leak", "signals": ["held"], "metrics": metrics}
    assert protocol.next_look(held, 12) == protocol.Look("confirmation", 36, ["held"])
    rose = {**held, "confirmation": {"extend": True, "candidates": ["held"]}}
    assert protocol.next_look(rose, 12) == protocol.Look("extension", 72, ["held"])
    assert protocol.next_look({**rose, "extension": {"extend": False}}, 12) is None
    settled = {**held, "confirmation": {"extend": False, "candidates": ["held"]}}
    assert protocol.next_look(settled, 12) is None
