"""Views of the known causes (leakbench.check.causes): the lines `leakbench check` shows under its
evidence, and the leave-one-out table (`leakbench causes --leave-one-out`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from leakbench.check import causes as naming
from leakbench.check.leave_one_out import Evaluation, Named

DIFF_LINES = 40  # the fix's diff shown under a check, at most (the lesson has it whole)


def check_lines(found: Mapping[str, Any]) -> list[str]:
    """Plain lines for check's view, from rec["diagnosis"]["causes"] (causes.for_diagnosis): the
    causes named, best first, each with its lesson and fix, then the best one's diff; or why
    none is named."""
    if not found:
        return []
    if "na" in found:
        return [f"known causes: n/a ({found['na']})"]
    named = found.get("named") or []
    if not named:
        return [f"known causes: {found.get('none')}"]
    out = ["known causes (nearest first, by the suite's committed records):"]
    for c in named:
        shared = ", ".join(c["shared"][:6]) or "—"
        out.append(
            f"  {c['pair']} · similarity {c['score']:.2f} · {c['title']}\n"
            f"    shared evidence: {shared}\n"
            f"    lesson: {c['lesson']} (after `leakbench site`) · "
            f"fix: diff {c['scenario']} {c['fix']}"
        )
    diff = named[0]["diff"].splitlines()
    if diff:
        cut = len(diff) > DIFF_LINES
        shown = diff[:DIFF_LINES] + ([f"... ({len(diff) - DIFF_LINES} more lines)"] if cut else [])
        out.append(f"the fix of {named[0]['pair']}:\n" + "\n".join(shown))
    return out


def _answer(n: Named) -> str:
    if n.tied:
        return f"none ({n.tied} causes tie)"
    if n.signals:
        return f"none (the signals alone: {', '.join(n.signals)})"
    return ", ".join(f"{p} {s:.2f}" for p, s in n.named) or "none"


def leave_one_out_markdown(e: Evaluation) -> str:
    """The leave-one-out table: its definition, the figures, a row per CPU leaky pair, the fixes."""
    n, right = len(e.pairs), e.right
    every = sum(len(p.every) for p in e.pairs)
    every_right = sum(r.right for p in e.pairs for r in p.every)
    lines = [
        "## leakbench causes: leave-one-out over the committed records",
        "",
        f"The known causes are the committed leaky records whose verdict moved ({e.records} "
        f"records of {len(e.pairs)} CPU pairs of the suite's {e.known_pairs}, every machine and "
        "release; the GPU pair's records read skipped). A cause is named at "
        f"similarity ≥ {naming.MATCH_MIN:g} (leakbench/check/causes.py, MATCH_MIN).",
        "",
        "- **held out**: each CPU leaky pair's record on the newest release (not a nightly) "
        f"where it leaks on `{e.machine}`, matched against every other record (the other "
        "pairs on every release, the same pair on other releases); right = its own pair named "
        "first, strictly ahead, on shared evidence beyond the signals: "
        f"**{right} of {n} pairs named right**.",
        f"- **every release**: each leaking record of those pairs held out the same way: "
        f"{every_right} of {every} records named right.",
        "- **unknown**: the pair held out entirely (a cause the suite would not hold): what is "
        "named then; a related cause or none, no pass or fail.",
        f"- **fixes**: every CPU fix record matched as a user's record: "
        f"{len(e.fixes_named)} of {len(e.fixes)} named a cause.",
        "",
        "TensorFlow before 2.17 has no `get_model_proto`: a peak pair's record there holds one "
        'piece of evidence (the peak signal), the same for all six, so they tie ("every '
        'release" counts a tie as wrong). A record whose evidence shared with the causes that '
        "match is the signals alone names none (they say what grew, not why: docs/causes.md).",
        "",
        "| pair | held out | named (similarity) | every release | unknown: named instead |",
        "|---|---|---|---|---|",
    ]
    for p in e.pairs:
        mark = "right" if p.held_out.right else "**wrong**"
        rights = sum(r.right for r in p.every)
        lines.append(
            f"| {p.pair} | {p.held_out.where} | {mark}: {_answer(p.held_out)} | "
            f"{rights}/{len(p.every)} | {_answer(p.unknown)} |"
        )
    wrong = [(p.pair, r) for p in e.pairs for r in p.every if not r.right]
    if wrong:
        lines += ["", "Records not named right (every release):", ""]
        lines += [f"- {pair}, {r.where}: {_answer(r)}" for pair, r in wrong]
    lines += ["", "Fix records that named a cause:", ""]
    lines += [f"- {f.pair}, {f.where} ({f.verdict}): {f.answer}" for f in e.fixes_named] or [
        "- none"
    ]
    return "\n".join(lines) + "\n"
