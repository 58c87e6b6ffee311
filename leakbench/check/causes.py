"""Naming the known cause: which of the suite's measured causes a record's evidence is nearest to.

    from leakbench.check.causes import name_causes
    for cause in name_causes(record):          # the committed records are read by default
        print(cause.pair, cause.score, cause.lesson, cause.diff)

`name_causes(record_or_evidence, known_records=None) -> list[Cause]`, best first; an empty list
means that nothing grew (the verdict is no leak) or that none of the known causes matches well
enough (`none_matches` says which, in words).

The matching reads the committed records (results/records/<machine>/tf-<version>.jsonl): every
leaky pair's record whose verdict moved (leak, over-cap, fragmentation) is one example of its
cause. Each record becomes a feature vector in five groups of evidence (GROUPS: signal, type,
chain, stage, site; leakbench.check.cause_features says what each holds).

A feature's weight is its inverse document frequency over the known records, log(N / df), so
what every leaky record shows (the engine's own ReferenceType churn, `held`) weighs little and
what few show (a `traceback` type, a MemoryCache stage) weighs much. The similarity of a record to
a known one is the mean, over the groups the record has evidence in, of the cosine of the two
groups' weighted vectors (a group the known record lacks counts 0; one the record lacks, evidence
not read, is left out). A known cause's score is its best record's
similarity; causes at or above MATCH_MIN are named, best first, at most CAUSES_SHOWN.

A cause is named only where the evidence shared with its best record holds at least one feature
beyond the signals (`tells`: a type, a link of the chain, a stage or an allocation site). The
signals say what grew (held memory, Python objects, the peak), not why: every cause of the suite
grows one of a handful of them, and so does a leak with no TensorFlow in it at all. A cosine over
one shared feature is 1.00 by construction, so a pure-Python target leaking a dict of ints
(signal `held`, nothing else) read as py_function_map at similarity 1.00, whose records on old
releases hold `held` alone. Two shared features would not do: `held` and `heap` together are still
what any leak of Python memory shows. Evidence that the target uses TensorFlow is what the other
groups hold (TensorFlow's types and private attributes, tf.data stages, TensorFlow's allocation
sites); the record holds nothing else that says so. A record whose evidence is the signals alone
(a loop watcher's, a peak pair's before TensorFlow 2.17) names no cause: `none_matches` says
it is the signals alone.

How well it names: `leakbench causes --leave-one-out` (results/causes-leave-one-out.md).
"""

from __future__ import annotations

import difflib
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from leakbench import catalog
from leakbench.check.cause_features import GROUPS, TELLING, Features, features, moved
from leakbench.history import store

# The least similarity for a cause to be named. Set from the leave-one-out over the committed
# records (results/causes-leave-one-out.md): a held-out leaky record's own cause, measured on other
# releases, scores at or above it in all but a few records, and the best other cause of a pair held
# out entirely (a cause the suite would not know) scores below it in most. Below it the answer is
# "none of the known causes matches".
MATCH_MIN = 0.6
CAUSES_SHOWN = 3  # at most this many causes named, best first


@dataclass(frozen=True)
class Cause:
    """A known cause named for a record: the pair, the similarity (0 to 1) of its nearest record,
    the evidence they share, the lesson and the fix.

    lesson: the lesson's page in a built site (`leakbench site`: site/lessons/<pair>.html);
    scenario, fix: the two files (scenarios/<pair>.py, fixes/<pair>.py), relative to the checkout;
    diff: `diff scenarios/<pair>.py fixes/<pair>.py` as a unified diff ("" where a file is missing).
    """

    pair: str
    score: float
    title: str
    shared: tuple[str, ...]
    lesson: str
    scenario: str
    fix: str
    diff: str = field(repr=False)


@dataclass(frozen=True)
class Known:
    """The known causes: one feature set per leaky record whose verdict moved, with its pair and
    where it was measured (machine, TensorFlow version), and the weight of every feature."""

    examples: tuple[tuple[str, str, Features], ...]  # (pair, machine:version, features)
    weights: Mapping[str, float]
    titles: Mapping[str, str]
    pairs: tuple[str, ...]  # every pair of the suite (the count "none of the N" names)


def known_from(records: Iterable[tuple[str, Mapping[str, Any]]], pairs: Iterable[str]) -> Known:
    """Known causes from (where, record) pairs: leaky records whose verdict moved, of any pair.
    where: a label of the record's machine and TensorFlow version (shown in the leave-one-out)."""
    examples: list[tuple[str, str, Features]] = []
    titles: dict[str, str] = {}
    for where, rec in records:
        if rec.get("variant") != "leaky" or not moved(rec):
            continue
        examples.append((rec["pair"], where, features(rec)))
        titles.setdefault(rec["pair"], rec.get("title") or "")
    df: Counter = Counter()
    for _, _, found in examples:
        df.update((g, f) for g in GROUPS for f in found[g])
    n = len(examples)
    weights = {f"{g}:{f}": math.log(n / count) for (g, f), count in df.items()}
    return Known(tuple(examples), weights, titles, tuple(sorted(pairs)))


def committed(results: Path | None = None) -> list[tuple[str, dict]]:
    """Every committed record of every machine in results/ (default: the checkout's), as
    ("machine tf-version", record)."""
    results = results or catalog.find_root() / "results"
    out: list[tuple[str, dict]] = []
    for machine in store.machines(results, with_local=False):
        for version, path in store.available(results, machine).items():
            out.extend((f"{machine} {version}", dict(r)) for r in store.read_records(path))
    return out


def similarity(a: Features, b: Features, weights: Mapping[str, float]) -> float:
    """The mean, over the groups `a` (the record named) has evidence in, of the cosine of the two
    records' weighted vectors in that group: evidence `a` lacks (not read: a watcher without a
    heap pass, a TensorFlow without get_model_proto) is not held against a known record."""
    total, groups = 0.0, 0
    for g in GROUPS:
        if not a[g]:
            continue
        groups += 1
        # in sorted order: a sum over a set's order would differ in its last bits from one
        # process to the next (PYTHONHASHSEED), and ties must break the same way every time
        wa = {f: weights.get(f"{g}:{f}", 0.0) for f in sorted(a[g])}
        wb = {f: weights.get(f"{g}:{f}", 0.0) for f in sorted(b[g])}
        norm = math.sqrt(sum(w * w for w in wa.values()) * sum(w * w for w in wb.values()))
        if norm > 0:
            total += sum(wa[f] * wb[f] for f in sorted(wa.keys() & wb.keys())) / norm
    return round(total / groups, 9) if groups else 0.0


def scores(found: Features, known: Known, skip: Iterable[str] = ()) -> dict[str, tuple]:
    """pair -> (its best record's similarity, the features shared with that record), over the known
    examples; `skip`: labels "pair@where" of examples left out (the leave-one-out's)."""
    skipped = set(skip)
    best: dict[str, tuple] = defaultdict(lambda: (0.0, ()))
    for pair, where, example in known.examples:
        if f"{pair}@{where}" in skipped or pair in skipped:
            continue
        score = similarity(found, example, known.weights)
        if score > best[pair][0]:
            shared = tuple(
                sorted(
                    f"{g}:{f}"
                    for g in GROUPS
                    for f in found[g] & example[g]
                    if known.weights.get(f"{g}:{f}", 0.0) > 0
                )
            )
            best[pair] = (score, shared)
    return dict(best)


def tells(shared: Iterable[str]) -> bool:
    """Whether the evidence shared with a known cause ("group:feature", as `scores` gives it) can
    tell causes apart: at least one feature of a TELLING group, beyond the signals (module
    docstring: the signals say what grew, not why)."""
    return any(f.split(":", 1)[0] in TELLING for f in shared)


def named(ranked: list[tuple[str, tuple]]) -> list[tuple[str, tuple]]:
    """The causes `name_causes` names from a ranking (best first, as `scores` gives them): none
    where more than CAUSES_SHOWN tie at the best score; else those at or above MATCH_MIN whose
    shared evidence `tells`, at most CAUSES_SHOWN."""
    if len(tied(ranked)) > CAUSES_SHOWN:
        return []
    telling = [(pair, found) for pair, found in ranked if tells(found[1])]
    return [(pair, found) for pair, found in telling[:CAUSES_SHOWN] if found[0] >= MATCH_MIN]


def signals_alone(ranked: list[tuple[str, tuple]]) -> list[str]:
    """The signals shared with the causes at or above MATCH_MIN, where `named` names none of
    them and no tie is why: what they share is the signals alone. Else an empty list."""
    if named(ranked) or len(tied(ranked)) > CAUSES_SHOWN:
        return []
    near = [shared for _, (score, shared) in ranked if score >= MATCH_MIN]
    return sorted({f.split(":", 1)[1] for shared in near for f in shared})


def name_causes(
    record_or_evidence: Mapping[str, Any],
    known_records: Iterable[Mapping[str, Any]] | Known | None = None,
) -> list[Cause]:
    """The known causes nearest to a record (a `check` or `run` record, or evidence: see
    `features`), best first, at most CAUSES_SHOWN, each scoring at least MATCH_MIN.

    known_records: the records that hold the known causes (any records: only leaky ones whose
    verdict moved are read), or a `Known`; default: every committed record of the checkout.
    An empty list: nothing grew, none matches, the evidence fits more than CAUSES_SHOWN causes
    alike (too little of it to tell them apart), or what it shares with the causes that match is
    the signals alone (`tells`); `none_matches` words which.
    """
    if not moved(record_or_evidence):
        return []
    known = _known(known_records)
    return [
        cause(pair, score, shared, known.titles.get(pair, ""))
        for pair, (score, shared) in named(_ranked(record_or_evidence, known))
    ]


def _ranked(record_or_evidence: Mapping[str, Any], known: Known) -> list[tuple[str, tuple]]:
    found = scores(features(record_or_evidence), known)
    return sorted(found.items(), key=lambda kv: (-kv[1][0], kv[0]))


def tied(ranked: list[tuple[str, tuple]]) -> list[str]:
    """The causes that share the best score, where it reaches MATCH_MIN."""
    if not ranked or ranked[0][1][0] < MATCH_MIN:
        return []
    return [pair for pair, (score, _) in ranked if score == ranked[0][1][0]]


def _known(known_records) -> Known:
    if isinstance(known_records, Known):
        return known_records
    root = catalog.find_root()
    if known_records is None:
        return known_from(committed(root / "results"), catalog.pair_names(root))
    return known_from(((r.get("pair", ""), r) for r in known_records), catalog.pair_names(root))


def none_matches(record_or_evidence: Mapping[str, Any], known: Known | None = None) -> str:
    """The sentence for an empty `name_causes`: nothing grew, the evidence fits too many causes
    alike, it shares the signals alone with the causes that match, or none of the N known causes
    matches."""
    if not moved(record_or_evidence):
        return "nothing grew: no cause to name"
    known = _known(known)
    ranked = _ranked(record_or_evidence, known)
    alike = tied(ranked)
    if len(alike) > CAUSES_SHOWN:
        return (
            f"the evidence fits {len(alike)} known causes alike ({', '.join(alike)}): "
            "too little of it to name one"
        )
    signals = signals_alone(ranked)
    if signals:
        return (
            "the evidence shared with the known causes is the signals alone "
            f"({', '.join(signals)}): they say what grew, not why, so no cause is named"
        )
    return f"none of the {len(known.pairs)} known causes matches (similarity below {MATCH_MIN:g})"


def cause(pair: str, score: float, shared: tuple, title: str) -> Cause:
    """A Cause for `pair`, with its lesson's page and the fix's diff read from the checkout."""
    scenario = f"{catalog.VARIANT_DIRS['leaky']}/{pair}.py"
    fix = f"{catalog.VARIANT_DIRS['fixed']}/{pair}.py"
    return Cause(
        pair=pair,
        score=round(score, 3),
        title=title,
        shared=shared,
        lesson=f"site/lessons/{pair}.html",
        scenario=scenario,
        fix=fix,
        diff=fix_diff(pair),
    )


def fix_diff(pair: str, root: Path | None = None) -> str:
    """`diff -u scenarios/<pair>.py fixes/<pair>.py` (difflib), "" where either is missing."""
    try:
        root = root or catalog.find_root()
        leaky = (root / catalog.VARIANT_DIRS["leaky"] / f"{pair}.py").read_text().splitlines()
        fixed = (root / catalog.VARIANT_DIRS["fixed"] / f"{pair}.py").read_text().splitlines()
    except (OSError, catalog.ContractError):
        return ""
    return "\n".join(
        difflib.unified_diff(
            leaky, fixed, f"scenarios/{pair}.py", f"fixes/{pair}.py", lineterm="", n=1
        )
    )


def known_or_why() -> Known | str:
    """The known causes (every `committed` record's), or one line: why they cannot be read."""
    try:
        return _known(None)
    except (catalog.ContractError, store.VersionError, OSError) as e:
        return f"the known causes cannot be read: {e}"


def for_diagnosis(rec: Mapping[str, Any], known: Known | str | None = None) -> dict:
    """check's reading of the known causes (rec["diagnosis"]["causes"]): {"named": [Cause as a
    dict, ...], "none": the sentence where none is named}, or {"na": why} (known_or_why's)."""
    known = known_or_why() if known is None else known
    if isinstance(known, str):
        return {"na": known}
    named = name_causes(rec, known)
    return {
        "named": [asdict(c) for c in named],
        "none": None if named else none_matches(rec, known),
    }


def hint(found: Mapping[str, Any]) -> str | None:
    """One line naming the nearest known cause (for check's hints), from for_diagnosis's dict."""
    named = found.get("named") or []
    if not named:
        return None
    best = named[0]
    also = ", ".join(c["pair"] for c in named[1:])
    return (
        f"nearest known cause: {best['pair']} ({best['title']}; similarity {best['score']:.2f}"
        + (f"; also near: {also}" if also else "")
        + f"): lesson {best['lesson']} (after `leakbench site`), "
        f"fix: diff {best['scenario']} {best['fix']}."
    )
