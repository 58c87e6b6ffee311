"""Why a leak under every deciding bar is missed, in the calibration's words: beside its
verdicts by shape (leakbench.reporters.calibration), from stats.under_the_bars. Nothing is
measured or decided here."""

from __future__ import annotations

from leakbench.calibrate.stats import SIGNALS, under_the_bars
from leakbench.units import KIB, format_bytes


def _kib(x: float) -> str:
    return format_bytes(x, unit=KIB, digits=1)


def why_missed(result: dict) -> list[str]:
    """Markdown lines: each size (bytes/repetition) a leak design is missed at under every deciding
    bar, with the measured reaches that forbid a bar that low (stats.under_the_bars); [] where
    none is."""
    lines = []
    for entry in under_the_bars(result):
        size = entry["size"]
        bars = ", ".join(
            f"{SIGNALS[n].label} {_kib(s['bar'])}/rep" for n, s in entry["signals"].items()
        )
        said = []
        for name, s in entry["signals"].items():
            parts = [
                f"{what} reach {_kib(found['reach'])}/rep ({found['set_by']}; "
                + ("over" if found["reach"] >= size else "under")
                + f" {format_bytes(size, whole=True)})"
                for what, found in (("the controls", s["controls"]), ("the fixes", s["fixes"]))
                if found
            ]
            label = SIGNALS[name].label.capitalize()
            said.append(f"{label}: " + ("; ".join(parts) or "not measured"))
        lines += [
            f"Why {format_bytes(size, whole=True)}/rep is missed: it is under every deciding bar "
            f"({bars}), and a bar that low would call a control or a fix a leak where a measured "
            "reach is over it. " + ". ".join(said) + ". The controls are the shape library's at "
            f"0 and {format_bytes(size, whole=True)}; the fixes, the committed records' noise "
            "floor (below). The published machine's floors: results/floors/.",
            "",
        ]
    return lines
