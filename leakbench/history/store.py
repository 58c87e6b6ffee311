"""Records per TensorFlow version: store them, check the pin, compare, tabulate.

asv's results JSON holds numbers only, so the asv suite (benchmarks/) also
writes the full leakbench records of each environment to

    results/records/<machine>/tf-<version>.jsonl     one record (leakbench.analysis.record) per line

where <machine> is asv's machine name, as in asv's own results/<machine>/
(a record measured on one machine is never compared with another's numbers
by accident). `leakbench compare OLD NEW` and `leakbench matrix` read those
files, from the only machine present or the one named (--machine). Nothing
here imports TensorFlow: the version an environment asked for is what pip
reports (importlib.metadata), the version a measurement used is what the
child saw (record["environment"]["tensorflow"]).

Checks return data (lists of rows and failures); rendering is separate
(`compare_markdown`, `matrix_markdown`), and the CLI only chooses between them.
"""
from __future__ import annotations

import json
import os
import platform
import re
from dataclasses import asdict, dataclass, replace
from importlib import metadata
from pathlib import Path

from leakbench import catalog
from leakbench.analysis import verdict
from leakbench.analysis.record import SCHEMA
from leakbench.units import KIB, MIB

DEFAULT_FACTOR = 1.5
RECORDS_DIR = "records"
_FILE = re.compile(r"tf-(.+)\.jsonl")
_REQUIRED = ("schema", "pair", "variant", "verdict", "metrics", "environment")
# Distributions that provide the `tensorflow` module, in the order we ask pip.
TF_DISTRIBUTIONS = ("tensorflow-cpu", "tensorflow", "tensorflow-intel", "tensorflow-macos")


class VersionError(ValueError):
    """Bad input for compare/matrix, or a TensorFlow pin that did not hold. One line."""


# --- the pin ---------------------------------------------------------------

def installed_tf_version() -> str | None:
    """The TensorFlow version pip installed in this interpreter's environment (no import)."""
    for dist in TF_DISTRIBUTIONS:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def check_tf_version(records: list[dict], expected: str | None) -> None:
    """Raise VersionError unless every record's TensorFlow is `expected`.

    `expected` is the environment's pin (installed_tf_version()); a record's
    version is the `tf.__version__` its child process imported. A mismatch
    means pip replaced the pin, or the child ran another interpreter: every
    number measured would be filed under the wrong release.
    """
    if not expected:
        raise VersionError("no TensorFlow distribution installed in this environment "
                           f"(looked for {', '.join(TF_DISTRIBUTIONS)})")
    for rec in records:
        seen = (rec.get("environment") or {}).get("tensorflow")
        if seen is None and rec.get("verdict") in ("error", "hang", "over-cap"):
            continue  # the child died before reporting its versions; its verdict says so
        if seen != expected:
            raise VersionError(f"{rec.get('pair')} ({rec.get('variant')}) imported TensorFlow {seen}, "
                               f"but this environment pins {expected}: the pin did not hold")


# --- record files ------------------------------------------------------------

def asv_machine(results: Path) -> str:
    """The asv machine name the running asv suite files its results under.

    asv does not tell a benchmark its machine, so, in order: $ASV_MACHINE (set
    it with `asv run --machine NAME`; the GitHub workflow does); else the
    machine whose results/<machine>/machine.json was written last (`asv run`
    rewrites it as it starts, before any benchmark runs); else asv's default
    name, the host name (platform.uname().node).
    """
    if os.environ.get("ASV_MACHINE"):
        return os.environ["ASV_MACHINE"]
    written = sorted(Path(results).glob("*/machine.json"), key=lambda p: p.stat().st_mtime)
    return written[-1].parent.name if written else platform.uname().node


def records_path(results: Path, machine: str, version: str) -> Path:
    return Path(results) / RECORDS_DIR / machine / f"tf-{version}.jsonl"


def write_records(results: Path, machine: str, version: str, records: list[dict]) -> Path:
    """Store one environment's records under its machine: replace those of the
    same pair and variant, keep the others, rewrite the file atomically (a
    rerun never appends duplicates; a run of a few pairs does not drop the rest)."""
    if not machine or machine in (".", "..") or "/" in machine or os.sep in machine:
        raise VersionError(f"{machine!r} is not an asv machine name usable as a folder")
    path = records_path(results, machine, version)
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = {}
    if path.is_file():
        try:
            kept = {(r["pair"], r["variant"]): r for r in read_records(path)}
        except VersionError:
            kept = {}  # a corrupt file is replaced whole
    for rec in records:
        kept[(rec["pair"], rec["variant"])] = rec
    tmp = path.with_suffix(".jsonl.tmp")
    with open(tmp, "w") as f:
        for key in sorted(kept):
            f.write(json.dumps(kept[key]) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def record_pairs(root: Path, names: list[str], settings, results: Path | None = None, machine: str | None = None,
                 flamegraph_dir: str | None = None) -> tuple[str | None, list[dict], Path | None]:
    """Measure each pair's leaky and fixed variant with the engine, check the pin, file the records.

    root: the checkout holding scenarios/ and fixes/; names: pair names (all
    pairs when empty, as catalog.targets). settings: a leakbench.engine.measure.Settings
    (cap in bytes, timeout in seconds, per child run); each variant is measured
    at its scenario's parameters. flamegraph_dir: where memray draws the leaky
    variants' flame graphs (the fixed ones get none); None draws none.

    Each record is checked against the environment's pin (installed_tf_version)
    as soon as it is measured, so a pin that did not hold stops the sweep at the
    first child and nothing of this call is filed. Then, when `results` is given,
    all the records are written at once (write_records) under `machine`, or
    under asv_machine(results) when None.

    Returns (the pinned TensorFlow version, the records in measurement order,
    the records file written or None). Raises VersionError (no TensorFlow
    installed, a pin that did not hold, a machine name that is no folder) and
    contract.ContractError (an unknown pair, a scenario without the contract).
    """
    from leakbench.engine import measure as engine  # imported here: compare and matrix do not need the runner

    pinned = installed_tf_version()
    records = []
    for target in catalog.targets(Path(root), list(names), "both"):
        drawn = flamegraph_dir if target.variant == "leaky" else None
        rec = engine.measure(target, dict(target.scenario.params),
                             replace(settings, flamegraph_dir=drawn) if drawn else settings)
        check_tf_version([rec], pinned)  # fail at the first child, not after all of them
        records.append(rec)
    if results is None:
        return pinned, records, None
    path = write_records(results, machine or asv_machine(results), pinned, records)
    return pinned, records, path


def read_records(path: Path) -> list[dict]:
    """Records of one file. Raises VersionError for a file that is not leakbench records."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise VersionError(f"cannot read {path}: {e.strerror}") from None
    found = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise VersionError(f"{path}, line {n}: corrupt JSON ({e.msg})") from None
        if not isinstance(rec, dict) or any(k not in rec for k in _REQUIRED):
            raise VersionError(f"{path}, line {n}: not a leakbench record "
                               f"(needs {', '.join(_REQUIRED)})")
        if rec["schema"] != SCHEMA:
            raise VersionError(f"{path}, line {n}: record schema {rec['schema']}, "
                               f"this leakbench reads schema {SCHEMA}")
        found.append(rec)
    if not found:
        raise VersionError(f"{path}: holds no records")
    return found


def version_key(version: str) -> tuple:
    """'2.9.1' < '2.12.1': compare numerically, text parts after."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"[.+-]", version))


def _version_files(folder: Path) -> dict[str, Path]:
    return {m.group(1): p for p in folder.glob("tf-*.jsonl") if (m := _FILE.fullmatch(p.name))}


def machines(results: Path) -> list[str]:
    """asv machine names with records in `results` (folders of records/ holding tf-<version>.jsonl)."""
    folder = Path(results) / RECORDS_DIR
    if not folder.is_dir():
        return []
    return sorted(d.name for d in folder.iterdir() if d.is_dir() and _version_files(d))


def pick_machine(results: Path, machine: str | None = None) -> str:
    """`machine` if `results` holds its records, else the only machine there.

    Raises VersionError (one line) when there is none, when `machine` is not
    there, or when several are there and none was named.
    """
    results = Path(results)
    if not results.is_dir():
        raise VersionError(f"no results directory at {results}")
    found = machines(results)
    if not found:
        if _version_files(results / RECORDS_DIR):
            raise VersionError(f"{results / RECORDS_DIR} holds records without a machine folder "
                               f"(the layout before {RECORDS_DIR}/<machine>/tf-<version>.jsonl): "
                               f"move them into {RECORDS_DIR}/<asv machine name>/")
        raise VersionError(f"{results} holds no leakbench records ({RECORDS_DIR}/<machine>/tf-<version>.jsonl): "
                           "run the asv suite first, or pass --results")
    if machine is None:
        if len(found) > 1:
            raise VersionError(f"{results} holds records of {len(found)} machines ({', '.join(found)}): "
                               "pick one with --machine")
        return found[0]
    if machine not in found:
        raise VersionError(f"no records of machine {machine!r} in {results} (have: {', '.join(found)})")
    return machine


def available(results: Path, machine: str | None = None) -> dict[str, Path]:
    """TF version -> records file of one machine in `results` (pick_machine), sorted by version.

    Raises VersionError when `results` is not a directory of leakbench records.
    """
    folder = Path(results) / RECORDS_DIR / pick_machine(results, machine)
    return dict(sorted(_version_files(folder).items(), key=lambda kv: version_key(kv[0])))


def resolve(results: Path, what: str, machine: str | None = None) -> tuple[str, list[dict]]:
    """A label and the records for `what`: a TF version in `results` (of `machine`), or a records file."""
    path = Path(what)
    if what.endswith(".jsonl") or path.is_file():
        if not path.is_file():
            raise VersionError(f"no records file at {path}")
        recs = read_records(path)
        return recs[0]["environment"].get("tensorflow") or path.stem, recs
    files = available(results, machine)
    if what not in files:
        raise VersionError(f"TensorFlow {what} is not in {results} (have: {', '.join(files)})")
    return what, read_records(files[what])


# --- compare ---------------------------------------------------------------

@dataclass(frozen=True)
class Metric:
    """A compared metric: where it is in a record, how to show it, and the
    smallest change that counts (below it a ratio is noise: 4 → 12 bytes per
    repetition is 3×, and nothing)."""

    key: str
    label: str
    unit: str
    scale: float
    floor: float


# malloc_trim gave back 0–16 MiB at the end of every pair but shuffle_fragmentation
# (317.7 MiB) in the TF 2.21.0 record, leaking or not: a change below this is the
# allocator's noise, not fragmentation.
TRIM_FLOOR = 8 * MIB

METRICS = (
    Metric("peak_above_baseline_bytes", "peak above baseline", "MiB", MIB, verdict.PEAK_RISE_MIN / 2),
    Metric("held_growth", "held memory growth", "KiB/rep", KIB, verdict.HELD_SLOPE_MIN / 2),
    Metric("rss_growth", "RSS growth", "KiB/rep", KIB, verdict.RSS_SLOPE_MIN / 2),
    Metric("malloc_heap_growth", "malloc heap growth", "KiB/rep", KIB, verdict.RSS_SLOPE_MIN / 2),
    Metric("trim_returned_bytes", "returned by malloc_trim", "MiB", MIB, TRIM_FLOOR),
    Metric("retained_heap", "retained heap", "KiB/rep", KIB, verdict.HEAP_SLOPE_MIN / 2),
    Metric("threads_growth", "threads", "/rep", 1.0, verdict.COUNT_SLOPE_MIN / 2),
    Metric("python_objects_growth", "Python objects", "/rep", 1.0, verdict.OBJECT_SLOPE_MIN / 2),
    Metric("seconds_per_repetition", "seconds", "s/rep", 1.0, 0.05),
)
REGRESSED, IMPROVED, CHANGED = "regressed", "improved", "changed"


def _order(key: tuple) -> tuple:
    """(pair, variant) keys by pair, the leaky variant before its fix."""
    pair, variant = key
    return pair, variant != "leaky", variant


def metric_value(rec: dict | None, key: str) -> float | None:
    """A metric of a record as a number (a slope for growth metrics), None if absent."""
    if rec is None:
        return None
    found = (rec.get("metrics") or {}).get(key)
    if isinstance(found, dict):
        found = found.get("slope")
    return None if found is None else float(found)


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
    rows: list            # dicts: pair, variant, metric, unit, old, new, ratio, marker
    failures: list        # one line each: why compare exits 1
    machine: str | None = None  # asv machine of both record files (None: files given by path)

    @property
    def exit_code(self) -> int:
        return 1 if self.failures else 0

    def as_dict(self) -> dict:
        return {**asdict(self), "exit_code": self.exit_code}


FRAGMENTATION_NOTE = ("fragmentation: RSS grew but nothing was held (held memory, memray's heap, threads, "
                      "open files and Python objects stayed flat) and malloc_trim gave the memory back: freed "
                      "memory the allocator kept, not a leak.")
SKIPPED_NOTE = "skipped: the pair needs a device this machine lacks (REQUIRES in the scenario); nothing measured."


def _verdict_change(variant: str, old: str, new: str) -> str | None:
    """Why a changed verdict fails compare, or None when it does not (a skip measured nothing)."""
    if "skipped" in (old, new):
        return None
    if variant == "fixed" and new in ("leak", "over-cap"):
        return ": the fix leaks again"
    if variant == "fixed" and new == "fragmentation":
        return ": RSS grows, but malloc_trim gives it back (fragmentation, not a leak)"
    return ""


def compare(old_label: str, old: list[dict], new_label: str, new: list[dict],
            factor: float = DEFAULT_FACTOR, machine: str | None = None) -> Comparison:
    """Per pair, variant and metric: old, new, ratio, marker; and the failures:
    a verdict that changed (not to or from `skipped`: nothing was measured), a
    fixed variant whose peak regressed past `factor`."""
    if factor <= 1:
        raise VersionError(f"--factor must be above 1, got {factor}")
    olds = {(r["pair"], r["variant"]): r for r in old}
    news = {(r["pair"], r["variant"]): r for r in new}
    rows, failures = [], []
    for pair, variant in sorted(set(olds) | set(news), key=_order):
        a, b = olds.get((pair, variant)), news.get((pair, variant))
        base = {"pair": pair, "variant": variant}
        va, vb = a and a["verdict"], b and b["verdict"]
        changed = a is not None and b is not None and va != vb
        rows.append({**base, "metric": "verdict", "unit": None, "old": va, "new": vb, "ratio": None,
                     "marker": CHANGED if changed else ("" if a and b else f"only in {'old' if a else 'new'}")})
        why = _verdict_change(variant, va, vb) if changed else None
        if why is not None:
            failures.append(f"{pair} ({variant}): verdict {va} → {vb}{why}")
        if {va, vb} <= {"skipped", None}:
            continue  # nothing measured on either side: no numbers to set side by side
        for m in METRICS:
            x, y = metric_value(a, m.key), metric_value(b, m.key)
            marker = mark(x, y, factor, m.floor)
            ratio = y / x if x is not None and y is not None and x > 0 and y >= 0 else None
            rows.append({**base, "metric": m.label, "unit": m.unit,
                         "old": x, "new": y, "ratio": ratio, "marker": marker})
            if marker == REGRESSED and variant == "fixed" and m.key == "peak_above_baseline_bytes":
                failures.append(f"{pair} (fixed): peak above baseline {x / MIB:,.1f} → {y / MIB:,.1f} MiB, "
                                f"past {factor:g}×")
    return Comparison(old_label, new_label, factor, rows, failures, machine)


def _number(value, scale: float) -> str:
    if value is None:
        return "—"
    v = value / scale
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.2f}" if abs(v) < 10 else f"{v:,.1f}"


def compare_markdown(c: Comparison) -> str:
    scales = {m.label: m.scale for m in METRICS}
    lines = [f"## leakbench compare: TensorFlow {c.old} → {c.new} (marker past {c.factor:g}×)", ""]
    if c.machine:
        lines += [f"Records of asv machine `{c.machine}`.", ""]
    lines += [f"| pair | variant | metric | {c.old} | {c.new} | ratio | |",
             "|---|---|---|---:|---:|---:|---|"]
    for r in c.rows:
        if r["metric"] == "verdict":
            old, new, label = r["old"] or "—", r["new"] or "—", "verdict"
        else:
            old, new = _number(r["old"], scales[r["metric"]]), _number(r["new"], scales[r["metric"]])
            label = f"{r['metric']} ({r['unit']})"
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}×"
        marker = {REGRESSED: "▲ regressed", IMPROVED: "▼ improved", CHANGED: "**changed**"}.get(
            r["marker"], r["marker"])
        lines.append(f"| {r['pair']} | {r['variant']} | {label} | {old} | {new} | {ratio} | {marker} |")
    lines.append("")
    words = {r[side] for r in c.rows if r["metric"] == "verdict" for side in ("old", "new")}
    notes = [note for word, note in (("fragmentation", FRAGMENTATION_NOTE), ("skipped", SKIPPED_NOTE))
             if word in words]
    lines += [" ".join(notes), ""] if notes else []
    if c.failures:
        lines.append(f"**{len(c.failures)} failure(s)** (exit 1):")
        lines += [f"- {f}" for f in c.failures]
    else:
        lines.append("No verdict changed and no fixed variant's peak regressed (exit 0).")
    return "\n".join(lines)


# --- matrix ----------------------------------------------------------------

def matrix(results: Path, machine: str | None = None) -> dict:
    """The pair × TF version table of verdicts and growth, from every records file
    of one machine in `results` (pick_machine)."""
    machine = pick_machine(results, machine)
    files = available(results, machine)
    by_version = {v: {(r["pair"], r["variant"]): r for r in read_records(p)} for v, p in files.items()}
    keys = sorted({k for recs in by_version.values() for k in recs}, key=_order)
    if not keys:
        raise VersionError(f"{results}: the matrix is empty")
    rows = []
    for pair, variant in keys:
        cells = {}
        for version, recs in by_version.items():
            rec = recs.get((pair, variant))
            if rec is None:
                cells[version] = None
                continue
            scaling = (rec.get("metrics") or {}).get("peak_scaling") or {}
            cells[version] = {
                "verdict": rec["verdict"],
                "expected": verdict.expected_ok(rec, verdict.expected_for(variant, rec.get("reported"))),
                "kind": rec.get("kind"),
                "rss_growth_bytes_per_rep": metric_value(rec, "rss_growth"),
                "held_growth_bytes_per_rep": metric_value(rec, "held_growth"),  # None in records before it
                "peak_above_baseline_bytes": metric_value(rec, "peak_above_baseline_bytes"),
                "peak_exponent": scaling.get("exponent"),
                "malloc_heap_growth_bytes_per_rep": metric_value(rec, "malloc_heap_growth"),
                "trim_returned_bytes": metric_value(rec, "trim_returned_bytes"),
                "signals": rec.get("signals", []),
                "skip_reason": rec.get("skip_reason"),
            }
        rows.append({"pair": pair, "variant": variant, "cells": cells})
    return {"machine": machine, "versions": list(by_version), "rows": rows}


def _cell(cell: dict | None) -> str:
    if cell is None:
        return "—"
    word = cell["verdict"] if cell["expected"] else f"**{cell['verdict']}**"
    if not cell["expected"] and cell["signals"]:
        word += f" ({', '.join(cell['signals'])})"  # which signal moved, where it should not have
    if cell["kind"] == "peak" and cell["peak_exponent"] is not None:
        word += f" k={cell['peak_exponent']:.2f}"
    elif cell.get("held_growth_bytes_per_rep") is not None:
        word += f" {cell['held_growth_bytes_per_rep'] / KIB:+,.0f}"
    elif cell["rss_growth_bytes_per_rep"] is not None:
        word += f" {cell['rss_growth_bytes_per_rep'] / KIB:+,.0f}"
    if cell["verdict"] == "fragmentation" or not cell["expected"]:  # the evidence for leak vs fragmentation
        if cell.get("malloc_heap_growth_bytes_per_rep") is not None:
            word += f" · malloc {cell['malloc_heap_growth_bytes_per_rep'] / KIB:+,.0f}"
        if cell.get("trim_returned_bytes") is not None:
            word += f" · trim {cell['trim_returned_bytes'] / MIB:,.1f} MiB"
    return word


def matrix_markdown(m: dict) -> str:
    where = f" (asv machine `{m['machine']}`)" if m.get("machine") else ""
    lines = [f"## leakbench matrix: verdict per TensorFlow version{where}", "",
             "Growth pairs: held memory's growth (anonymous RSS less malloc's free bytes; RSS in records "
             "made before it) in KiB/repetition. Peak pairs: k in peak ∝ size^k. "
             "**Bold**: not the expected verdict (a scenario that does not leak, a fix that does; "
             "a scenario whose report ties its leak to some releases, REPORTED, may read either). "
             "Cells reading fragmentation, and bold ones, add glibc's malloc heap growth (KiB/repetition) "
             "and what malloc_trim gave back at the end (MiB).", ""]
    words = {c["verdict"] for row in m["rows"] for c in row["cells"].values() if c}
    notes = [note for word, note in (("fragmentation", FRAGMENTATION_NOTE), ("skipped", SKIPPED_NOTE))
             if word in words]
    lines += [" ".join(notes), ""] if notes else []
    lines += ["| pair | variant | " + " | ".join(m["versions"]) + " |",
              "|---|---|" + "---|" * len(m["versions"])]
    for row in m["rows"]:
        cells = [_cell(row["cells"][v]) for v in m["versions"]]
        lines.append(f"| {row['pair']} | {row['variant']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
