"""`leakbench bisect`'s views: the boundary in a few
lines for the terminal, and the whole result in markdown.

Both render the result dict leakbench.cli.bisect writes as JSON
(leakbench.history.bisect.Outcome.as_dict plus what was asked:
pair, variant, ends, machine, budget, seconds); they never decide.
"""

from __future__ import annotations

from leakbench.reporters import markdown_table
from leakbench.units import GIB, KIB, format_bytes


def rate_text(m: dict) -> str:
    """The number a reading rests on: its decision in words (Reading.decided), or for a bisect
    stored before readings kept it, its rate in its unit per repetition: '+133 objects/rep',
    '+5.8 KiB/rep', 'k 0.92'."""
    if m.get("decided"):
        return m["decided"]
    rate, unit = m.get("rate"), m.get("rate_unit") or ""
    if rate is None:
        return "—"
    if unit == "k":
        return f"k {rate:.2f}"
    if unit.startswith("bytes"):
        return f"{format_bytes(rate, unit=KIB, sign=True)}/rep"
    return f"{rate:+,.0f} {unit.split('/')[0]}/rep"


def duration(seconds: float) -> str:
    """3725 -> '1 h 2 min 5 s'."""
    s = int(round(seconds))
    h, m, s = s // 3600, s // 60 % 60, s % 60
    return " ".join(p for p in (f"{h} h" if h else "", f"{m} min" if h or m else "", f"{s} s") if p)


def _build(end: dict | None) -> str:
    if not end:
        return "—"
    return (
        f"{end['version']} ({end['dist']}, {end['date'] or 'date unknown'}, "
        f"git {end['tensorflow_git'] or '?'})"
    )


def reading_line(n: int, m: dict) -> str:
    """One measurement as the terminal shows it while the bisection runs."""
    rests = m.get("decided") or (f"{m['rate_label']} {rate_text(m)}" if m.get("rate_label") else "")
    installed = f", install {m['install_seconds']:.0f} s" if m.get("install_seconds") else ""
    took = f"{m['seconds']:.0f} s" if m.get("seconds") is not None else "not measured"
    why = f" ({m['phase']}: {m['error']})" if m.get("error") else ""
    return (
        f"[{n}] {m['role']} {m['version']} ({m['dist']}, {m['date']}): {m['verdict']}{why}"
        f"{'; ' + rests if rests else ''}; {took}{installed}"
    )


def cost(result: dict) -> str:
    installs = sum(
        1 for m in result["measurements"] if m["install_seconds"] or m["phase"] == "install"
    )
    steps = result["steps"]
    return (
        f"{result['candidates']} candidates, {len(result['measurements'])} measurements ({steps} "
        f"search step{'' if steps == 1 else 's'} between the ends), "
        f"{installs} installs, {duration(result['seconds'])}, "
        f"disk budget {format_bytes(result['disk_budget_bytes'], unit=GIB)}"
    )


def summary(result: dict) -> list[str]:
    """The lines `leakbench bisect` prints at its end."""
    b = result["boundary"]
    lines = [
        f"bisect {result['pair']} ({result['variant']}) {result['good_asked']} → "
        f"{result['bad_asked']}: {result['status']}: {result['message']}"
    ]
    if b["good"]:
        lines += [
            f"  last reading the good end's verdict: {_build(b['good'])}",
            f"  first reading otherwise:             {_build(b['bad'])}",
        ]
        lines.append(
            f"  commits: {b['compare_url'] or 'unknown (a build without its git version)'}"
        )
    lines.append(f"  cost: {cost(result)}")
    return lines


def markdown(result: dict) -> str:
    """The whole result as a markdown page: the boundary,
    the commits, the cost, every measurement."""
    b = result["boundary"]
    out = [
        f"# leakbench bisect: {result['pair']} ({result['variant']}), TensorFlow "
        f"{result['good_asked']} → {result['bad_asked']}",
        "",
        f"Machine `{result['machine']}`, Python {result['python']}, started {result['started']}. "
        f"Status **{result['status']}**: {result['message']}.",
        "",
    ]
    if b["good"]:
        out += markdown_table(
            ["side", "build", "distribution", "date", "git version", "git ref"],
            (
                [
                    side,
                    end["version"],
                    end["dist"],
                    end["date"] or "—",
                    f"`{end['tensorflow_git'] or '?'}`",
                    end["git_ref"] or "—",
                ]
                for side, end in (
                    ("last as the good end", b["good"]),
                    ("first otherwise", b["bad"]),
                )
            ),
        )
        out += [
            "",
            "Commits between them: "
            f"{b['compare_url'] or 'unknown (a build without its git version)'}",
            "",
        ]
    out += [
        f"Cost: {cost(result)}. Each measurement: cap "
        f"{format_bytes(result['cap_bytes'], unit=GIB)}, timeout {result['timeout_seconds']:g} s; "
        f"{result['confirm']} readings of each boundary build.",
        "",
    ]
    if result["skipped"]:
        out += [f"Skipped as unusable: {', '.join(result['skipped'])}.", ""]
    rows = []
    for n, m in enumerate(result["measurements"], 1):
        verdict = m["verdict"] + (f" ({m['phase']})" if m.get("phase") and not m["usable"] else "")
        seconds = f"{m['seconds']:.1f}" if m.get("seconds") is not None else "—"
        rows.append(
            [
                str(n),
                m["role"],
                m["version"],
                m["dist"],
                m["date"] or "—",
                verdict,
                m["rate_label"] or "—",
                rate_text(m),
                seconds,
                f"{m['install_seconds']:.0f}",
            ]
        )
    out += markdown_table(
        [
            "#",
            "role",
            "build",
            "distribution",
            "date",
            "verdict",
            "rests on",
            "rate",
            "seconds",
            "install s",
        ],
        rows,
    )
    return "\n".join(out) + "\n"
