"""`leakbench compare OLD NEW`: two TensorFlow releases' records, side by side.

Per pair, variant and metric (leakbench.metrics entries with a compare_floor):
old, new, ratio, and a marker past a factor. Failures (exit 1): a verdict
that changed, other than to or from `skipped` (nothing measured), and a
fixed variant whose peak regressed past the factor. Each changed verdict
says whether the new one is still what the variant should read
(leakbench.expectation). Rendering is leakbench.reporters.history's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from leakbench import expectation, metrics
from leakbench.analysis.schema import Record
from leakbench.history.store import VersionError
from leakbench.units import MIB, format_bytes

DEFAULT_FACTOR = 1.5
REGRESSED, IMPROVED, CHANGED = "regressed", "improved", "changed"
COMPARED = tuple(m for m in metrics.METRICS if m.compare_floor is not None)


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
    failures: list  # one line each: why compare exits 1
    machine: str | None = None  # asv machine of both record files (None: files given by path)

    @property
    def exit_code(self) -> int:
        return 1 if self.failures else 0

    def as_dict(self) -> dict:
        return {**asdict(self), "exit_code": self.exit_code}


def verdict_change(rec: Record, old: str) -> str:
    """The failure line's tail for a verdict that changed to rec's: what the variant should read."""
    wanted = expectation.for_record(rec)
    if wanted.accepts(rec):
        return (
            f" (both are what it may read: {wanted.label})"
            if wanted.label != rec["verdict"]
            else ""
        )
    if rec["variant"] == "fixed" and rec["verdict"] in ("leak", "over-cap"):
        return ": the fix leaks again"
    return f": it should read {wanted.label}"


def compare(
    old_label: str,
    old: list[Record],
    new_label: str,
    new: list[Record],
    factor: float = DEFAULT_FACTOR,
    machine: str | None = None,
) -> Comparison:
    """Per pair, variant and compared metric: old, new, ratio, marker; and the failures
    (see the module docstring). Raises VersionError for a factor not above 1."""
    if factor <= 1:
        raise VersionError(f"--factor must be above 1, got {factor}")
    olds = {(r["pair"], r["variant"]): r for r in old}
    news = {(r["pair"], r["variant"]): r for r in new}
    rows: list[dict] = []
    failures: list[str] = []
    for pair, variant in sorted(set(olds) | set(news), key=order):
        a, b = olds.get((pair, variant)), news.get((pair, variant))
        base = {"pair": pair, "variant": variant}
        va, vb = a["verdict"] if a else None, b["verdict"] if b else None
        changed = a is not None and b is not None and va != vb
        rows.append(
            {
                **base,
                "metric": "verdict",
                "key": None,
                "unit": None,
                "old": va,
                "new": vb,
                "ratio": None,
                "marker": CHANGED
                if changed
                else ("" if a and b else f"only in {'old' if a else 'new'}"),
            }
        )
        if changed and "skipped" not in (va, vb):
            assert b is not None and va is not None  # changed: both records are there
            failures.append(f"{pair} ({variant}): verdict {va} → {vb}{verdict_change(b, va)}")
        if {va, vb} <= {"skipped", None}:
            continue  # nothing measured on either side: no numbers to set side by side
        for m in COMPARED:
            x, y = metrics.value(a, m.key), metrics.value(b, m.key)
            marker = mark(x, y, factor, m.compare_floor or 0.0)  # set for every COMPARED metric
            ratio = y / x if x is not None and y is not None and x > 0 and y >= 0 else None
            rows.append(
                {
                    **base,
                    "metric": m.label,
                    "key": m.key,
                    "unit": m.shown,
                    "old": x,
                    "new": y,
                    "ratio": ratio,
                    "marker": marker,
                }
            )
            if marker == REGRESSED and variant == "fixed" and m is metrics.PEAK:
                failures.append(
                    f"{pair} (fixed): peak above baseline {format_bytes(x, unit=MIB, label=False)} "
                    f"→ {format_bytes(y, unit=MIB)}, past {factor:g}×"
                )
    return Comparison(old_label, new_label, factor, rows, failures, machine)
