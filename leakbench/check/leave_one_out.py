"""How well `name_causes` names a cause, measured on the committed records alone (no TensorFlow):
`leakbench causes --leave-one-out` (results/causes-leave-one-out.md).

What a user needs is the cause named from one record of their own, measured on the TensorFlow
they have, by the records of every other pipeline and of the same cause on other releases. So:

- held out: each CPU leaky pair's record on the newest release (not a nightly) where it leaks
  on the reference machine (default: the published dataset's, store.published_machine; the
  pin, 2.21.0, for the pairs that still leak; an older release
  for the report pairs whose leak ended). It is matched against every other committed record:
  the other pairs on every release and machine, and the same pair on the other releases. It is
  named right when its own pair is named first, strictly ahead of every other cause, at or above
  MATCH_MIN, on shared evidence beyond the signals (causes.tells: as name_causes names). The
  headline counts pairs named right this way.
- every release: the same for each of the pair's leaking records on every release and machine
  (n/m per pair): how much the naming depends on the release the evidence comes from.
- unknown: the pair held out entirely (none of its records known), as a cause the suite does not
  hold would be: what is named then, if anything (no pass or fail: a related cause or none).
- fixes: every CPU fix record on every release, matched as a user's record: it must name no cause
  (its verdict says nothing grew, or none matches).

GPU pairs are left out: their records here read `skipped` (no GPU on the machines measured).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from leakbench import catalog
from leakbench.check import cause_features
from leakbench.check import causes as naming
from leakbench.contract import read_metadata
from leakbench.history import builds, store


@dataclass(frozen=True)
class Named:
    """One held-out record's answer: its label (machine and version), the causes named (pair,
    score) best first, and whether its own pair was named first, strictly ahead."""

    where: str
    named: tuple[tuple[str, float], ...]
    right: bool
    own: float  # its own pair's score (0 where the pair was held out entirely)
    tied: int = 0  # how many causes tie at the best score, where too many to name (else 0)
    signals: tuple[str, ...] = ()  # the signals alone, shared with the causes that match (else ())


@dataclass(frozen=True)
class PairResult:
    pair: str
    title: str
    held_out: Named  # the newest release's record
    every: tuple[Named, ...]  # every leaking record
    unknown: Named  # the newest release's record, the pair held out entirely


@dataclass(frozen=True)
class Fix:
    """A fix record matched as a user's record: named is whether any cause was named."""

    pair: str
    where: str
    verdict: str
    named: bool
    answer: str  # the causes named, or none_matches' sentence


@dataclass(frozen=True)
class Evaluation:
    machine: str  # the reference machine
    pairs: tuple[PairResult, ...]
    fixes: tuple[Fix, ...]  # every CPU fix record
    known_pairs: int
    records: int  # leaky records that moved: the known examples

    @property
    def right(self) -> int:
        """Pairs whose held-out record was named right."""
        return sum(p.held_out.right for p in self.pairs)

    @property
    def fixes_named(self) -> list[Fix]:
        """Fix records for which a cause was named (there should be none)."""
        return [f for f in self.fixes if f.named]


def _named(rec: Mapping[str, Any], pair: str, where: str, known: naming.Known, skip: str) -> Named:
    found = cause_features.features(rec)
    ranked = sorted(
        naming.scores(found, known, skip=[skip]).items(), key=lambda kv: (-kv[1][0], kv[0])
    )
    # as name_causes answers: none where more causes than it shows tie at the best score, and a
    # cause only where what it shares goes beyond the signals (naming.tells)
    tied = len(naming.tied(ranked))
    shown = [] if tied > naming.CAUSES_SHOWN else [kv for kv in ranked if naming.tells(kv[1][1])]
    named = tuple((p, round(s, 2)) for p, (s, _) in shown[: naming.CAUSES_SHOWN])
    own = next((s for p, s in named if p == pair), 0.0)
    right = (
        bool(named)
        and named[0][0] == pair
        and named[0][1] >= naming.MATCH_MIN
        and (len(named) == 1 or named[1][1] < named[0][1])
    )
    kept = tuple((p, s) for p, s in named if s >= naming.MATCH_MIN)
    signals = tuple(naming.signals_alone(ranked))
    return Named(where, kept, right, own, tied if tied > naming.CAUSES_SHOWN else 0, signals)


def evaluate(results: Path, machine: str | None = None) -> Evaluation:
    """The leave-one-out over the committed records in `results` (module docstring), each pair's
    record held out on `machine` (default: the published dataset's, store.published_machine,
    which raises store.VersionError where none can be chosen)."""
    machine = machine or store.published_machine(results)
    root = catalog.find_root(results.resolve().parent)
    pairs = catalog.pair_names(root)
    gpu = {p for p in pairs if read_metadata(root / "scenarios" / f"{p}.py").requires == "GPU"}
    recs = naming.committed(results)
    known = naming.known_from(recs, pairs)
    order = {w: i for i, w in enumerate(_ordered(results))}
    out = []
    for pair in pairs:
        if pair in gpu:
            continue
        leaking = [
            (w, r)
            for w, r in recs
            if r["pair"] == pair and r["variant"] == "leaky" and cause_features.moved(r)
        ]
        if not leaking:
            continue
        every = tuple(_named(r, pair, w, known, f"{pair}@{w}") for w, r in leaking)
        reference = [
            (w, r)
            for w, r in leaking
            if w.split(" ")[0] == machine and not builds.is_nightly(w.split(" ")[1])
        ] or leaking
        where, newest = max(reference, key=lambda wr: order.get(wr[0], -1))
        held = next(n for n in every if n.where == where)
        unknown = _named(newest, pair, where, known, pair)
        out.append(PairResult(pair, known.titles.get(pair, ""), held, every, unknown))
    fixes = []
    for where, rec in recs:
        if rec["variant"] != "fixed" or rec["pair"] in gpu:
            continue
        named = naming.name_causes(rec, known)
        answer = ", ".join(c.pair for c in named) or naming.none_matches(rec, known)
        fixes.append(Fix(rec["pair"], where, rec["verdict"], bool(named), answer))
    return Evaluation(machine, tuple(out), tuple(fixes), len(pairs), len(known.examples))


def _ordered(results: Path) -> list[str]:
    """Labels "machine version" by machine, then by TensorFlow build order."""
    out: list[str] = []
    for machine in store.machines(results, with_local=False):
        out.extend(f"{machine} {v}" for v in store.available(results, machine))
    return out
