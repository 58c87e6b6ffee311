"""The number a verdict rests on, decided once and written into the record (record["decision"]).

Every view (the run table, matrix, compare and the gate, the site and its lessons, report-back,
`check`, the JSON) shows `words(record["decision"])` and re-derives nothing: before this, three
modules each picked a number their own way, and a no-leak could show 104 KiB/rep in one view and
+1 in another (issue 31).

A decision is a dict:
    verdict   the record's verdict
    signal    what decided: a signal of record["signals"] ("held", "python objects", ...),
              "peak", or None (a run that failed, or nothing measured)
    label     the metric's label ("held memory", "peak above baseline")
    value     the number, in `unit`; None where nothing was measured
    unit      "bytes/repetition", "objects/repetition", ... (leakbench.metrics), or "bytes"
    bar       the bar `value` was compared with, in `unit` (None: no bar applies)
    exponent  for the peak: k in peak ∝ size^k, and its bar k_bar (else absent)
    source    the measurement the number comes from: "first run", "confirmation", "extension"
    why       one sentence, present whenever the number alone would mislead: a leak under its
              bar, a no-leak at or over it, a failed run; a longer look's own sentence
    signals   per deciding signal of the first run: value and bar (its unit), moved (rate and
              test: verdict.moved), steady (verdict.steady), confirmed (a longer look kept it;
              None without one)

The rules are verdict.py's and looks.py's; this module only says which of their numbers
decided. docs/verdicts.md, "The number beside a verdict", says the same in words.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from leakbench import metrics as registry
from leakbench.analysis.judge import verdict as rules

FIRST = "first run"
SOURCES = (FIRST, "confirmation", "extension")  # the look's key in the record, for a longer look
_FAILED = ("over-cap", "hang", "error", "skipped")


def _signal_rows(metrics: dict, signals: list[str], confirmed: list[str] | None) -> list[dict]:
    """Per deciding signal: its rate and bar, whether it moved, grew steadily, was confirmed."""
    rows = []
    for key, (name, bar) in rules.deciding_signals(metrics).items():
        trend = metrics.get(key)
        value = _rate(trend)
        if value is None:
            continue
        assert trend is not None  # a rate comes from a trend
        rows.append(
            {
                "signal": name,
                "value": value,
                "bar": bar,
                "moved": rules.moved(trend, bar) if _TESTED <= set(trend) else name in signals,
                "steady": rules.steady(trend, bar),
                "confirmed": None if confirmed is None else name in confirmed,
            }
        )
    return rows


_TESTED = {"slope", "first_half", "second_half", "p_increasing"}  # what verdict.moved reads


def _rate(trend: dict | None) -> float | None:
    """registry.rate of a trend; its slope for a trend stored without its halves; None without."""
    if not trend:
        return None
    if {"first_half", "second_half"} <= set(trend):
        return registry.rate(trend)
    return trend.get("slope")


def _number(metric: registry.Metric, metrics: dict | None) -> float | None:
    return _rate((metrics or {}).get(metric.key))


def _growth(verdict: str, signals: list[str], metrics: dict, later: dict | None, look: str) -> dict:
    """The deciding growth number: a leak's first kept signal, else the memory basis. later: the
    metrics of the later half of the longer look named `look` ("confirmation", "extension")."""
    for name in signals:
        metric = registry.BY_SIGNAL.get(name)
        if metric is None or metric.threshold is None:
            continue
        for source, found in ((look, later), (FIRST, metrics)):
            value = _number(metric, found)
            if value is not None and (source == FIRST or value >= metric.threshold):
                return _entry(metric, value, metric.threshold, source)
    basis = rules.memory_basis(later or metrics).metric
    found = later if later and later.get(basis.key) else metrics
    return _entry(basis, _number(basis, found), basis.threshold, look if found is later else FIRST)


def _settled(verdict: str, found: dict, metrics: dict) -> tuple[dict, str] | None:
    """A first run's no-leak whose basis could not decide (verdict.undecided) and whose bytes
    handed out settled it (verdict.settled_by): their number, and why, else None."""
    if verdict != "no-leak" or found.get("source") != FIRST or not rules.undecided(metrics):
        return None
    settler = rules.settled_by(metrics)
    if settler is None:
        return None
    basis = rules.memory_basis(metrics).metric
    trend, bytes_out = metrics[basis.key], metrics[settler.key]
    assert basis.threshold is not None  # undecided: the basis has a bar

    def span(metric: registry.Metric, t: dict) -> str:
        low, high = metric.display(t["low"], sign=True), metric.display(t["high"], sign=True)
        return f"slope {low} to {high} {metric.shown}"

    why = (
        f"{basis.label} had no trend (Mann–Kendall p = {trend['p_increasing']:.2g}, "
        f"{span(basis, trend)}); {settler.label} decided: {span(settler, bytes_out)}, under the "
        f"bar of {basis.display(basis.threshold)} {basis.shown}"
    )
    # the signal stays the basis's, as an extension's lows do (_envelope): allocated bytes is no
    # signal of its own
    found = _entry(settler, _number(settler, metrics), basis.threshold, FIRST)
    return {**found, "signal": basis.signal}, why


def _entry(metric: registry.Metric, value: float | None, bar: float | None, source: str) -> dict:
    return {
        "signal": metric.signal,
        "label": metric.label,
        "value": value,
        "unit": metric.unit,
        "bar": bar,
        "source": source,
    }


def _peak(metrics: dict) -> dict | None:
    """The peak's rise from the smallest to the largest size, with its exponent; None without."""
    scaling = metrics.get("peak_scaling") or {}
    peaks = [p for p in scaling.get("peaks_bytes") or [] if p is not None]
    if len(peaks) < 2:
        return None
    return {
        **_entry(registry.PEAK, peaks[-1] - peaks[0], registry.PEAK_RISE_MIN, FIRST),
        "signal": registry.PEAK_SIGNAL,
        "exponent": scaling.get("exponent"),
        "k_bar": rules.PEAK_EXPONENT_MIN,
    }


def decide(rec: Mapping[str, Any], later: dict | None = None, look: dict | None = None) -> dict:
    """record["decision"] for a record (see the module docstring).

    later: the metrics of the later half of the longer look that decided (protocol.with_decision
    computes them), None without a look; look: that look as the record keeps it ("why", and for
    an extension "envelope"), with "key" "confirmation" or "extension".
    """
    verdict = rec["verdict"]
    metrics = rec.get("metrics") or {}
    signals = list(rec.get("signals") or [])
    confirmed = list(look.get("signals") or []) if look else None
    rows = _signal_rows(metrics, signals, confirmed) if metrics else []
    why = look.get("why") if look else None
    if verdict in _FAILED or not metrics:
        found: dict[str, Any] = {"signal": None, "label": None, "value": None, "unit": None}
        found.update(bar=None, source=FIRST)
        reason = rec.get("skip_reason") or rec.get("error") or rec.get("phase")
        tail = (reason or "").strip().splitlines()
        return {
            "verdict": verdict,
            **found,
            "why": why or (tail[-1] if tail else None),
            "signals": rows,
        }
    peak = _peak(metrics) if rec.get("kind") == "peak" else None
    if peak and (registry.PEAK_SIGNAL in signals or verdict != "leak"):
        found = peak
    elif verdict == "fragmentation":
        found = _fragmentation(metrics)
    else:
        kept = signals if verdict == "leak" else []
        found = _growth(verdict, kept, metrics, later, (look or {}).get("key") or "confirmation")
        if look and look.get("key") == "extension" and look.get("envelope") and verdict == "leak":
            found = _envelope(found, look["envelope"])
        settled = _settled(verdict, found, metrics)
        if settled:
            found, why = settled
    if why is None:
        why = _why(verdict, found, metrics)
    return {"verdict": verdict, **found, "why": why, "signals": rows}


def _fragmentation(metrics: dict) -> dict:
    """A fragmentation's number: what the trim gave back, or where no trim can give it back
    (verdict.FREE_FORM), the free bytes malloc keeps above the process before setup."""
    if rules.unmoved(metrics)[2] == rules.FREE_FORM:
        return {
            "signal": None,
            "label": FREE_HELD_LABEL,
            "value": metrics.get("malloc_free_held_bytes"),
            "unit": "bytes",
            "bar": rules.FREE_HELD_MIN,
            "source": FIRST,
        }
    return _entry(registry.TRIM, metrics.get(registry.TRIM.key), rules.TRIM_HELD_MIN, FIRST)


FREE_HELD_LABEL = "malloc free bytes held"


def _envelope(found: dict, envelope: dict) -> dict:
    """An extension that kept a leak by the lows of a series (extension.extended): their rise per
    repetition, of the series it read first (allocated bytes) if that rose by the bar, else of the
    basis's own (held memory's)."""
    window = envelope.get("window") or 0
    read = registry.SERIES_BY_NAME[envelope["series"]]
    basis = registry.BY_SIGNAL.get(found.get("signal") or "")
    options = [(next(m for m in registry.METRICS if m.series == read.name), envelope.get("rises"))]
    if basis is not None and basis.series != read.name:
        options.append((basis, envelope.get("basis_rises")))
    rates = [(m, sum(r) / (window * len(r))) for m, r in options if r and window]
    if not rates:
        return found
    metric, per_rep = next(((m, v) for m, v in rates if v >= (found["bar"] or 0)), rates[0])
    return {
        **_entry(metric, per_rep, found["bar"], "extension"),
        "signal": metric.signal or found["signal"],
    }


def _why(verdict: str, found: dict, metrics: dict) -> str | None:
    """Why a number reads against its verdict (a leak under its bar, a no-leak at or over it)."""
    value, bar = found.get("value"), found.get("bar")
    if value is None or bar is None:
        return None
    if found.get("signal") == registry.PEAK_SIGNAL:
        k, k_bar = found.get("exponent"), found.get("k_bar")
        if verdict != "leak" and value >= bar and k is not None and k_bar is not None:
            return f"the peak did not scale with the size: k={k:.2f}, under {k_bar:g}"
        return None
    if verdict == "leak" and value < bar:
        return "under its bar in this number; a longer look decided"
    if verdict == "no-leak" and value >= bar:
        metric = registry.BY_SIGNAL.get(found.get("signal") or "")
        trend = metrics.get(metric.key) if metric else None
        if trend and trend.get("p_increasing", 0.0) >= rules.TREND_P_MAX:
            return f"no trend: Mann–Kendall p = {trend['p_increasing']:.2g}"
        return "the growth was not steady"
    return None


def of(rec: Mapping[str, Any]) -> dict:
    """A record's decision: the one the engine wrote (record["decision"]); for a record built
    without one (a test's, a peer's), or whose verdict was changed after it (a test's edit), the
    same function's answer from its own fields."""
    found = rec.get("decision")
    return found if found and found.get("verdict") == rec.get("verdict") else decide(rec)


def value(rec: Mapping[str, Any] | None, key: str) -> float | None:
    """A metric of a record as the views show it: for the metric that decided, the decision's
    number (a confirmation's where one decided); for another deciding signal's metric, the rate
    its bar was compared with in the first run (the decision's signals); for any other,
    metrics.value (a trend's Theil–Sen slope, or the level). One number per metric in every
    view: a fix whose held memory
    sloped +104 KiB/rep over a run that rose in one half read +1 beside its verdict and +104 in
    its lesson before (issue 31)."""
    if rec is None:
        return None
    metric = registry.BY_KEY[key]
    found = of(rec)
    if found.get("signal") == metric.signal and found.get("label") == metric.label:
        return found.get("value")  # the deciding number, a longer look's where one decided
    rows = {row["signal"]: row["value"] for row in found["signals"]}
    if metric.signal in rows:
        return rows[metric.signal]
    return registry.value(rec, key)
