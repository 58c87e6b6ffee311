"""The `leakbench check` views of one record: rich renderables for the terminal,
and plain text for assertion messages (the pytest helper)."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from leakbench import metrics
from leakbench.analysis.judge import decision, in_words, protocol
from leakbench.analysis.record_type import Record
from leakbench.engine.pytypes import TYPE_GROWTH_MIN
from leakbench.reporters import causes
from leakbench.units import KIB, MIB, format_bytes

CHECK_SERIES = tuple(m for m in metrics.METRICS if m.check)  # the trends `check` shows


def check_view(rec: Record) -> list:
    """Renderables for one `leakbench check` record: verdict, series, types, attribution, stacks
    (the largest live; the growing ones with the user's frame first), the reference chain, hints."""
    d = rec.get("diagnosis") or {}
    out = _head(rec)
    m = rec["metrics"] or {}
    out += [*_series(m), *_types(d.get("types") or [], m)]
    for key, look in protocol.longer_looks(rec):
        out.append(
            Text(
                f"{key}: {look['reps']} repetitions in a fresh process "
                f"({look['seconds']:.1f} s): {look['why']}"
            )
        )
    out += _attribution((d.get("attribution") or {}) if m else {})
    out += _stacks(d.get("top_stacks") or []) + _growing(d.get("stack_growth") or [])
    out += _chain(d)
    for hint in d.get("hints") or []:
        out.append(Text(f"hint: {hint}"))
    out += [Text(line) for line in causes.check_lines(d.get("causes") or {})]
    return out


def _head(rec: Record) -> list:
    """The verdict's line and the facts' line: repetition, signals, memory signal, peak, seconds."""
    d = rec.get("diagnosis") or {}
    word = rec["verdict"] + (f" (in {rec['phase']})" if rec.get("phase") else "")
    style = {"leak": "bold red", "no-leak": "bold green"}.get(rec["verdict"], "bold yellow")
    head = Text.assemble(
        ("leakbench check ", "bold"),
        rec["pair"],
        ": ",
        (word, style),
        f" · {in_words.number(decision.of(rec))}",
    )
    kind = d.get("target_kind")
    about = f"{rec['repetition']}" + (f" ({kind} target)" if kind else "")
    m = rec["metrics"] or {}
    peak = m.get(metrics.PEAK.key)
    facts = [
        about,
        f"signals: {', '.join(rec['signals']) or 'none'}",
        f"memory signal: {m.get('growth_basis') or '—'}",
        f"peak above baseline: {format_bytes(peak, unit=MIB)}",
        f"{rec['seconds']:.1f} s",
    ]
    return [head, Text(" · ".join(facts))]  # an error's one line goes to stderr (cli)


def _series(m: dict) -> list:
    """The series table (slope, interval, trend p) and the peak's scaling; none without metrics."""
    if not m:
        return []
    t = Table(
        title="series (Theil–Sen slope per repetition, 95 % interval, trend p)",
        title_justify="left",
    )
    for h in ("series", "slope", "interval", "p", "unit"):
        t.add_column(h, justify="left" if h in ("series", "unit") else "right")
    for metric in CHECK_SERIES:
        found = m.get(metric.key)
        if not found:
            continue
        t.add_row(
            metric.label,
            metric.display(found["slope"]),
            f"{metric.display(found['low'])} … {metric.display(found['high'])}",
            f"{found['p_increasing']:.3f}",
            metric.shown,
        )
    scaling = m.get("peak_scaling")
    if scaling and scaling.get("exponent") is not None:
        peaks = ", ".join(
            format_bytes(p, unit=MIB, digits=0, label=False) for p in scaling["peaks_bytes"]
        )
        t.add_row("peak ∝ size^k", f"k = {scaling['exponent']:.2f}", f"peaks {peaks} MiB", "", "")
    return [t]


def _types(types: list, m: dict) -> list:
    """The table of the Python types that grew, or the line saying none did."""
    out: list = []
    if types:
        t = Table(
            title="Python types that grew (per rep: the least over the repetitions and each half)",
            title_justify="left",
        )
        for h in ("type", "per rep", "baseline", "middle", "end"):
            t.add_column(h, justify="left" if h == "type" else "right")
        for item in types:
            middle = item.get("middle")  # records made before the middle count have none
            t.add_row(
                escape(item["type"]),
                f"+{item['per_repetition']:,.1f}",
                f"{item['baseline']:,}",
                "—" if middle is None else f"{middle:,}",
                f"{item['end']:,}",
            )
        out.append(t)
    elif m:
        out.append(
            Text(
                f"Python types that grew: none (≥ {TYPE_GROWTH_MIN:g} objects/repetition over the "
                "repetitions and over each half)"
            )
        )
    return out


def _attribution(att: dict) -> list:
    """The buffered bytes per tf.data transformation and the stage holding the most."""
    out: list = []
    if "na" in att:
        out.append(Text(f"buffered bytes per transformation: n/a ({att['na']})"))
    elif att:
        first, last = att["elements"]
        after = f"{first} and {last} elements" if last != first else f"{first} elements"
        t = Table(
            title=f"buffered per transformation (get_model_proto after {after})",
            title_justify="left",
        )
        for h in ("stage", "count", "buffered MiB", "elements", "growth MiB"):
            t.add_column(h, justify="left" if h == "stage" else "right")
        for s in att["stages"][:8]:
            name = s["stage"] + (f" (inputs of {s['inside']})" if s["inside"] else "")
            t.add_row(
                escape(name),
                str(s["count"]),
                format_bytes(s["buffered_bytes"], unit=MIB, label=False),
                f"{s['buffered_elements']:,}",
                format_bytes(s["growth_bytes"], unit=MIB, label=False, sign=True),
            )
        out.append(t)
        holder = att.get("holder")
        out.append(
            Text(
                f"holds the most: {holder['stage']}, "
                f"{format_bytes(holder['subtree_bytes'], unit=MIB)} with its inputs"
                if holder
                else "holds the most: nothing above 1 MiB"
            )
        )
    return out


def _stacks(stacks: list) -> list:
    """The largest live allocations at the end of memray's heap pass."""
    out: list = []
    if stacks:
        t = Table(
            title="largest live allocations at the end of the heap pass (memray, Python stacks)",
            title_justify="left",
        )
        for h in ("KiB", "allocations", "stack (innermost first)"):
            t.add_column(h, justify="right" if h != "stack (innermost first)" else "left")
        for s in stacks:
            t.add_row(
                format_bytes(s["bytes"], unit=KIB, digits=0, label=False),
                f"{s['allocations']:,}",
                escape(
                    " ← ".join(s["frames"][:4])
                    or "no Python frame (allocated by a TensorFlow thread)"
                ),
            )
        out.append(t)
    return out


def _growing(growing: list) -> list:
    """The allocation sites that grew in the heap pass, the user's frame first."""
    out: list = []
    if growing:
        t = Table(
            title=(
                "allocation sites that grew in the heap pass "
                "(memray; your code first, the library's "
                "innermost frames as context)"
            ),
            title_justify="left",
        )
        for h in ("KiB/rep", "KiB at the end", "your code", "allocated in (context)"):
            t.add_column(h, justify="right" if h.startswith("KiB") else "left")
        for g in growing:
            context = [f for f in g["frames"] if f != g["user_frame"]][:3]
            t.add_row(
                format_bytes(g["bytes_per_rep"], unit=KIB, label=False, sign=True),
                format_bytes(
                    g["bytes"][-1] if g["bytes"] else None, unit=KIB, digits=0, label=False
                ),
                escape(g["user_frame"] or "— (no frame of your code)"),
                escape(" ← ".join(context) or "no Python frame (allocated by a TensorFlow thread)"),
            )
        out.append(t)
    return out


def _chain(d: dict) -> list:
    """What keeps the type that grew alive (the reference chain), or why it is not there."""
    out: list = []
    chain = d.get("reference_chain") or {}
    if chain.get("chain"):
        out.append(
            Text(
                f"kept alive ({chain['type']}, found in {chain['seconds']:.1f} s): "
                + " → ".join(chain["chain"])
            )
        )
    elif chain.get("na") and d.get("types"):
        out.append(Text(f"kept alive: n/a ({chain['na']})"))
    return out


def check_summary(rec: Record) -> str:
    """Plain text of a check record's verdict, slopes and hints (for assertion messages)."""
    m = rec["metrics"] or {}
    parts = [
        f"{rec['pair']}: {rec['verdict']}"
        + (f" in {rec['phase']}" if rec.get("phase") else "")
        + f" · {in_words.number(decision.of(rec))}"
    ]
    if error := rec.get("error"):
        parts.append(f"error: {error.strip().splitlines()[-1]}")
    parts.append(f"signals: {', '.join(rec['signals']) or 'none'}")
    parts += [f"{key}: {look['why']}" for key, look in protocol.longer_looks(rec)]
    for metric in CHECK_SERIES:
        if m.get(metric.key):
            parts.append(f"{metric.label} {metric.display(m[metric.key]['slope'])} {metric.shown}")
    parts += [f"hint: {h}" for h in (rec.get("diagnosis") or {}).get("hints", [])]
    return "\n".join(parts)
