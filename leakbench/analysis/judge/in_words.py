"""A decision (analysis.judge.decision, record["decision"]) in words: the one way every view shows
the number a verdict rests on ("leak · python objects +133/rep", "no-leak · peak +3.9 MiB (under
32 MiB)"). Shows only: what decided is the decision's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from leakbench import metrics as registry
from leakbench.analysis.judge.decision import FREE_HELD_LABEL
from leakbench.units import MIB, format_bytes


def words(decision: Mapping[str, Any] | None, verdict: bool = True) -> str:
    """The one way a decision is shown: "leak · python objects +133/rep",
    "no-leak · held +1 KiB/rep", "no-leak · peak +3.9 MiB (under 32 MiB)",
    "over-cap · went over the cap while importing"; verdict=False leaves the verdict off."""
    if not decision:
        return "—"
    head = f"{decision['verdict']} · " if verdict else ""
    return head + number(decision)


def amount(decision: Mapping[str, Any], value: float) -> str:
    """`value` in the unit the decision's number is shown in, with its sign: "+9 KiB/rep",
    "+133/rep", "+3.9 MiB" (a spread's ends beside `number`, as repeat's table shows them)."""
    if decision["verdict"] == "fragmentation":
        return format_bytes(value, unit=MIB)
    if decision.get("signal") == registry.PEAK_SIGNAL:
        return f"{'+' if value >= 0 else ''}{format_bytes(value, unit=MIB)}"
    metric = _metric(decision)
    unit = metric.shown if metric.shown.startswith("/") else f" {metric.shown}"
    return f"{metric.display(value, sign=True)}{unit}"


def number(decision: Mapping[str, Any]) -> str:
    """The decision's number with its name and unit, and why where it reads against the verdict."""
    value, verdict = decision.get("value"), decision["verdict"]
    if value is None:
        return decision.get("why") or "not measured"
    if verdict == "fragmentation":
        if decision.get("label") == FREE_HELD_LABEL:
            return f"malloc keeps {amount(decision, value)} free"
        return f"trim gave back {amount(decision, value)}"
    if decision.get("signal") == registry.PEAK_SIGNAL:
        shown = f"peak {amount(decision, value)}"
        if verdict == "leak":
            return f"{shown}, k={decision['exponent']:.2f}"
        if value < decision["bar"]:
            return f"{shown} (under {format_bytes(decision['bar'], unit=MIB, whole=True)})"
        k, k_bar = decision.get("exponent"), decision.get("k_bar")
        return shown if k is None else f"{shown}, k={k:.2f} (under {k_bar:g})"
    metric = _metric(decision)
    shown = f"{metric.signal or metric.short or metric.label} {amount(decision, value)}"
    return f"{shown}: {decision['why']}" if decision.get("why") and _against(decision) else shown


def _metric(decision: Mapping[str, Any]) -> registry.Metric:
    """The metric the decision's number is of (by its label); held memory where none is."""
    return next((m for m in registry.METRICS if m.label == decision.get("label")), registry.HELD)


def _against(decision: Mapping[str, Any]) -> bool:
    """True where the number reads against the verdict: a leak under its bar, a no-leak at it."""
    value, bar = decision.get("value"), decision.get("bar")
    if value is None or bar is None:
        return False
    return (decision["verdict"] == "leak") == (value < bar)
