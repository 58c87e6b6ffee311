"""The static site: the leak matrix and one lesson per pair, from results/.

`leakbench site` reads the records the asv suite stores
(results/records/<machine>/tf-<version>.jsonl, through leakbench.history.store) and the pair
files (scenarios/X.py, fixes/X.py), and writes into one folder:

    index.html            the matrix: pairs × TF versions, verdict and growth
                          of the leaky and the fixed variant, filter by seed source
    repeatability.html    how often each verdict repeats: a table per
                          results/repeatability/<machine>-tf-*.json (leakbench.repeat.run),
                          only when there is one
    lessons/<pair>.html   what goes wrong, the two files side by side (differing
                          lines marked), memory over repetitions (inline SVG),
                          peak and growth per TF version, how to see it yourself
    flamegraphs/tf-<v>/<pair>-leaky.html
                          memray's flame graph of the leaky run's retained
                          allocations, copied from results/flamegraphs/
    style.css
    asv/                  `asv publish` of the same results (optional)
    vendor/               local copies of the libraries asv's pages and memray's
                          flame graphs load from CDNs (leakbench.site.vendor)

Every link is relative, so the folder works from file:// and from any static
server (asv's pages read their JSON with XMLHttpRequest: they need a server).
A rebuild replaces all of the above, so a pair removed from scenarios/ leaves
no lesson behind. Templates autoescape: all text from scenario files and
records is escaped. Nothing here imports TensorFlow or runs a scenario.
"""
from __future__ import annotations

import ast
import difflib
import io
import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape

from leakbench import catalog, contract
from leakbench.site import vendor as assets
from leakbench.repeat import run as repeat
from leakbench.reporters import repeatability as repeat_report
from leakbench.analysis import verdict
from leakbench.history import store as versions
from leakbench.units import KIB, MIB

DEFAULT_TF = "2.21.0"
FLAMEGRAPHS = "flamegraphs"   # results/flamegraphs/tf-<version>/<pair>-leaky.html, and the site's copies
REPEATABILITY = "repeatability.html"
ISSUE_URL = "https://github.com/{repo}/issues/{number}"
_REPORT = re.compile(r"\b([\w.-]+/[\w.-]+)#(\d+)\b")
_SAFE_NAME = re.compile(r"[A-Za-z0-9_-]+")

# What each signal means in your own pipeline (verdict.GROWTH_SIGNALS' names, and "peak").
SIGNAL_HELP = {
    "rss": "resident memory (RSS) grows with every repetition",
    "malloc heap": "the bytes glibc malloc has in use grow: memory is allocated and still referenced",
    "heap": "memray's retained heap grows: Python-visible allocations stay alive",
    "threads": "the thread count grows: live iterators (each holds its own threads) are never freed",
    "open files": "open file descriptors grow: readers are never closed",
    "peak": "the peak above baseline scales with the size parameter: memory is bounded per run "
            "but proportional to the data, so a larger dataset runs out of memory",
}


class SiteError(ValueError):
    """The site cannot be built (no records, a bad output folder). One line."""


@dataclass
class Built:
    """What a build wrote: pages (path relative to out, bytes), seconds, notes."""

    out: Path
    pages: list = field(default_factory=list)
    seconds: float = 0.0
    asv: str = ""          # "asv/index.html" when asv publish ran, else ""
    asv_offline: bool = False  # asv's pages load their libraries from vendor/, not from CDNs
    notes: list = field(default_factory=list)
    vendored: list = field(default_factory=list)  # third-party files copied (leakbench.site.vendor)


# --- data ----------------------------------------------------------------------

def default_version(found: list[str]) -> str:
    """DEFAULT_TF if it was measured, else the newest version present."""
    return DEFAULT_TF if DEFAULT_TF in found else found[-1]


def source_link(source: str) -> str | None:
    """'owner/repo#123' -> its GitHub issue address; None for a seed source word."""
    match = _REPORT.fullmatch(source or "")
    return match and ISSUE_URL.format(repo=match.group(1), number=match.group(2))


def prose(text: str) -> Markup:
    """A docstring as escaped HTML paragraphs: `code` and owner/repo#N reports linked."""
    out = []
    for para in re.split(r"\n\s*\n", (text or "").strip()):
        if not para.strip():
            continue
        html = str(escape(" ".join(line.strip() for line in para.splitlines())))
        html = re.sub(r"`([^`]+)`", r"<code>\1</code>", html)
        html = _REPORT.sub(lambda m: f'<a href="{ISSUE_URL.format(repo=m.group(1), number=m.group(2))}">'
                                     f"{m.group(0)}</a>", html)
        out.append(f"<p>{html}</p>")
    return Markup("\n".join(out))


def side_by_side(leaky: str, fixed: str) -> tuple[list, list]:
    """Lines of both files as (number, text, changed) with difflib's differing lines marked."""
    a, b = leaky.splitlines(), fixed.splitlines()
    marked_a, marked_b = set(), set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            marked_a.update(range(i1, i2))
            marked_b.update(range(j1, j2))
    return ([(n + 1, line, n in marked_a) for n, line in enumerate(a)],
            [(n + 1, line, n in marked_b) for n, line in enumerate(b)])


def short_diff(leaky: str, fixed: str) -> list[tuple[str, str]]:
    """Only the differing lines, as (css class, text): "del" leaky, "ins" fixed, "hunk" a location."""
    found = []
    for line in difflib.unified_diff(leaky.splitlines(), fixed.splitlines(), lineterm="", n=0):
        if line.startswith(("---", "+++")):
            continue
        kind = {"@": "hunk", "-": "del", "+": "ins"}.get(line[:1], "")
        found.append((kind, line))
    return found


def _pair_file(root: Path, variant: str, pair: str) -> tuple[str | None, contract.Scenario | None]:
    path = root / catalog.VARIANT_DIRS[variant] / f"{pair}.py"
    if not path.is_file():
        return None, None
    text = path.read_text()
    try:
        meta = contract.read_metadata(path)
    except contract.ContractError:
        meta = None
    return text, meta


def _kib(value) -> str:
    return "—" if value is None else f"{value / KIB:+,.0f}"


def _mib(value) -> str:
    return "—" if value is None else f"{value / MIB:,.1f}"


def _count(value) -> str:
    return "—" if value is None else f"{value:+,.1f}"


def _css(word: str) -> str:
    """A verdict's CSS class (style.css has one per verdict.VERDICTS word)."""
    return f"v-{word}" if word in verdict.VERDICTS else "v-unknown"


def cell_view(cell: dict | None) -> dict | None:
    """A matrix cell (versions.matrix) as the page shows it: verdict, class, number."""
    if cell is None:
        return None
    word = cell["verdict"]
    if cell["kind"] == "peak" and cell["peak_exponent"] is not None:
        number = f"k={cell['peak_exponent']:.2f}"
    elif cell.get("held_growth_bytes_per_rep") is not None:
        number = _kib(cell["held_growth_bytes_per_rep"])
    elif cell["rss_growth_bytes_per_rep"] is not None:
        number = _kib(cell["rss_growth_bytes_per_rep"])
    else:
        number = ""
    return {"verdict": word, "css": _css(word),
            "expected": cell["expected"], "number": number, "signals": ", ".join(cell["signals"])}


def _verdict_view(rec: dict | None) -> dict | None:
    if not rec:
        return None
    return {"verdict": rec["verdict"], "css": _css(rec["verdict"])}


def version_row(version: str, recs: dict) -> dict:
    """Peak and growth of both variants of a pair on one TF version (a lesson's table row)."""
    row = {"version": version}
    for variant in ("leaky", "fixed"):
        rec = recs.get(variant)
        scaling = ((rec or {}).get("metrics") or {}).get("peak_scaling") or {}
        row[variant] = rec and {
            **_verdict_view(rec),
            "peak": _mib(versions.metric_value(rec, "peak_above_baseline_bytes")),
            "rss": _kib(versions.metric_value(rec, "rss_growth")),
            "held": _kib(versions.metric_value(rec, "held_growth")),
            "malloc": _malloc_growth(rec),
            "malloc_na": malloc_unavailable(rec),
            "heap": _kib(versions.metric_value(rec, "retained_heap")),
            "threads": _count(versions.metric_value(rec, "threads_growth")),
            "k": "—" if scaling.get("exponent") is None else f"{scaling['exponent']:.2f}",
            "signals": ", ".join(rec.get("signals") or []) or "—",
        }
    return row


def malloc_unavailable(rec: dict | None) -> str | None:
    """Why a record's malloc heap is n/a (probes.malloc_heap_unavailable, as the record keeps it), else None."""
    if not rec:
        return None
    run = (rec.get("runs") or [{}])[0]
    return run.get("malloc_heap_unavailable") or (rec.get("metrics") or {}).get("malloc_heap_unavailable")


def _malloc_growth(rec: dict) -> str:
    """glibc's bytes in use, KiB/repetition: heap plus mmapped chunks (records before mmap_used: heap_used only)."""
    if malloc_unavailable(rec):
        return "n/a"
    found = versions.metric_value(rec, "malloc_heap_growth")
    return _kib(found if found is not None else versions.metric_value(rec, "heap_used_growth"))


# --- repeatability -----------------------------------------------------------------

def repeatability(results: Path, machine: str, lessons: set[str], notes: list) -> list[dict]:
    """The tables of repeatability.html: one per results/repeatability/<machine>-tf-*.json that
    leakbench.repeat.run wrote for `machine` (one TF version, one --jobs setting), sorted by TF
    version then jobs; [] when there is none. Cells are repeat_report's; a row's pair links its
    lesson when it has one (`lessons`). A file that is no repeatability result of `machine` is
    left out, with a line in `notes`."""
    tables = []
    for path in sorted((Path(results) / repeat.FOLDER).glob(f"{machine}-tf-*.json")):
        try:
            result = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            notes.append(f"{path.name} skipped: cannot be read as JSON ({getattr(e, 'msg', None) or e})")
            continue
        if not isinstance(result, dict) or result.get("format") != repeat.FORMAT or "summary" not in result:
            notes.append(f"{path.name} skipped: not a repeatability result of format {repeat.FORMAT}")
            continue
        if result.get("machine") != machine:
            notes.append(f"{path.name} skipped: measured on machine {result.get('machine')!r}, not {machine!r}")
            continue
        head, rows = repeat_report.table(result)
        jobs, summary = result["jobs"], result["summary"]
        planned = result["runs_requested"] * summary["variants"]
        tables.append({
            "id": path.stem[len(machine) + 1:], "file": path.name, "version": result.get("tensorflow") or "none",
            "jobs": jobs,
            "title": f"TensorFlow {repeat_report.tensorflow(result)}, {jobs} {'child' if jobs == 1 else 'children'} "
                     "at a time",
            "about": repeat_report.about(result), "totals": repeat_report.totals(result),
            "runs_per_variant": result["runs_requested"], "runs": summary["runs"], "planned": planned, "head": head,
            "rows": [{**row, "expected_css": _css(row["expected"]),
                      "verdicts": [(word, n, _css(word)) for word, n in row["verdicts"]],
                      "href": f"lessons/{row['pair']}.html" if row["pair"] in lessons else None}
                     for row in rows]})
    return sorted(tables, key=lambda t: (versions.version_key(t["version"]), t["jobs"]))


def pair_repeatability(tables: list[dict], name: str) -> list[dict]:
    """A lesson's share of the repeatability tables: per table that has the pair, its id, title and rows."""
    found = []
    for table in tables:
        rows = [row for row in table["rows"] if row["pair"] == name]
        if rows:
            found.append({"id": table["id"], "title": table["title"], "rows": rows})
    return found


# --- the memory chart ------------------------------------------------------------

# (series key, panel title, scale) in the order drawn, two by two
PANELS = (("rss", "RSS (MiB)", MIB), ("malloc", "malloc heap in use (MiB)", MIB),
          ("heap", "memray heap (MiB)", MIB), ("threads", "threads", 1))

def memory_svg(series: dict) -> list[Markup] | None:
    """RSS, malloc heap, memray heap (MiB) and threads over repetitions of both variants:
    one inline SVG per panel (two by two on a wide screen, one above the other on a phone).

    series: variant -> {"rss": [...bytes], "malloc": [...bytes], "heap": [...bytes], "threads": [...],
    "malloc_na": why the malloc heap is n/a, or None}. A variant whose malloc heap is n/a is
    named in its panel ("n/a"); the reason is the page's to print (escaped), not the SVG's.
    None when matplotlib is missing or nothing was measured.
    """
    if not any(any(found.get(key) for key, _, _ in PANELS) for found in series.values()):
        return None
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    colours = {"leaky": "#c0392b", "fixed": "#1e7b45"}
    panels = []
    for key, label, scale in PANELS:
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "leakbench", "font.size": 9,
                                    "axes.spines.top": False, "axes.spines.right": False}):
            fig, ax = plt.subplots(figsize=(4, 2.5), layout="constrained")
            missing = []
            for variant, found in series.items():
                values = [v for v in (found.get(key) or []) if v is not None]
                if key == "malloc" and found.get("malloc_na"):
                    missing.append(variant)
                elif values:
                    ax.plot(range(1, len(values) + 1), [v / scale for v in values], marker="o",
                            markersize=2.5, linewidth=1.4, color=colours.get(variant), label=variant)
            if missing:
                ax.text(0.5, 0.5, f"n/a for {' and '.join(missing)} (see below)", transform=ax.transAxes,
                        ha="center", va="center", color="#555")
            ax.set_title(label)
            ax.set_xlabel("repetition")
            ax.grid(alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(frameon=False, fontsize=8)
            buffer = io.StringIO()
            fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
            plt.close(fig)
        svg = buffer.getvalue()
        svg = svg[svg.index("<svg"):]  # drop the XML declaration and DOCTYPE: inline in HTML
        # matplotlib numbers its ids per figure (figure_1, axes_1, ...): prefix them, unique in the page
        svg = re.sub(r'(\bid="|url\(#|href="#)', rf"\g<1>{key}-", svg)
        svg = svg.replace("<svg ", f'<svg role="img" aria-label="{label} over repetitions" ', 1)
        panels.append(Markup(svg))
    return panels


def _series(rec: dict | None) -> dict:
    """The chart's series of a record's default-size run (see memory_svg)."""
    if not rec or not rec.get("runs"):
        return {}
    run = rec["runs"][0]
    found = run.get("series") or {}
    used, mapped = found.get("heap_used_bytes") or [], found.get("mmap_used_bytes")
    if mapped and len(mapped) == len(used):  # what the verdict judges: heap plus mmapped chunks
        used = [h + m if h is not None and m is not None else None for h, m in zip(used, mapped)]
    why = malloc_unavailable(rec)
    if not why and used and all(v is None for v in used):
        why = "the record has no malloc heap values"
    return {"rss": found.get("rss_bytes") or [], "threads": found.get("threads") or [],
            "malloc": used, "malloc_na": why, "heap": (run.get("heap") or {}).get("heap_bytes") or []}


# --- asv -----------------------------------------------------------------------

def publish_asv(root: Path, out: Path) -> str | None:
    """Run `asv publish` into out/asv and link its pages back to the index; None and why on failure."""
    asv = Path(sys.executable).with_name("asv")
    command = [str(asv) if asv.exists() else "asv", "publish", "--no-pull", "--html-dir", str(out / "asv")]
    try:
        done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"asv publish did not run: {e}"
    if done.returncode != 0 or not (out / "asv" / "index.html").is_file():
        last = (done.stderr or done.stdout).strip().splitlines()
        return f"asv publish failed: {last[-1] if last else done.returncode}"
    back = ('<body><div style="padding:4px 12px;font:14px sans-serif">'
            '<a href="../index.html">&larr; leakbench: leak matrix and lessons</a></div>')
    for page in (out / "asv").glob("*.html"):
        text = page.read_text()
        if "<body>" in text:
            page.write_text(text.replace("<body>", back, 1))
    return None


# --- build ------------------------------------------------------------------------

def build(results: Path, out: Path, root: Path | None = None, asv: bool = True,
          machine: str | None = None) -> Built:
    """Write the site for `results` into `out` (replacing our pages there); return what was written.

    root: the checkout holding scenarios/ and fixes/ (default: catalog.find_root()); a pair
    with records but no scenarios/ file there is left out. Without a scenarios/ folder
    (results alone), every pair in the records gets a lesson.
    asv: also run `asv publish` into out/asv (the results must be root/results), and point
    its pages at local copies of their libraries (root/vendor, `npm ci` there if needed).
    machine: the asv machine whose records and repeatability files to read (default: the only
    one; versions.pick_machine).
    Raises versions.VersionError for results without records, SiteError for a bad `out`.
    """
    started = time.monotonic()
    root = Path(root) if root else catalog.find_root()
    files = versions.available(results, machine)
    by_version = {v: {(r["pair"], r["variant"]): r for r in versions.read_records(p)} for v, p in files.items()}
    found = versions.matrix(results, machine)
    tf_versions = found["versions"]
    default = default_version(tf_versions)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise SiteError(f"--out {out} is a file, not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / "index.html").is_file():
        raise SiteError(f"--out {out} holds other files and no index.html of an earlier site: "
                        "pick a new folder (a rebuild replaces lessons/, asv/ and vendor/ in it)")
    for ours in ("lessons", FLAMEGRAPHS, "vendor", "asv"):  # a rebuild leaves nothing stale behind
        shutil.rmtree(out / ours, ignore_errors=True)
    (out / REPEATABILITY).unlink(missing_ok=True)
    (out / "lessons").mkdir(parents=True, exist_ok=True)
    built = Built(out)

    env = Environment(loader=PackageLoader("leakbench.site", "templates"),
                      autoescape=select_autoescape(["html", "j2"], default=True),
                      trim_blocks=True, lstrip_blocks=True)

    current = set(catalog.pair_names(root)) if (root / "scenarios").is_dir() else None
    pairs = []
    for name in dict.fromkeys(row["pair"] for row in found["rows"]):
        if not _SAFE_NAME.fullmatch(name):
            built.notes.append(f"pair {name!r} skipped: not a file name")
            continue
        if current is not None and name not in current:
            built.notes.append(f"pair {name!r} skipped: it has records but no scenarios/{name}.py")
            continue
        pair = _lesson_data(name, root, by_version, found, default)
        pair["flamegraph"] = _flamegraph(Path(results), out, name, [default, *reversed(tf_versions)], built)
        pairs.append(pair)
    tables = repeatability(Path(results), versions.pick_machine(results, machine), {p["name"] for p in pairs},
                           built.notes)
    for pair in pairs:
        pair["repeatability"] = pair_repeatability(tables, pair["name"])

    if asv:
        if Path(results).resolve() != (root / "results").resolve():
            built.notes.append("asv site skipped: asv publishes root/results only")
        else:
            problem = publish_asv(root, out)
            if problem:
                built.notes.append(problem)
            else:
                built.asv = "asv/index.html"
                _vendor_asv(root, out, built)
    if built.vendored:
        assets.write_notice(out, built.vendored)

    sources = list(dict.fromkeys([*contract.SOURCES, *(p["source"] for p in pairs)]))
    common = {"default": default, "versions": tf_versions, "asv": built.asv, "asv_offline": built.asv_offline,
              "verdicts": verdict.VERDICTS, "verdict_help": VERDICT_HELP, "flamegraphs": FLAMEGRAPHS,
              "repeatability": REPEATABILITY if tables else ""}
    _write(out, "style.css", (Path(__file__).parent / "templates" / "style.css").read_text(), built)
    _write(out, "index.html", env.get_template("index.html.j2").render(
        pairs=pairs, sources=[s for s in sources if any(p["source"] == s for p in pairs)], up="",
        tables=tables, **common), built)
    if tables:
        _write(out, REPEATABILITY, env.get_template("repeatability.html.j2").render(
            tables=tables, slopes_note=repeat_report.SLOPES, up="", **common), built)
    for pair in pairs:
        _write(out, f"lessons/{pair['name']}.html",
               env.get_template("lesson.html.j2").render(pair=pair, up="../", **common), built)
    built.seconds = time.monotonic() - started
    return built


# What each verdict means, for the legends (verdict.VERDICTS' words).
VERDICT_HELP = {
    "leak": "a signal grew with every repetition, or the peak grew with the data",
    "no-leak": "every signal stayed within its threshold",
    "fragmentation": "RSS grew but nothing was held: held memory (RSS less malloc's free bytes) stayed flat "
                     "and malloc_trim gave the growth back",
    "over-cap": "killed past the memory cap",
    "hang": "killed past the timeout",
    "error": "the scenario raised or its process crashed",
    "skipped": "not measured: the scenario needs a device this machine lacks",
}


def _flamegraph(results: Path, out: Path, name: str, order: list[str], built: Built) -> dict | None:
    """Copy the leaky variant's flame graph of the first version in `order` that has one; None if none does."""
    for version in dict.fromkeys(order):
        source = results / FLAMEGRAPHS / f"tf-{version}" / f"{name}-leaky.html"
        if not source.is_file():
            continue
        rel = f"{FLAMEGRAPHS}/tf-{version}/{name}-leaky.html"
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, out / rel)
        left, copied, stand_ins = assets.vendor_flamegraph(out / rel, out)
        built.vendored.extend(copied)
        if left:
            built.notes.append(f"{rel} still loads {len(left)} file(s) from CDNs: {', '.join(left)}")
        if stand_ins:
            built.notes.append(f"{rel} was drawn by another memray release: the installed memray's copies "
                               f"stand in for {', '.join(stand_ins)}")
        built.pages.append((rel, (out / rel).stat().st_size))
        return {"href": f"../{rel}", "version": version, "kib": (out / rel).stat().st_size / KIB,
                "offline": not left, **flamegraph_totals(source.read_text())}
    return None


_PACKED = re.compile(r"const packed_data = (\{.*?\});\n", re.S)


def flamegraph_totals(html: str) -> dict:
    """Bytes a memray flame graph holds: all of them (its root) and those under a Python frame.

    memray records no Python stack for an allocation made by a thread that runs
    no Python (TensorFlow's own): those bytes sit on the root alone. Reads the
    data memray 1.x embeds (`packed_data`); {} when the page is not in that form.
    """
    found = _PACKED.search(html)
    try:
        nodes = json.loads(found.group(1))["nodes"]
        total = int(nodes["value"][0])
        python = sum(int(nodes["value"][child]) for child in nodes["children"][0])
    except (AttributeError, ValueError, KeyError, IndexError, TypeError):
        return {}
    return {"retained_mib": total / MIB, "python_share": python / total if total else None}


def _vendor_asv(root: Path, out: Path, built: Built) -> None:
    modules, problem = assets.npm_modules(root / "vendor")
    if modules is None:
        built.notes.append(f"asv's pages load their libraries from CDNs: {problem}")
        return
    left, copied = assets.vendor_asv(out / "asv" / "index.html", modules, out)
    built.vendored.extend(copied)
    built.asv_offline = not left
    if left:
        built.notes.append(f"asv's pages still load {', '.join(left)} from CDNs (not in leakbench.site.vendor.ASV_CDN)")


def _lesson_data(name: str, root: Path, by_version: dict, found: dict, default: str) -> dict:
    leaky_text, leaky_meta = _pair_file(root, "leaky", name)
    fixed_text, fixed_meta = _pair_file(root, "fixed", name)
    # The newest record of each variant on the default TF (else on the newest version that has it).
    newest = {}
    for variant in ("leaky", "fixed"):
        order = [default] + [v for v in reversed(found["versions"]) if v != default]
        newest[variant] = next(((v, by_version[v][(name, variant)]) for v in order
                                if (name, variant) in by_version[v]), (None, None))
    some = newest["leaky"][1] or newest["fixed"][1]
    docstring = ast.get_docstring(ast.parse(leaky_text)) if leaky_text else None
    source = (leaky_meta.source if leaky_meta else some.get("source")) or "unknown"
    rows = {row["variant"]: row for row in found["rows"] if row["pair"] == name}
    signals = list(dict.fromkeys(s for v in found["versions"]
                                 for s in ((by_version[v].get((name, "leaky")) or {}).get("signals") or [])))
    code = side_by_side(leaky_text, fixed_text) if leaky_text and fixed_text else None
    charted = {v: _series(newest[v][1]) for v in ("leaky", "fixed")}
    return {
        "name": name,
        "title": leaky_meta.title if leaky_meta else some.get("title") or name,
        "fixed_title": fixed_meta.title if fixed_meta else (newest["fixed"][1] or {}).get("title"),
        "source": source,
        "source_url": source_link(source),
        "kind": (leaky_meta.kind if leaky_meta else some.get("kind")) or "",
        "heap_reps": leaky_meta.heap_reps if leaky_meta else None,
        "repetition": (leaky_meta.repetition if leaky_meta else some.get("repetition")) or "",
        "size_param": (leaky_meta.size_param if leaky_meta else some.get("size_param")) or "",
        "what": prose(docstring) if docstring else None,
        "code": code,
        "short_diff": short_diff(leaky_text, fixed_text) if code else [],
        "missing": [f"{catalog.VARIANT_DIRS[v]}/{name}.py" for v, t in
                    (("leaky", leaky_text), ("fixed", fixed_text)) if t is None],
        "chart": memory_svg(charted),
        "chart_versions": {v: newest[v][0] for v in ("leaky", "fixed")},
        "chart_verdicts": {v: _verdict_view(newest[v][1]) for v in ("leaky", "fixed")},
        "malloc_na": [(v, charted[v]["malloc_na"]) for v in ("leaky", "fixed") if charted[v].get("malloc_na")],
        "cells": {v: {variant: cell_view((rows.get(variant) or {"cells": {}})["cells"].get(v))
                      for variant in ("leaky", "fixed")} for v in found["versions"]},
        "history": [version_row(v, {variant: by_version[v].get((name, variant)) for variant in ("leaky", "fixed")})
                    for v in found["versions"]],
        "signals": [(s, SIGNAL_HELP.get(s, "")) for s in signals],
    }


def _write(out: Path, rel: str, text: str, built: Built) -> None:
    path = out / rel
    path.write_text(text)
    built.pages.append((rel, path.stat().st_size))
