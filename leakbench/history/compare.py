"""`leakbench compare OLD NEW` and `leakbench gate`: two TensorFlow builds' records, side by side,
and what changed, classified once for both commands (the gate measures what is missing first:
leakbench.history.gate).

Per pair, variant and metric (leakbench.metrics entries with a compare_floor): old, new, ratio,
and a marker past a factor (the rows). Per pair and variant, one entry in OUTCOMES:

    regression      exit 1. A variant that should not leak (a fix, or a scenario declaring
                    fragmentation: leakbench.expectation) now reads leak or over-cap; a new hang,
                    error or over-cap (the baseline measured, the candidate not); a peak pair's
                    fix whose peak above baseline grew past the factor and its floor.
    fixed upstream  a variant expected to leak read leak and now reads no-leak: TensorFlow
                    fixed it. Exit 0, and said.
    change          anything else that changed: a verdict (a fix reading fragmentation, a run
                    that failed before and measures now, a leak that is back on a scenario whose
                    leak depends on the release), or a number past the factor (seconds,
                    malloc_trim, a leak that stays a leak at another rate). It does not count.
    unchanged       the same verdict, no number past the factor.
    skipped         `skipped` on either side (a GPU or a library this machine lacks): nothing to
                    set side by side; it never counts.
    not measured    no record on one side (`leakbench gate --measure` measures it).

Both sides must be one machine's records (machines.machine_of: CPU model and cores; a side whose
records name no CPU model is not checked): a hardware difference would read as a TensorFlow change.
Two machines are refused (VersionError) unless the caller says it means a comparison across
hardware (across_machines); the Comparison then names both (machines) and the summary says so first.

Each entry shows each side's verdict with the number it rests on
(leakbench.analysis.judge.in_words.words); nothing here re-derives a verdict. Rendering is
leakbench.reporters.gate's and leakbench.reporters.history's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from leakbench import expectation, metrics
from leakbench.analysis.judge import decision, in_words
from leakbench.analysis.record_type import Record
from leakbench.history import machines
from leakbench.history.sides import engines_of, machines_of
from leakbench.history.store import VersionError
from leakbench.metric_type import Metric
from leakbench.units import MIB, format_bytes

DEFAULT_FACTOR = 1.5
REGRESSED, IMPROVED, CHANGED = "regressed", "improved", "changed"
COMPARED = tuple(m for m in metrics.METRICS if m.compare_floor is not None)

REGRESSION, FIXED_UPSTREAM, CHANGE = "regression", "fixed upstream", "change"
UNCHANGED, SKIPPED, NOT_MEASURED = "unchanged", "skipped", "not measured"
OUTCOMES = (REGRESSION, FIXED_UPSTREAM, CHANGE, UNCHANGED, SKIPPED, NOT_MEASURED)
FAILED = ("hang", "error", "over-cap")  # a run that ended without a verdict on memory
LEAKING = ("leak", "over-cap")  # what a variant that should not leak must not read


def order(key: tuple) -> tuple:
    """(pair, variant) keys by pair, the leaky variant before its fix."""
    pair, variant = key
    return pair, variant != "leaky", variant


def mark(old: float | None, new: float | None, factor: float, floor: float) -> str:
    """REGRESSED when new is past old × factor and higher by at least `floor`;
    IMPROVED the other way round; '' otherwise (or when a value is missing)."""
    if old is None or new is None:
        return ""
    if new - old >= floor and (old <= 0 or new >= old * factor):
        return REGRESSED
    if old - new >= floor and (new <= 0 or old >= new * factor):
        return IMPROVED
    return ""


@dataclass
class Comparison:
    old: str
    new: str
    factor: float
    # dicts: pair, variant, metric (label, or "verdict"), key (leakbench.metrics), unit,
    # old, new, ratio, marker
    rows: list
    failures: list  # one line per regression: why the comparison exits 1
    machine: str | None = None  # asv machine of both record files (None: files given by path)
    # dicts, one per pair and variant: pair, variant, outcome (OUTCOMES), old, new (the verdict
    # with its deciding number, in_words.words; None: no record), old_verdict, new_verdict,
    # why (a sentence, or None), moved (the rows of metrics past the factor: key, metric,
    # marker, old, new, ratio)
    entries: list = field(default_factory=list)
    # the builds compared, where they are versions of the records (the gate's hint to measure)
    old_version: str | None = None
    new_version: str | None = None
    # [old's, new's] machines (machines.describe) where they differ, compared on purpose
    # (across_machines); None: one machine, or a side that names none
    machines: list | None = None
    # the engines that made the records (leakbench.version.describe): one entry where both sides
    # share one, [old's, new's] where they differ (then a change may be the engine's)
    engines: list = field(default_factory=list)
    # the machine both sides were measured on (machines.describe), where it is one
    hardware: str | None = None

    @property
    def exit_code(self) -> int:
        """1 on a regression, else 0."""
        return 1 if any(e["outcome"] == REGRESSION for e in self.entries) else 0

    def count(self) -> dict:
        """outcome -> entries, every outcome of OUTCOMES (0 where none)."""
        found = Counter(e["outcome"] for e in self.entries)
        return {o: found[o] for o in OUTCOMES}

    def of(self, outcome: str) -> list[dict]:
        return [e for e in self.entries if e["outcome"] == outcome]

    def as_dict(self) -> dict:
        """The JSON of compare and the gate; `machines` only where the sides are two machines."""
        found = asdict(self)
        found["across_engines"] = len(self.engines) > 1
        if found["machines"] is None:
            del found["machines"]
        return {**found, "counts": self.count(), "exit_code": self.exit_code}


def expectation_note(rec: Record) -> str | None:
    """What a changed verdict (rec's, the candidate's) is against what the variant should read
    (leakbench.expectation): "the fix leaks again", "it should read no-leak", "both are what it
    may read: leak or no-leak"; None where the new verdict is the one it should read."""
    wanted = expectation.for_record(rec)
    if wanted.accepts(rec):
        return (
            None if wanted.label == rec["verdict"] else f"both are what it may read: {wanted.label}"
        )
    if rec["variant"] == "fixed" and rec["verdict"] in LEAKING:
        return "the fix leaks again"
    return f"it should read {wanted.label}"


def classify(a: Record | None, b: Record | None, peak_past: str | None) -> tuple[str, str | None]:
    """(outcome, why) of one pair's variant: a, b its baseline's and candidate's records (None:
    none); peak_past: why a peak pair's fix is past the factor (its peak, old and new), or None.
    The rules are the module docstring's, in that order; why is a short sentence, or None."""
    if a is None or b is None:
        return NOT_MEASURED, f"no record of the {'baseline' if a is None else 'candidate'}"
    va, vb = a["verdict"], b["verdict"]
    if "skipped" in (va, vb):
        return SKIPPED, None
    wanted = expectation.for_record(b)
    if vb in LEAKING and va not in LEAKING and "leak" not in wanted.verdicts:
        return REGRESSION, expectation_note(b)
    if vb in FAILED and va not in FAILED:
        return REGRESSION, f"a new {vb}"
    if peak_past:
        return REGRESSION, peak_past
    if va == "leak" and vb == "no-leak" and "leak" in wanted.verdicts:
        return FIXED_UPSTREAM, None
    if va != vb:
        return CHANGE, expectation_note(b)
    return UNCHANGED, None


def compare(
    old_label: str,
    old: list[Record],
    new_label: str,
    new: list[Record],
    factor: float = DEFAULT_FACTOR,
    machine: str | None = None,
    expected: Iterable[tuple[str, str]] = (),
    versions: tuple[str | None, str | None] = (None, None),
    across_machines: bool = False,
    names: tuple[str, str] | None = None,
) -> Comparison:
    """Per pair, variant and compared metric: old, new, ratio, marker; per pair and variant, its
    outcome (see the module docstring). expected: (pair, variant) keys to compare even where
    neither side has a record (not measured); versions: the builds of the two sides, where known;
    across_machines: two machines' records are compared on purpose (machines_of); names: the
    sides as a refusal names them (default: their labels).
    Raises VersionError for a factor not above 1, and for two machines (machines_of)."""
    if factor <= 1:
        raise VersionError(f"--factor must be above 1, got {factor}")
    across = machines_of(old, new, names or (old_label, new_label), across_machines)
    olds = {(r["pair"], r["variant"]): r for r in old}
    news = {(r["pair"], r["variant"]): r for r in new}
    rows: list[dict] = []
    entries: list[dict] = []
    for pair, variant in sorted(set(olds) | set(news) | set(expected), key=order):
        a, b = olds.get((pair, variant)), news.get((pair, variant))
        base = {"pair": pair, "variant": variant}
        va, vb = a["verdict"] if a else None, b["verdict"] if b else None
        rows.append(_verdict_row(base, a, b))
        peak_past: str | None = None
        moved: list[dict] = []
        if not {va, vb} <= {"skipped", None}:  # something measured: numbers side by side
            peak_past, moved = _metric_rows(rows, base, a, b, factor)
        outcome, why = classify(a, b, peak_past)
        if outcome == UNCHANGED and moved:
            outcome = CHANGE
        entries.append(
            {
                **base,
                "outcome": outcome,
                "old": in_words.words(decision.of(a)) if a else None,
                "new": in_words.words(decision.of(b)) if b else None,
                "old_verdict": va,
                "new_verdict": vb,
                "why": why,
                "moved": moved,
            }
        )
    failures = [
        f"{e['pair']} ({e['variant']}): {e['old']} → {e['new']}: {e['why']}"
        for e in entries
        if e["outcome"] == REGRESSION
    ]
    one = {on for r in [*old, *new] if (on := machines.machine_of(r)) is not None}
    return Comparison(
        old_label,
        new_label,
        factor,
        rows,
        failures,
        None if across else machine,  # not one asv machine's records
        entries,
        *versions,
        across,
        engines_of(old, new),
        machines.describe(next(iter(one))) if len(one) == 1 else None,
    )


def _verdict_row(base: dict, a: Record | None, b: Record | None) -> dict:
    """The row of one variant's verdicts, old and new, marked CHANGED where both differ."""
    va, vb = a["verdict"] if a else None, b["verdict"] if b else None
    changed = a is not None and b is not None and va != vb
    return {
        **base,
        "metric": "verdict",
        "key": None,
        "unit": None,
        "old": va,
        "new": vb,
        "ratio": None,
        "marker": CHANGED if changed else ("" if a and b else _only(a, b)),
    }


def _metric_rows(
    rows: list[dict], base: dict, a: Record | None, b: Record | None, factor: float
) -> tuple[str | None, list[dict]]:
    """Add to `rows` one row per compared metric (COMPARED) of one variant; return the peak's words
    where it grew past `factor` and a fix explains it (_peak_fix), else None, and the other
    metrics that moved (their key, label, marker, old, new, ratio)."""
    peak_past, moved = None, []
    for m in COMPARED:
        row = _row(base, m, a, b, factor)
        rows.append(row)
        if row["marker"] == REGRESSED and m is metrics.PEAK and _peak_fix(a, b):
            peak_past = (
                f"peak above baseline {format_bytes(row['old'], unit=MIB, label=False)} "
                f"→ {format_bytes(row['new'], unit=MIB)}, past {factor:g}×"
            )
        elif row["marker"]:
            moved.append({k: row[k] for k in ("key", "metric", "marker", "old", "new", "ratio")})
    return peak_past, moved


def _only(a: Record | None, b: Record | None) -> str:
    return f"only in {'old' if a else 'new'}" if a or b else "in neither"


def _row(base: dict, m: Metric, a: Record | None, b: Record | None, factor: float) -> dict:
    """One compared metric of one variant: old, new, ratio, marker (mark)."""
    x, y = decision.value(a, m.key), decision.value(b, m.key)
    return {
        **base,
        "metric": m.label,
        "key": m.key,
        "unit": m.shown,
        "old": x,
        "new": y,
        "ratio": y / x if x is not None and y is not None and x > 0 and y >= 0 else None,
        "marker": mark(x, y, factor, m.compare_floor or 0.0),
    }


def _peak_fix(a: Record | None, b: Record | None) -> bool:
    """True for the fix of a peak pair (its kind, leakbench.contract), on both sides."""
    return all(
        r is not None and r["variant"] == "fixed" and r.get("kind") == "peak" for r in (a, b)
    )
