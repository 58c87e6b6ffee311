"""`leakbench site`: the static site from results/ (leakbench.site.build). No TensorFlow needed.

The fixture results (tests/data/site_results/records/) are trimmed real
records of schema 1, from before mmap_used_bytes: stateful_map on TF 2.15.1 and
2.16.2, and `xss_pair` (unbounded_cache's numbers, only on 2.16.2) whose title
holds a <script> tag. The tests add, in a copy: an mmap_used_bytes series of
1 MiB per sample, malloc free bytes of 2 MiB and held memory of RSS less
300 MiB (and their import-baseline values) to stateful_map's records (so the
migration on read gives them a malloc_used_bytes series; xss_pair's stays
without values), `frag_pair` on
2.16.2, made from stateful_map's fixed records, whose leaky variant reads
`fragmentation` and whose fixed variant has its malloc counters n/a (the reason
holds a <b> tag), and a real memray flame graph of a small capture as
stateful_map's. The pair files are written into a temporary checkout;
xss_pair's docstring holds a <script> tag too. The repeatability tests add
synthetic results/repeatability/ files (leakbench.repeat.repeatability.summarize of made-up
observations, metric keys made up as in test_repeat).

The browser test loads every page in headless Debian chromium from a localhost
server with every other host unresolvable (asv's pages and the flame graphs
included), and keeps screenshots in test-artifacts/ (gitignored); without
chromium it skips, and under CI=true it fails (conftest.need_chromium).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import urllib.error
import urllib.request
from functools import partial
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
from conftest import CHROMIUM, held_decision, invoke, need_chromium
from markupsafe import escape

from leakbench import contract, metrics
from leakbench.analysis.judge import decision, in_words, verdict
from leakbench.engine import heap
from leakbench.history import store
from leakbench.repeat import repeatability as repeat
from leakbench.site import (
    build as site,
)
from leakbench.site import (
    charts,
    colours,
    flamegraphs,
    lessons,
    memory,
    stacks,
    stages,
)
from leakbench.site import (
    vendor as assets,
)

REPO = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).parent / "data" / "site_results"
HELD_BELOW_RSS = 300 << 20  # stateful_map's made-up held memory: RSS less this
NA_REASON = "libjemalloc is loaded: glibc's mallinfo2 does not describe its <b>heap</b>"
ARTIFACTS = Path(os.environ.get("LEAKBENCH_TEST_ARTIFACTS", REPO / "test-artifacts"))

XSS_SCENARIO = '''"""Leaks <script>alert('docstring')</script> & friends.

See tensorflow/tensorflow#44176 for the report.
"""
TITLE = "<script>alert('title')</script>"
SOURCE = "tensorflow/tensorflow#44176"
REPETITION = "one <b>epoch</b>"
KIND = "peak"
SIZE_PARAM = "n"
PARAMS = {"n": 4}
CACHE = []


def setup(n):
    return n


def repetition(n):
    CACHE.append("<script>" * n)
'''


class Links(HTMLParser):
    """href/src attributes of a page, and the text of <script> elements."""

    def __init__(self):
        super().__init__()
        self.links, self.scripts, self._in_script = [], [], False

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.links.append(value)
        self._in_script = tag == "script"
        if tag == "script":
            self.scripts.append("")

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def parse(path: Path) -> Links:
    found = Links()
    found.feed(path.read_text())
    return found


def relative(link: str) -> bool:
    return not urlsplit(link).scheme and not link.startswith(("#", "//"))


def frag_records(fixed: dict) -> list[dict]:
    """frag_pair: a leaky variant that reads fragmentation, a fixed one whose malloc heap is n/a."""
    leaky = json.loads(json.dumps(fixed))
    leaky.update(pair="frag_pair", variant="leaky", verdict="fragmentation", signals=["rss"])
    series = leaky["runs"][0]["series"]
    series["rss_bytes"] = [v + i * 600 * 1024 for i, v in enumerate(series["rss_bytes"])]
    series["mmap_used_bytes"] = [2 << 20] * len(series["heap_used_bytes"])
    # what is drawn
    series["malloc_used_bytes"] = [h + (2 << 20) for h in series["heap_used_bytes"]]
    na = json.loads(json.dumps(fixed))
    na.update(pair="frag_pair", variant="fixed")
    na["runs"][0]["malloc_heap_unavailable"] = NA_REASON
    for name in (
        "heap_used_bytes",
        "mmap_used_bytes",
        "malloc_used_bytes",
        "held_bytes",
        "heap_free_bytes",
    ):
        na["runs"][0]["series"][name] = [None] * len(series["rss_bytes"])
    na["metrics"]["malloc_heap_unavailable"] = NA_REASON
    return [leaky, na]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """A copy of the fixture results with frag_pair's records and a flame graph of stateful_map."""
    import memray

    found = tmp_path_factory.mktemp("results") / "results"
    shutil.copytree(FIXTURE, found)
    for path in store.available(found).values():  # stateful_map's mmapped chunks: 1 MiB per sample
        lines = []
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if rec["pair"] == "stateful_map":
                for run in rec["runs"]:
                    series, base = run["series"], run["import_baseline"]
                    series["mmap_used_bytes"] = [1 << 20] * len(series["heap_used_bytes"])
                    series["heap_free_bytes"] = [2 << 20] * len(series["heap_used_bytes"])
                    series["held_bytes"] = [v - HELD_BELOW_RSS for v in series["rss_bytes"]]
                    base.update(
                        mmap_used_bytes=1 << 20,
                        heap_free_bytes=2 << 20,
                        held_bytes=base["rss_bytes"] - HELD_BELOW_RSS,
                    )
            lines.append(json.dumps(rec))
        path.write_text("\n".join(lines) + "\n")
    path = store.available(found)["2.16.2"]
    fixed = next(
        r
        for r in store.read_records(path)
        if r["pair"] == "stateful_map" and r["variant"] == "fixed"
    )
    with open(path, "a") as f:
        for rec in frag_records(fixed):
            f.write(json.dumps(rec) + "\n")
    capture = found.parent / "capture.bin"
    with memray.Tracker(capture, native_traces=False):
        kept = [bytearray(4096) for _ in range(64)]
    assert (
        kept
        and heap.render_flamegraph(
            capture, found / "flamegraphs" / "tf-2.16.2" / "stateful_map-leaky.html"
        )
        is None
    )
    return found


@pytest.fixture(scope="module")
def site_checkout(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("checkout")
    for folder in ("scenarios", "fixes"):
        (root / folder).mkdir()
        shutil.copy(REPO / folder / "stateful_map.py", root / folder / "stateful_map.py")
        (root / folder / "frag_pair.py").write_text((REPO / folder / "stateful_map.py").read_text())
    (root / "scenarios" / "xss_pair.py").write_text(XSS_SCENARIO)
    (root / "fixes" / "xss_pair.py").write_text(XSS_SCENARIO.replace("CACHE.append", "len"))
    return root


@pytest.fixture(scope="module")
def built(results, site_checkout, tmp_path_factory) -> site.Built:
    return site.build(
        results, tmp_path_factory.mktemp("site") / "out", root=site_checkout, asv=False
    )


@pytest.fixture(scope="module")
def no_pairs(tmp_path_factory) -> Path:
    """A checkout whose scenarios/ and fixes/ are empty: a build of the fixture results there reads
    them and writes an index and no lesson (every pair is skipped), all the writing an unwritable
    --out-dir is about, without the charts of three lessons (most of a build's CPU)."""
    root = tmp_path_factory.mktemp("no-pairs")
    for folder in ("scenarios", "fixes"):
        (root / folder).mkdir()
    return root


def copy_site(built: site.Built, out: Path) -> Path:
    """`out` as a build of built's inputs into it would leave it (a build writes nothing outside
    its folder): the starting point of a rebuild, without building again."""
    shutil.copytree(built.out, out, symlinks=True)
    return out


def pages(out: Path) -> list[Path]:
    return sorted(p for p in out.rglob("*.html") if "asv" not in p.relative_to(out).parts)


def test_pages_exist(built):
    out = built.out
    assert {rel for rel, _ in built.pages} == {
        "style.css",
        "index.html",
        "lessons/stateful_map.html",
        "lessons/xss_pair.html",
        "lessons/frag_pair.html",
        "flamegraphs/tf-2.16.2/stateful_map-leaky.html",
    }
    for rel, size in built.pages:
        assert (out / rel).stat().st_size == size > 0
    for page in pages(out):
        if page.parent.name == "lessons" or page.parent == out:
            text = page.read_text()
            assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in text
    assert built.asv == ""


def test_every_relative_link_resolves(built):
    for page in pages(built.out):
        for link in parse(page).links:
            if relative(link):
                target = (page.parent / urlsplit(link).path).resolve()
                assert target.is_file(), f"{page.name}: broken link {link}"
                assert built.out.resolve() in target.parents, f"{page.name}: {link} leaves the site"
            else:
                assert not link.startswith("/"), f"{page.name}: absolute link {link}"


def test_text_from_records_and_scenarios_is_escaped(built):
    index = (built.out / "index.html").read_text()
    lesson = (built.out / "lessons" / "xss_pair.html").read_text()
    for text in (index, lesson):
        assert "<script>alert" not in text
    # the title from the scenario file, the docstring, the code, and a record's title
    assert "&lt;script&gt;alert(&#39;title&#39;)&lt;/script&gt;" in index
    assert "&lt;script&gt;alert(&#39;docstring&#39;)&lt;/script&gt; &amp; friends" in lesson
    assert "CACHE.append(&#34;&lt;script&gt;&#34; * n)" in lesson
    assert "one &lt;b&gt;epoch&lt;/b&gt;" in lesson
    # our own script is the only one: in the index, none in lessons
    assert len(parse(built.out / "index.html").scripts) == 1
    assert not parse(built.out / "lessons" / "xss_pair.html").scripts


def test_record_title_is_escaped_without_a_scenario_file(results, tmp_path):
    """Pairs whose files are not in the checkout take their
    title from the record (no scenarios/: results alone)."""
    built = site.build(results, tmp_path / "out", root=tmp_path, asv=False)
    index = (built.out / "index.html").read_text()
    assert "&lt;script&gt;alert(&#39;record&#39;)&lt;/script&gt; &amp; co" in index
    assert "<script>alert" not in index
    lesson = (built.out / "lessons" / "xss_pair.html").read_text()
    assert "not in this checkout (scenarios/xss_pair.py, fixes/xss_pair.py)" in lesson


def matrix_cells(index: str) -> dict:
    """pair -> [the text of each version cell], from the index's matrix."""
    body = index.split('<table class="matrix">', 1)[1].split("</table>", 1)[0]
    found = {}
    for row in re.findall(r"<tr data-source.*?</tr>", body, re.S):
        pair = re.search(r'href="lessons/([^"]+)\.html"', row).group(1)
        cells = re.findall(r'<td class="cell">(.*?)</td>', row, re.S)
        found[pair] = [" ".join(re.sub(r"<[^>]+>", " ", c).split()) for c in cells]
    return found


def test_matrix_cells(built, results):
    index = (built.out / "index.html").read_text()
    assert re.findall(r"<th scope=\"col\">TF ([\d.]+)", index) == ["2.15.1", "2.16.2"]
    cells = matrix_cells(index)
    recs = {
        v: {(r["pair"], r["variant"]): r for r in store.read_records(p)}
        for v, p in store.available(results).items()
    }

    # the number the verdict rests on, the record's decision: RSS's here (no held memory in
    # these records)
    def kib(version, pair, variant):
        rec = recs[version][(pair, variant)]
        assert metrics.value(rec, "held_growth") is None
        found = decision.of(rec)
        assert found["signal"] == "rss" and found["value"] == verdict.rate(
            rec["metrics"]["rss_growth"]
        )
        return in_words.number(found)

    assert cells["stateful_map"] == [
        f"leaky: leak {kib(v, 'stateful_map', 'leaky')} "
        f"fixed: no-leak {kib(v, 'stateful_map', 'fixed')}"
        for v in ("2.15.1", "2.16.2")
    ]
    # a peak pair shows the peak's rise (and k for a leak); an unexpected verdict is marked "!"
    assert cells["xss_pair"] == [
        "leaky: — fixed: —",
        "leaky: leak peak +213.9 MiB, k=0.88 fixed: no-leak peak -8.6 MiB (under 32 MiB)",
    ]
    assert 'class="verdict v-leak"' in index and 'class="verdict v-no-leak"' in index
    # the filter: one radio per seed source present, rows carry theirs
    assert 'value="stateful functions"' in index and 'value="tensorflow/tensorflow#44176"' in index
    assert 'data-source="tensorflow/tensorflow#44176"' in index
    assert 'href="https://github.com/tensorflow/tensorflow/issues/44176"' in index


def test_lesson(built):
    lesson = (built.out / "lessons" / "stateful_map.html").read_text()
    assert "numpy_function map appending every element to a list" in lesson
    assert "<strong>stateful functions</strong>" in lesson
    # the docstring, as prose
    assert (
        "<code>numpy_function</code> (and <code>py_function</code>) run ordinary Python" in lesson
    )
    # both real files, side by side, the differing lines marked on each side
    leaky = re.findall(r'<span class="line del"><span class="ln">(\d+)</span>', lesson)
    fixed = re.findall(r'<span class="line ins"><span class="ln">(\d+)</span>', lesson)
    assert leaky == ["18", "26", "30"] and fixed == ["18", "26", "30", "31"]
    short = lesson.split('<pre class="diff">', 1)[1].split("</pre>", 1)[0]
    assert '<span class="line del">-    SEEN.append(x.copy())' in short
    assert '<span class="line ins">+    STATS[&#34;sum&#34;] += float(x.sum())' in short
    assert "SEEN.append(x.copy())" in lesson and "STATS[&#34;count&#34;] += 1" in lesson
    # the chart: one inline SVG per panel, no XML prolog inside the HTML, ids unique in the page
    # (two of memory, one per variant, and one per count panel)
    assert (
        lesson.count("<svg ") == 2 + len(charts.PANELS)
        and "<?xml" not in lesson
        and "<!DOCTYPE svg" not in lesson
    )
    ids = re.findall(r'\bid="([^"]+)"', lesson)
    assert len(ids) == len(set(ids)), [i for i in set(ids) if ids.count(i) > 1]
    assert "fixed on TensorFlow 2.16.2" in lesson
    # peak and growth per TF version
    history = lesson.split('<table class="history">', 1)[1].split("</table>", 1)[0]
    assert re.findall(r'<th scope="row">([\d.]+)</th>', history) == ["2.15.1", "2.16.2"]
    # how to see it: the signals that moved, and the commands
    assert "<strong>rss</strong>" in lesson and "<strong>heap</strong>" in lesson
    assert "leakbench run scenarios/stateful_map.py" in lesson and "leakbench check" in lesson
    # the flame graph of the leaky run, linked; xss_pair has none and says so
    assert (
        '<a href="../flamegraphs/tf-2.16.2/stateful_map-leaky.html">Flame '
        "graph of the allocations still live "
        "at the end of the memray pass,\nleaky variant, TF 2.16.2</a>"
    ) in lesson
    other = (built.out / "lessons" / "xss_pair.html").read_text()
    assert "No flame graph is recorded for this pair" in other
    assert (
        "leakbench run xss_pair --variant leaky --flamegraph-dir results/flamegraphs/tf-VERSION"
        in other
    )


def test_lesson_links_its_report(built):
    lesson = (built.out / "lessons" / "xss_pair.html").read_text()
    # source, docstring
    assert lesson.count('href="https://github.com/tensorflow/tensorflow/issues/44176"') == 2


def test_default_version_and_source_links():
    assert site.default_version(["2.12.1", "2.21.0", "2.99.0"]) == "2.21.0"
    assert site.default_version(["2.12.1", "2.16.2"]) == "2.16.2"
    assert (
        lessons.source_link("tensorflow/tensorflow#123")
        == "https://github.com/tensorflow/tensorflow/issues/123"
    )
    assert lessons.source_link("caching") is None


def test_cli(results, site_checkout, tmp_path, monkeypatch):
    monkeypatch.setenv("LEAKBENCH_ROOT", str(site_checkout))
    out = tmp_path / "site"
    result = invoke("site", "--results", str(results), "--out-dir", str(out), "--no-asv")
    assert result.exit_code == 0, result.output
    assert (out / "index.html").is_file() and (out / "lessons" / "stateful_map.html").is_file()
    assert "6 files in" in result.output and "stateful_map-leaky.html" in result.output
    bad = invoke("site", "--results", str(tmp_path / "none"), "--out-dir", str(out))
    assert bad.exit_code == 2 and "no results directory" in bad.stderr
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("not a site")
    bad = invoke("site", "--results", str(results), "--out-dir", str(tmp_path / "mine"))
    assert bad.exit_code == 2 and "holds other files and no index.html" in bad.stderr
    assert (tmp_path / "mine" / "notes.txt").is_file()


def unwritable_outs(tmp_path) -> list[Path]:
    """--out-dir folders that cannot be created or written: under /proc, under a regular file,
    and (not as root, who may write anywhere) in a folder without write permission."""
    (tmp_path / "a-file").write_text("not a folder")
    found = [Path("/proc/leakbench-site"), tmp_path / "a-file" / "site"]
    if os.geteuid() != 0:
        (tmp_path / "read-only").mkdir()
        (tmp_path / "read-only").chmod(0o500)
        found.append(tmp_path / "read-only" / "site")
    return found


def test_an_unwritable_out_is_a_site_error(results, no_pairs, tmp_path):
    for out in unwritable_outs(tmp_path):
        with pytest.raises(site.SiteError) as raised:
            site.build(results, out, root=no_pairs, asv=False)
        message = str(raised.value)
        assert (
            message.startswith(f"--out-dir {out}: cannot write the site there")
            and "\n" not in message
        ), message
    # an existing site in a folder where no new one can be built beside it: the same, not a
    # traceback, and the old site stays (not as root, who may write anywhere)
    if os.geteuid() != 0:
        out = tmp_path / "locked" / "old"
        site.build(results, out, root=no_pairs, asv=False)
        before = (out / "index.html").read_bytes()
        out.parent.chmod(0o500)
        try:
            with pytest.raises(
                site.SiteError, match=r"cannot write the site there \(.*locked\): Permission denied"
            ):
                site.build(results, out, root=no_pairs, asv=False)
        finally:
            out.parent.chmod(0o700)
        assert (out / "index.html").read_bytes() == before


def test_cli_unwritable_out(results, no_pairs, tmp_path, monkeypatch):
    monkeypatch.setenv("LEAKBENCH_ROOT", str(no_pairs))
    for out in unwritable_outs(tmp_path):
        done = invoke("site", "--results", str(results), "--out-dir", str(out), "--no-asv")
        assert done.exit_code == 2, done.output
        assert "Traceback" not in done.output and isinstance(done.exception, SystemExit), (
            done.exception
        )
        assert done.stderr.strip().startswith(
            f"leakbench: error: --out-dir {out}: cannot write the site there"
        )
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_rebuild_drops_what_is_gone(built, results, site_checkout, tmp_path):
    """A pair removed from scenarios/ loses its lesson (its
    old records stay in results/); stray pages go too."""
    out = copy_site(built, tmp_path / "out")  # the build of results in checkout
    assert (out / "lessons" / "xss_pair.html").is_file()
    (out / "lessons" / "renamed_long_ago.html").write_text("stale")
    (out / "flamegraphs" / "tf-2.15.1").mkdir(parents=True)
    (out / "flamegraphs" / "tf-2.15.1" / "old-leaky.html").write_text("stale")
    smaller = tmp_path / "checkout"
    shutil.copytree(site_checkout, smaller)
    for folder in ("scenarios", "fixes"):
        (smaller / folder / "xss_pair.py").unlink()
    again = site.build(results, out, root=smaller, asv=False)
    assert sorted(p.name for p in (out / "lessons").iterdir()) == [
        "frag_pair.html",
        "stateful_map.html",
    ]
    assert not (out / "flamegraphs" / "tf-2.15.1").exists()
    assert "xss_pair" not in (out / "index.html").read_text()
    assert "pair 'xss_pair' skipped: it has records but no scenarios/xss_pair.py" in again.notes


def test_every_verdict_has_its_colour_and_legend(built):
    css = (built.out / "style.css").read_text()
    colours = {}
    for word in verdict.VERDICTS:
        rule = re.search(rf"\.v-{re.escape(word)} {{ background: (#[0-9a-f]+)", css)
        assert rule, f"no colour for {word}"
        colours[word] = rule.group(1)
    assert len(set(colours.values())) == len(colours), colours
    for page in ("index.html", "lessons/frag_pair.html"):
        legend = (
            (built.out / page).read_text().split('<dl class="legend">', 1)[1].split("</dl>", 1)[0]
        )
        # each word with what it means, from the one table
        for word, meaning in verdict.VERDICTS.items():
            entry = f'<span class="verdict v-{word}">{word}</span></dt><dd>{escape(meaning)}</dd>'
            assert entry in legend, (page, word)
    assert "malloc_trim" in legend  # fragmentation says what it means


def test_fragmentation_and_malloc_heap_na(built):
    cells = matrix_cells((built.out / "index.html").read_text())
    # frag_pair's leaky variant declares no EXPECTED =
    # "fragmentation": not what it should read (leakbench.expectation)
    assert cells["frag_pair"][1].startswith("leaky: fragmentation !")
    index = (built.out / "index.html").read_text()
    assert (
        '<span class="verdict v-fragmentation" title="signals: rss; expected: leak">fragmentation !'
        in index
    )
    lesson = (built.out / "lessons" / "frag_pair.html").read_text()
    history = lesson.split('<table class="history">', 1)[1].split("</table>", 1)[0]
    assert (
        '<span class="verdict v-fragmentation" title="signals: '
        'rss; expected: leak">fragmentation !</span>' in history
    )
    # as expected: no "!"
    assert '<span class="verdict v-no-leak" title="signals: —">no-leak</span>' in history
    # the memory chart: n/a for the fixed variant, said in
    # its chart, with the record's reason (escaped) below
    chart = lesson.split('<figure class="memory">', 1)[1].split("</figure>", 1)[0]
    fixed_svg = chart.split('<div class="fixed">', 1)[1]
    assert (
        "held, malloc in use, free: n/a" in fixed_svg
        and "held, malloc in use, free: n/a" not in chart.split('<div class="fixed">', 1)[0]
    )
    assert re.search(
        r'<svg role="img" aria-label="fixed variant, \d+ '
        r"repetitions, MiB above the process before setup: "
        r"held memory, malloc in use and malloc free bytes are n/a; RSS ",
        fixed_svg,
    )
    # metrics' labels
    for label in ("RSS", "held memory", "malloc in use", "malloc free bytes", "memray heap"):
        assert f"{label}</dt><dd>" in chart, label
    assert "heap_used_bytes + mmap_used_bytes" in chart  # metrics' help
    assert (
        "<strong>held memory, malloc in use and malloc free bytes n/a for fixed:</strong> "
        "libjemalloc is loaded: glibc&#39;s mallinfo2 does not describe its &lt;b&gt;heap&lt;/b&gt;"
    ) in chart
    assert (
        '<span class="verdict v-fragmentation" title="expected: leak">fragmentation !</span>'
        in chart
    )  # the charted run's verdict
    assert 'title="n/a: libjemalloc is loaded' in history and ">n/a</td>" in history
    head = lesson.split('<table class="history">', 1)[1].split("</thead>", 1)[0]
    assert (
        ">held memory KiB/rep<" in head
        and ">malloc in use KiB/rep<" in head
        and ">threads/rep<" in head
    )
    assert ">peak above baseline MiB<" in head
    # a lesson without n/a draws the malloc series of both variants and names no reason
    plain = (built.out / "lessons" / "stateful_map.html").read_text()
    assert "bytes n/a for" not in plain and ": n/a\n" not in plain and "free: n/a" not in plain
    # a record whose malloc series has no values says so
    other = (built.out / "lessons" / "xss_pair.html").read_text()
    assert f"malloc free bytes n/a for leaky:</strong> {memory.NO_MALLOC_VALUES}" in other


def test_decomposition_reads_the_sample_series():
    """The memory chart draws malloc_used_bytes (heap_used + mmap_used, the sample series), held
    memory and malloc's free bytes above the import baseline,
    memray's heap as recorded, and the trim above baseline RSS."""
    base = {
        "rss_bytes": 100,
        "held_bytes": 50,
        "heap_used_bytes": 10,
        "mmap_used_bytes": 5,
        "heap_free_bytes": 1,
    }
    rec = {
        "runs": [
            {
                "series": {
                    "rss_bytes": [101, 102],
                    "held_bytes": [51, 53],
                    "heap_used_bytes": [10, 20],
                    "mmap_used_bytes": [100, 200],
                    "malloc_used_bytes": [111, 222],
                    "heap_free_bytes": [1, 4],
                },
                "import_baseline": base,
                "heap": {"heap_bytes": [5, 6]},
                "trim": {"rss_before_trim_bytes": 102, "rss_after_trim_bytes": 100},
            }
        ],
        "metrics": {},
    }
    assert memory.decomposition(rec) == {
        "lines": {"rss": [1, 2], "malloc": [96, 207], "free": [0, 3], "held": [1, 3]},
        "heap": [5, 6],
        "trim": (2, 0),
        "reps": 2,
        "na": None,
    }
    for name in ("held_bytes", "malloc_used_bytes", "heap_free_bytes"):
        rec["runs"][0]["series"][name] = [None, None]
    assert memory.decomposition(rec)["na"] == memory.NO_MALLOC_VALUES
    rec["metrics"]["malloc_heap_unavailable"] = "another allocator"
    assert memory.decomposition(rec)["na"] == "another allocator"
    assert memory.decomposition(None) == {} and memory.decomposition({"runs": []}) == {}
    assert charts.series_of(rec) == {"threads": [], "open_files": [], "python_objects": []}


def test_memory_charts_share_their_axes_and_say_what_they_show():
    """Leaky and fixed on the same y range; the alt text
    names the slope of held memory and the trim."""
    mib = 1 << 20

    def rec(held_per_rep, free_per_rep):
        reps = range(1, 13)
        return {
            "runs": [
                {
                    "series": {
                        "rss_bytes": [
                            mib * (200 + (held_per_rep + free_per_rep) * i) for i in reps
                        ],
                        "held_bytes": [mib * (100 + held_per_rep * i) for i in reps],
                        "malloc_used_bytes": [mib * (50 + held_per_rep * i) for i in reps],
                        "heap_free_bytes": [mib * (1 + free_per_rep * i) for i in reps],
                    },
                    "import_baseline": {
                        "rss_bytes": 200 * mib,
                        "held_bytes": 100 * mib,
                        "malloc_used_bytes": 50 * mib,
                        "heap_free_bytes": mib,
                    },
                    "heap": {"heap_bytes": [mib * 4 * i for i in range(6)]},
                    "trim": {"rss_before_trim_bytes": 260 * mib, "rss_after_trim_bytes": 250 * mib},
                }
            ],
            "metrics": {},
        }

    drawn = memory.charts(
        {"leaky": memory.decomposition(rec(4, 0)), "fixed": memory.decomposition(rec(0, 8))}
    )
    assert set(drawn) == {"leaky", "fixed"}
    label = re.search(r'aria-label="([^"]+)"', drawn["leaky"]).group(1)
    # the lines in words from their values alone: no slope, no bar (the verdict's number is the
    # record's decision)
    assert label.startswith(
        "leaky variant, 12 repetitions, MiB above the process before setup: held memory from 4 "
        "to 48 MiB; malloc free bytes from 0 to 0 MiB"
    ), label
    assert "memray heap from 0 to 20 MiB" in label and label.endswith(
        "malloc_trim gives back 10.0 MiB"
    )
    assert "malloc free bytes from 8 to 96 MiB" in re.search(
        r'aria-label="([^"]+)"', drawn["fixed"]
    ).group(1)
    ticks = {
        v: re.findall(r'ytick_\d+">.*?<text[^>]*>([^<]+)</text>', svg, re.S)
        for v, svg in drawn.items()
    }
    assert ticks["leaky"] and ticks["leaky"] == ticks["fixed"], ticks
    assert (
        'role="img"' in drawn["fixed"]
        and 'id="mem-fixed-' in drawn["fixed"]
        and 'id="mem-leaky-' in drawn["leaky"]
    )
    assert memory.charts({"leaky": {}, "fixed": {}}) is None
    # a series that goes up and down (fragmentation's free bytes): its lowest and highest too
    jumpy = [mib * v for v in (100, 300, 120, 320, 110, 310)]
    assert memory.describe(
        "leaky",
        {
            "lines": {"held": [mib] * 6, "free": jumpy, "malloc": [], "rss": []},
            "heap": [],
            "trim": None,
            "reps": 6,
            "na": None,
        },
    ) == (
        "leaky variant, 6 repetitions, MiB above the process before setup: held memory from 1 "
        "to 1 MiB; malloc free bytes from 100 to 310 MiB (lowest 100, highest 320)"
    )


def test_one_place_for_colours(built):
    """Variants and verdicts take their colours from leakbench.site.colours alone: the CSS is
    rendered from it, and the charts draw with it."""
    css = (built.out / "style.css").read_text()
    assert set(colours.VERDICTS) == set(verdict.VERDICTS)
    for word, (background, text) in colours.VERDICTS.items():
        assert re.search(
            rf"\.v-{re.escape(word)} {{ background: {background}; color: {text};", css
        ), word
    for variant, colour in colours.VARIANTS.items():
        assert f"--variant-{variant}: {colour};" in css
    template = (Path(site.__file__).parent / "templates" / "style.css.j2").read_text()
    # no second copy of a verdict's colour
    assert not re.search(r"\.v-[a-z-]+ \{ background: #", template)
    lesson = (built.out / "lessons" / "stateful_map.html").read_text()
    # the count panels draw each variant in its colour
    for variant, colour in colours.VARIANTS.items():
        assert f"stroke: {colour}" in lesson, variant


# --- where the memory is: the release strip, stacks, stages, reference chains -------------

KIB_ = 1024


def where_records(recs: dict) -> list[dict]:
    """where_pair, from stateful_map's records (recs: (version, variant) -> record): its leaky
    variant reads no-leak on 2.15.1 and leak on 2.16.2, where its records carry memray's growth per
    stack, memory per pipeline stage and a reference
    chain (the keys another part of leakbench writes)."""
    found = []
    for (version, variant), rec in recs.items():
        rec = json.loads(json.dumps(rec))
        rec["pair"] = "where_pair"
        run = rec["runs"][0]
        if version == "2.15.1" and variant == "leaky":
            rec.update(verdict="no-leak", signals=[])
        if version == "2.16.2" and variant == "leaky":
            run["heap"]["stack_growth"] = [
                {
                    "frames": [
                        f"tf_op_{i}",
                        f"user.py:make_{i}" if i % 2 == 0 else "tensorflow/data/ops.py:map",
                        "tensorflow/python/eager/context.py:run",
                    ],
                    "user_frame": f"user.py:make_{i}" if i % 2 == 0 else None,
                    "bytes": [j * (i + 1) * 64 * KIB_ for j in range(6)],
                    "bytes_per_rep": (i + 1) * 64.0 * KIB_,
                }
                for i in range(8)
            ]
            run["stages"] = {
                "readings": [100, 200, 300],
                "tensorflow": "2.16.2",
                "stages": [
                    {
                        "stage": "MapDataset",
                        "inside": None,
                        "bytes": [KIB_, 2 * KIB_, 3 * KIB_],
                        "autotune": {"num_parallel_calls": 4},
                    },
                    {
                        "stage": "<b>Prefetch</b>",
                        "inside": "MapDataset",
                        "bytes": [5 << 20, 6 << 20, 8 << 20],
                        "autotune": {"buffer_size": 16, "ram_budget": "1 GiB"},
                    },
                ],
            }
            run["reference_chain"] = {
                "type": "numpy.ndarray",
                "chain": ["module user", "SEEN", "list[<i>0</i>]"],
                "seconds": 1.25,
            }
        if version == "2.16.2" and variant == "fixed":
            run["heap"]["stack_growth"] = []
            run["stages"] = {"na": "no <i>tf.data</i> iterator found"}
            run["reference_chain"] = {"na": "nothing leaked to trace"}
        found.append((version, rec))
    return found


@pytest.fixture(scope="module")
def where_site(results, site_checkout, tmp_path_factory) -> site.Built:
    base = tmp_path_factory.mktemp("where")
    found, root = base / "results", base / "checkout"
    shutil.copytree(results, found)
    shutil.copytree(site_checkout, root)
    for folder in ("scenarios", "fixes"):
        shutil.copy(root / folder / "stateful_map.py", root / folder / "where_pair.py")
    paths = store.available(found)
    recs = {
        (v, r["variant"]): r
        for v, p in paths.items()
        for r in store.read_records(p)
        if r["pair"] == "stateful_map"
    }
    for version, rec in where_records(recs):
        with open(paths[version], "a") as f:
            f.write(json.dumps(rec) + "\n")
    return site.build(found, base / "out", root=root, asv=False)


def test_release_strip(where_site):
    lesson = (where_site.out / "lessons" / "where_pair.html").read_text()
    strip = lesson.split('<table class="strip">', 1)[1].split("</table>", 1)[0]
    rows = {
        m.group(1): m.group(2)
        for m in re.finditer(r'<th scope="row" class="(\w+)-name">\w+</th>(.*?)</tr>', strip, re.S)
    }
    assert [text_of(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", rows["leaky"], re.S)] == [
        "no-leak !",
        "leak",
    ]
    assert [text_of(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", rows["fixed"], re.S)] == [
        "no-leak",
        "no-leak",
    ]
    # the change is marked on its cell and said below;
    # each cell links its row of the table per release
    assert (
        '<td class="changed"><a href="#tf-2.16.2"' in rows["leaky"]
        and rows["fixed"].count("changed") == 0
    )
    assert "where the leaky verdict changed:\nTF 2.16.2 (no-leak → leak)." in lesson
    for version in ("2.15.1", "2.16.2"):
        assert f'<tr id="tf-{version}"><th scope="row">{version}</th>' in lesson
        assert f'href="#tf-{version}"' in strip
    # a pair whose verdict never changed says so
    plain = (where_site.out / "lessons" / "stateful_map.html").read_text()
    assert (
        "The leaky verdict is the same on every release measured." in plain
        and 'class="changed"' not in plain
    )


def test_index_starts_with_the_verdict_changes(where_site):
    index = (where_site.out / "index.html").read_text()
    main = index.split("<h1>", 1)[1]
    assert main.index('<section id="changes">') < main.index('<table class="matrix">')
    table = main.split('<table class="changes">', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr><th scope=\"row\">(.*?)</tr>", table, re.S)
    where = [r for r in rows if "where_pair" in r]
    assert len(where) == 1, rows  # only its leaky variant changes, once
    assert '<a href="lessons/where_pair.html#releases">where_pair</a>' in where[0]
    assert [text_of(c) for c in re.findall(r"<td>(.*?)</td>", where[0], re.S)][:3] == [
        "leaky",
        "no-leak",
        "leak",
    ]
    assert (
        '<a href="lessons/where_pair.html#tf-2.16.2">TF 2.16.2</a>' in where[0]
        and "(after 2.15.1)" in where[0]
    )


def test_growth_by_allocation_site(where_site):
    lesson = (where_site.out / "lessons" / "where_pair.html").read_text()
    section = lesson.split('<h3 id="stacks">', 1)[1].split("<h3 ", 1)[0]
    # stacked over the heap repetitions, the leaky variant's alone (the fixed one grew nothing)
    assert section.count("<svg ") == 1 and '<div class="leaky"><svg role="img"' in section
    assert re.search(
        r'aria-label="memray&#39;s heap of the leaky variant by allocation site, stacked over 6 '
        r'heap repetitions: tf_op_7 grows fastest, 512 KiB per repetition, of 6 stacks shown"',
        section,
    )
    assert "other stacks" in section  # the two slowest, summed
    # listed fastest first, the user's frame named first and the rest as context
    items = [text_of(i) for i in re.findall(r"<li>(.*?)</li>", section, re.S)]
    assert items[0] == (
        "tf_op_7 (no frame of your code) : +512 KiB/repetition in tensorflow/data/ops.py:map ← "
        "tensorflow/python/eager/context.py:run"
    )
    assert items[1] == (
        "user.py:make_6 : +448 KiB/repetition in tf_op_6 ← tensorflow/python/eager/context.py:run"
    )
    assert len(items) == 6
    assert "<strong>fixed</strong>: no stack grew in memray's heap pass." in section


def test_memory_per_stage_and_reference_chain(where_site):
    lesson = (where_site.out / "lessons" / "where_pair.html").read_text()
    section = lesson.split('<h3 id="stages">', 1)[1].split("<h3 ", 1)[0]
    rows = [
        [text_of(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r, re.S)]
        for r in re.findall(r"<tr>(.*?)</tr>", section.split("<tbody>", 1)[1], re.S)
    ]
    assert rows == [
        ["MapDataset", "3 KiB", "+2 KiB", "num_parallel_calls=4", "—"],
        [
            "&lt;b&gt;Prefetch&lt;/b&gt; in MapDataset",
            "8.0 MiB",
            "+3.0 MiB",
            "buffer_size=16, ram_budget=1 GiB",
            "—",
        ],
    ]
    # nested under its parent
    assert '<th scope="row" class="depth-1"><code>&lt;b&gt;Prefetch' in section
    assert "leaky: bytes at the last reading (300 elements)" in section
    assert (
        "<strong>fixed</strong>: memory per stage is n/a: "
        "no &lt;i&gt;tf.data&lt;/i&gt; iterator found." in section
    )
    chain = lesson.split('<h3 id="chain">', 1)[1].split("<h3 ", 1)[0]
    assert text_of(chain) == (
        "What keeps it alive leaky : a numpy.ndarray is reachable through module user → SEEN → "
        "list[&lt;i&gt;0&lt;/i&gt;] (found in 1.2 s) fixed : the reference chain is n/a: nothing "
        "leaked to trace."
    )
    # records without the keys say so plainly
    plain = (where_site.out / "lessons" / "stateful_map.html").read_text()
    assert f"memray's growth per stack is {escape(stacks.ABSENT)}." in plain
    assert f"memory per stage is {escape(stages.STAGES_ABSENT)}." in plain
    assert f"the reference chain is {escape(stages.CHAIN_ABSENT)}." in plain


def test_localize_points_cdn_tags_at_copies():
    page = (
        '<script src="https://cdn.example/npm/x@1/x.min.js" integrity="sha256-abc" '
        'crossorigin="anonymous" onerror="f()"></script><link '
        'rel="stylesheet" href="//cdn.example/y.css">'
        '<a href="https://example.org/docs">docs</a><script src="local.js"></script>'
        '<script src="https://cdn.example/unknown.js"></script>'
    )
    html, left = assets.localize(
        page,
        {
            "https://cdn.example/npm/x@1/x.min.js": "../vendor/x@1/x.min.js",
            "//cdn.example/y.css": "../vendor/y.css",
        },
    )
    assert '<script src="../vendor/x@1/x.min.js" onerror="f()"></script>' in html
    assert '<link rel="stylesheet" href="../vendor/y.css">' in html
    assert '<a href="https://example.org/docs">' in html and '<script src="local.js">' in html
    assert left == ["https://cdn.example/unknown.js"]


def test_without_npm_asv_keeps_its_cdns(tmp_path, monkeypatch):
    vendor = tmp_path / "vendor"
    vendor.mkdir()
    shutil.copy(REPO / "vendor" / "package-lock.json", vendor)
    monkeypatch.setattr(assets.shutil, "which", lambda name: None)
    modules, problem = assets.npm_modules(vendor)
    assert modules is None and problem.startswith("npm is not installed")


@pytest.fixture(scope="module")
def real_site(tmp_path_factory, committed_results) -> site.Built:
    """The site of the committed results (git HEAD, not the working copy a `make run` may have
    added to), with asv's pages when asv is installed."""
    return site.build(
        committed_results, tmp_path_factory.mktemp("real") / "site", root=REPO, asv=has_asv()
    )


def has_asv() -> bool:
    return Path(os.sys.executable).with_name("asv").exists() or shutil.which("asv") is not None


def test_committed_results(real_site, committed_results):
    measured = {
        r["pair"]
        for p in store.available(committed_results).values()
        for r in store.read_records(p)
    }
    names = sorted(p.stem for p in (REPO / "scenarios").glob("*.py") if p.stem in measured)
    assert (
        sorted(Path(rel).stem for rel, _ in real_site.pages if rel.startswith("lessons/")) == names
    )
    # every lesson links its committed flame graph, or says plainly that there is none
    for name in names:
        lesson = (real_site.out / "lessons" / f"{name}.html").read_text()
        graphs = sorted(
            (committed_results / flamegraphs.FLAMEGRAPHS).glob(f"tf-*/{name}-leaky.html")
        )
        if graphs:
            assert re.search(
                rf'<a href="../flamegraphs/tf-[^/"]+/{name}-leaky.html">Flame graph', lesson
            ), name
        elif contract.read_metadata(REPO / "scenarios" / f"{name}.py").heap_reps == 0:
            # no heap pass, no capture
            assert "it skips memray's heap pass" in lesson, name
        else:
            assert "No flame graph is recorded for this pair" in lesson, name
        # where the memory is: a chart per variant, and
        # the newer sections drawn or said to be absent
        if (REPO / "fixes" / f"{name}.py").is_file() and "No series to draw" not in lesson:
            assert lesson.count('<svg role="img" aria-label="leaky variant, ') == 1, name
        for drawn, absent in (
            ('<ol class="stacks">', stacks.ABSENT),
            ('<table class="stages">', stages.STAGES_ABSENT),
            ("is reachable through", stages.CHAIN_ABSENT),
        ):
            # a pair whose repetition is no dataset (Keras, eager
            # calls) has no pipeline to read: n/a, with why
            said_na = (
                drawn == '<table class="stages">' and "n/a: the target is not a dataset" in lesson
            )
            # a run where no Python type grew in both halves
            # follows no chain, and says so (engine.chain)
            said_na = said_na or (
                drawn == "is reachable through" and "no Python type grew" in lesson
            )
            # a chain both variants share is said not to be the holder (stages.SHARED)
            said_na = said_na or (
                drawn == "is reachable through" and "so that root is not what holds" in lesson
            )
            assert drawn in lesson or str(escape(absent)) in lesson or said_na, (name, drawn)
        assert '<table class="strip">' in lesson, name
    if real_site.asv:
        assert (real_site.out / "asv" / "index.html").is_file()
        # linked back
        assert 'href="../index.html"' in (real_site.out / "asv" / "index.html").read_text()
        assert 'href="asv/index.html"' in (real_site.out / "index.html").read_text()
    for page in pages(real_site.out):
        for link in parse(page).links:
            if relative(link):
                assert (page.parent / urlsplit(link).path).is_file(), f"{page}: broken link {link}"


def test_asv_pages_load_nothing_from_cdns(real_site):
    """asv's index.html points at the copies in vendor/, and they are the libraries asv names:
    byte for byte (asv's subresource-integrity hashes) where npm has the same file."""
    if not has_asv():
        pytest.skip("asv is not installed (pip install -e '.[test]' brings it)")
    assert real_site.asv, f"asv is installed but its pages were not built: {real_site.notes}"
    if not real_site.asv_offline:
        why = [n for n in real_site.notes if "CDN" in n]
        if any("npm is not installed" in n for n in why):
            pytest.skip(why[0])
        pytest.fail(f"asv's pages still use CDNs: {why}")
    page = (real_site.out / "asv" / "index.html").read_text()
    assert assets.remote_addresses(page) == []
    import asv

    original = (Path(asv.__file__).parent / "www" / "index.html").read_text()
    same = []
    for address, integrity in re.findall(
        r'(?:src|href)="(https://[^"]+)" integrity="([^"]+)"', original
    ):
        package, version, rel = next(
            v for end, v in assets.ASV_CDN.items() if address.endswith(end)
        )
        copy = real_site.out / "vendor" / f"{package}@{version}" / rel
        assert f'"../vendor/{package}@{version}/{rel}"' in page
        algorithm, digest = integrity.split("-", 1)
        if base64.b64encode(hashlib.new(algorithm, copy.read_bytes()).digest()).decode() == digest:
            same.append(rel.rsplit("/", 1)[-1])
    # flot's npm package has the unminified files of
    # 0.8.3; npm has stupid-table-plugin 1.1.3, not 1.0.1
    assert sorted(same) == [
        "bootstrap.min.css",
        "bootstrap.min.js",
        "jquery.flot.orderBars.js",
        "jquery.min.js",
        "md5.min.js",
    ]
    notice = (real_site.out / "vendor" / "README.txt").read_text()
    assert "jquery@3.3.1/  npm package jquery 3.3.1; licence: MIT" in notice
    assert (
        real_site.out
        / "vendor"
        / "bootstrap@3.1.1"
        / "dist"
        / "fonts"
        / "glyphicons-halflings-regular.woff"
    ).is_file()


# --- the browser test -----------------------------------------------------------------


class _Quiet(SimpleHTTPRequestHandler):
    served: list = []  # paths asked for, in order

    def log_message(self, *args):
        pass

    def log_request(self, code="-", size="-"):
        self.served.append((urlsplit(self.path).path, str(getattr(code, "value", code))))


# Every host but the test server's fails to resolve: a page that needs the network shows it.
OFFLINE = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"


def _chromium(url: str, *extra: str) -> subprocess.CompletedProcess:
    profile = tempfile.mkdtemp(prefix="leakbench-chromium-")
    try:
        return subprocess.run(
            [
                str(CHROMIUM),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={profile}",
                "--enable-logging=stderr",
                "--v=0",
                OFFLINE,
                *extra,
                url,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def _console(done: subprocess.CompletedProcess) -> list[str]:
    """Console messages and uncaught errors (a script
    or stylesheet that failed to load among them)."""
    return [line for line in done.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]


def test_browser(chromium, real_site, committed_results):
    out = real_site.out
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(out)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        for page in pages(out):
            url = urljoin(base, page.relative_to(out).as_posix())
            graph = page.parent.parent.name == flamegraphs.FLAMEGRAPHS
            done = _chromium(url, "--dump-dom", *(["--virtual-time-budget=5000"] if graph else []))
            assert done.returncode == 0, done.stderr[-2000:]
            assert not _console(done), f"{url}: {_console(done)}"
            if graph:  # d3-flame-graph drew (at least the root), from the vendored copies
                assert 'class="frame"' in done.stdout, f"{url}: no flame graph drawn"
            else:
                assert "</main>" in done.stdout, f"{url} did not render"
            if page.name == "index.html":
                assert re.search(r'<html lang="en" class="\s*js"', done.stdout), (
                    "the filter script did not run"
                )
            dom = Links()
            dom.feed(done.stdout)
            for link in dom.links:
                if relative(link):
                    target = urljoin(url, link)
                    try:
                        with urllib.request.urlopen(target, timeout=10) as reply:
                            assert reply.status == 200, f"{url}: {link} gives {reply.status}"
                    except urllib.error.HTTPError as e:
                        pytest.fail(f"{url}: broken link {link} ({e.code})")
        # offline from file://: the index and a lesson, with no console error (asv's pages need a
        # server). One lesson stands for all: they share one template, so the same scripts and
        # stylesheets (each lesson's own content was rendered through the server above).
        lessons = sorted(p for p in pages(out) if p.parent.name == "lessons")
        for page in [p for p in pages(out) if p.parent == out] + lessons[:1]:
            done = _chromium(page.as_uri(), "--dump-dom", "--allow-file-access-from-files")
            assert done.returncode == 0 and not _console(done), f"{page.as_uri()}: {_console(done)}"
            assert "</main>" in done.stdout, f"{page.as_uri()} did not render"
        # the control: another host cannot be reached from
        # these pages (a failed load alone logs nothing:
        # asv's pages show it by going to their error page, the flame graphs by drawing nothing)
        (out / "probe-offline.html").write_text(
            '<script>fetch("https://example.com/", {mode: "no-cors"}).then(() => '
            'console.log("reached"), () => console.log("blocked"))</script>'
        )
        try:
            done = _chromium(
                base + "probe-offline.html", "--dump-dom", "--virtual-time-budget=5000"
            )
            assert any('"blocked"' in line for line in _console(done)), (
                f"the network is not blocked: {_console(done)}"
            )
        finally:
            (out / "probe-offline.html").unlink()
        # a phone's width: no lesson is wider than 375 px (wide tables scroll inside their own box)
        names = sorted(p.stem for p in pages(out) if p.parent.name == "lessons")
        (out / "probe-width.html").write_text(
            "<!DOCTYPE html><body><script>" + json.dumps(names) + ".forEach(function (n) {"
            ' var f = document.createElement("iframe"); f.width = '
            '375; f.height = 800; f.src = "lessons/" + n + ".html";'
            " f.onload = function () { var d = f.contentDocument.documentElement;"
            ' console.log("width " + n + " " + d.scrollWidth + " " + d.clientWidth); };'
            " document.body.appendChild(f); });</script>"
        )
        try:
            done = _chromium(base + "probe-width.html", "--dump-dom", "--virtual-time-budget=10000")
            widths = {
                m.group(1): (int(m.group(2)), int(m.group(3)))
                for m in re.finditer(r'"width (\S+) (\d+) (\d+)"', done.stderr)
            }
            assert sorted(widths) == names, _console(done)
            assert all(wide <= seen for wide, seen in widths.values()), widths
        finally:
            (out / "probe-width.html").unlink()
        if real_site.asv_offline:  # asv's own pages, with every CDN unreachable
            _Quiet.served.clear()
            # the grid of summary plots, the regressions table
            # (stupidtable), one benchmark's graph (flot): the suite's first, as asv lists them
            suite = json.loads((committed_results / "benchmarks.json").read_text())
            first = sorted(k for k in suite if k != "version")[0]
            for view, drawn in (
                ("", 'class="benchmark-plot"'),
                ("#/regressions", 'class="table table-hover"'),
                (f"#{first}", 'class="flot-base"'),
            ):
                url = base + "asv/index.html" + view
                done = _chromium(url, "--dump-dom", "--virtual-time-budget=10000")
                assert done.returncode == 0 and not _console(done), f"{url}: {_console(done)}"
                assert "continental origin" not in done.stdout, (
                    f"{url}: asv's dependencies failed to load"
                )
                assert drawn in done.stdout, f"{url}: no {drawn}"
            assert {path for path, code in _Quiet.served if path.startswith("/vendor/")} >= {
                "/vendor/jquery@3.3.1/dist/jquery.min.js",
                "/vendor/bootstrap@3.1.1/dist/css/bootstrap.min.css",
            }
            assert all(code == "200" for _, code in _Quiet.served), _Quiet.served
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        lesson = sorted(p for p in pages(out) if p.parent.name == "lessons")[0]
        shots = {
            "index.png": (base + "index.html", "1280,900"),
            "index-phone.png": (base + "index.html", "375,812"),
            f"lesson-{lesson.stem}.png": (urljoin(base, f"lessons/{lesson.name}"), "1280,900"),
            f"lesson-{lesson.stem}-phone.png": (urljoin(base, f"lessons/{lesson.name}"), "375,812"),
        }
        for name, (url, size) in shots.items():
            done = _chromium(url, f"--screenshot={ARTIFACTS / name}", f"--window-size={size}")
            assert done.returncode == 0 and (ARTIFACTS / name).stat().st_size > 10_000, done.stderr[
                -2000:
            ]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_a_flame_graph_of_another_memray_release_gets_stand_ins(tmp_path):
    """A flame graph naming versions the installed memray
    does not ship still loads nothing from a CDN."""
    page = tmp_path / "out" / "flamegraphs" / "tf-9.9.9" / "x-leaky.html"
    page.parent.mkdir(parents=True)
    page.write_text(
        '<script src="https://cdn.example/npm/d3@6.0.0/dist/d3.min.js"></script>'
        '<script src="https://cdn.example/npm/nothing@1/dist/nothing.js"></script>'
    )
    left, copied, stand_ins = assets.vendor_flamegraph(page, tmp_path / "out")
    assert left == ["https://cdn.example/npm/nothing@1/dist/nothing.js"]
    assert stand_ins == ["https://cdn.example/npm/d3@6.0.0/dist/d3.min.js"]
    version = assets.memray_assets()[0]
    assert f'<script src="../../vendor/memray-{version}/d3.min.js"></script>' in page.read_text()
    # what memray ships
    assert copied[0]["file"].endswith("/d3.min.js") and "d3@6.0.0" not in copied[0]["file"]


# --- repeatability (leakbench repeat's files) ------------------------------------------


def repeat_observation(
    pair, variant, run, word, held, expected="leak", exponent=None, version="2.16.2", decided=True
):
    """One run as leakbench.repeat.repeatability.observe keeps it; held in bytes/repetition, and the
    number its verdict rests on (decided=False: a run kept before repeat kept it)."""
    return {
        "decision": held_decision(word, held) if decided else None,
        "pair": pair,
        "variant": variant,
        "run": run,
        "verdict": word,
        "signals": [],
        "expected": expected,
        "expected_ok": word == expected,
        "tensorflow": version,
        "cap_bytes": 1 << 30,
        "wall_seconds": 10.0,
        "slopes": {
            "bytes_metric": {
                "signal": "held",
                "slope": held,
                "rate": held,
                "unit": "bytes/repetition",
                "moved": False,
            },
            "count_metric": {
                "signal": "threads",
                "slope": 0.0,
                "rate": 0.0,
                "unit": "threads/repetition",
                "moved": False,
            },
        },
        "peak_exponent": exponent,
        "confirmation_seconds": None,
        "phase": None,
        "error": None,
    }


def repeat_result(observations, machine="vm", jobs=1, version="2.16.2") -> dict:
    return {
        "format": repeat.FORMAT,
        "machine": machine,
        "jobs": jobs,
        "tensorflow": version,
        "runs_requested": max(o["run"] for o in observations),
        "updated": "2026-12-01T10:00:00+00:00",
        "elapsed_seconds": 50.0,
        "observations": observations,
        "summary": repeat.summarize(observations),
        "settings": {
            "warmup": 3,
            "reps": 12,
            "heap_reps": 6,
            "cap_bytes": 0,
            "timeout_seconds": 300.0,
            "scales": [1, 2, 4],
            "teardown_timeout_seconds": 30.0,
        },
    }


@pytest.fixture(scope="module")
def repeat_results(results, tmp_path_factory) -> Path:
    """The fixture results with repeatability files: stateful_map and a pair without a lesson on
    2.16.2 (2 children at a time), stateful_map on
    2.15.1, another machine's file and a broken one."""
    found = tmp_path_factory.mktemp("repeat") / "results"
    shutil.copytree(results, found)
    folder = found / repeat.FOLDER
    folder.mkdir()
    runs = []
    for run in (1, 2, 3):
        runs.append(repeat_observation("stateful_map", "leaky", run, "leak", run * 1024 * 1024))
        runs.append(
            repeat_observation(
                "stateful_map",
                "fixed",
                run,
                "leak" if run == 2 else "no-leak",
                run * 1024.0,
                expected="no-leak",
            )
        )
        runs.append(repeat_observation("<i>gone</i>", "leaky", run, "leak", 0.0, exponent=0.9))
    (folder / "vm-tf-2.16.2-jobs2.json").write_text(json.dumps(repeat_result(runs, jobs=2)))
    older = [
        repeat_observation(
            "stateful_map", v, 1, w, 0.0, expected=w, version="2.15.1", decided=False
        )
        for v, w in (("leaky", "leak"), ("fixed", "no-leak"))
    ]
    (folder / "vm-tf-2.15.1.json").write_text(json.dumps(repeat_result(older, version="2.15.1")))
    theirs = [repeat_observation("other_machines_pair", "leaky", 1, "leak", 0.0)]
    (folder / "elsewhere-tf-2.16.2.json").write_text(
        json.dumps(repeat_result(theirs, machine="elsewhere"))
    )
    (folder / "vm-tf-broken.json").write_text("{")
    return found


@pytest.fixture(scope="module")
def repeat_site(repeat_results, site_checkout, tmp_path_factory) -> site.Built:
    return site.build(
        repeat_results,
        tmp_path_factory.mktemp("repeat-site") / "out",
        root=site_checkout,
        asv=False,
    )


def text_of(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def repeat_tables(page: str) -> dict:
    """h2 id -> rows of its table, each a list of cell texts."""
    found = {}
    for anchor, body in re.findall(r'<h2 id="([^"]+)">.*?<tbody>(.*?)</tbody>', page, re.S):
        found[anchor] = [
            [text_of(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)
        ]
    return found


def test_repeatability_page(repeat_site):
    out = repeat_site.out
    assert "repeatability.html" in {rel for rel, _ in repeat_site.pages}
    page = (out / "repeatability.html").read_text()
    tables = repeat_tables(page)
    assert list(tables) == ["tf-2.15.1", "tf-2.16.2-jobs2"]  # by TF version
    assert (
        ">TensorFlow 2.16.2, 2 children at a time</h2>" in page
        and ">TensorFlow 2.15.1, 1 child at a time</h2>" in page
    )
    # a row per pair × variant: expected, verdict counts,
    # agrees, as expected, slopes median (min–max)
    assert tables["tf-2.16.2-jobs2"] == [
        [
            "&lt;i&gt;gone&lt;/i&gt;",
            "leaky",
            "leak",
            "leak 3/3",
            "held +0 KiB/rep",
            "yes",
            "yes",
            "0.0 (0.0–0.0)",
            "0.0 (0.0–0.0)",
            "0.90 (0.90–0.90)",
        ],
        [
            "stateful_map",
            "leaky",
            "leak",
            "leak 3/3",
            "held +2,048 KiB/rep (+1,024 KiB/rep to +3,072 KiB/rep)",
            "yes",
            "yes",
            "2,048 (1,024–3,072)",
            "0.0 (0.0–0.0)",
            "—",
        ],
        [
            "stateful_map",
            "fixed",
            "no-leak",
            "no-leak 2, leak 1",
            # each verdict with its own number when the runs disagree
            "no-leak · held +1 KiB/rep (+1 KiB/rep to +3 KiB/rep), 2 runs; "
            "leak · held +2 KiB/rep, 1 run",
            "NO",
            "NO",
            "2.0 (1.0–3.0)",
            "0.0 (0.0–0.0)",
            "—",
        ],
    ]
    assert tables["tf-2.15.1"] == [
        # runs kept before repeat kept the number a verdict rests on: none shown
        ["stateful_map", "leaky", "leak", "leak 1/1", "—", "yes", "yes", "0.0", "0.0"],
        ["stateful_map", "fixed", "no-leak", "no-leak 1/1", "—", "yes", "yes", "0.0", "0.0"],
    ]
    head = page.split('id="tf-2.16.2-jobs2"', 1)[1].split("</thead>", 1)[0]
    assert ">held KiB/rep<" in head and ">threads/rep<" in head and ">peak ∝ size^k<" in head
    assert (
        '<span class="verdict v-no-leak">no-leak</span> '
        '2, <span class="verdict v-leak">leak</span> 1' in page
    )
    # pairs with a lesson link it; a pair without one is plain, escaped text
    assert '<a href="lessons/stateful_map.html">stateful_map</a>' in page and "<i>gone" not in page
    # the settings and totals, repeat_report's words
    assert (
        "3 runs per variant, each a fresh child process" in page
        and "2 of 3 variants agree over all runs" in page
    )
    # another machine's file is not this site's; a broken file is left out with a note, and no error
    assert "other_machines_pair" not in page
    assert any(n.startswith("vm-tf-broken.json skipped") for n in repeat_site.notes), (
        repeat_site.notes
    )


def test_repeatability_is_linked(repeat_site):
    out = repeat_site.out
    index = (out / "index.html").read_text()
    line = next(
        p for p in re.findall(r"<p>.*?</p>", index, re.S) if "How often each verdict repeats" in p
    )
    assert 'href="repeatability.html"' in line
    assert text_of(line) == (
        "How often each verdict repeats: 1 run of every variant on TensorFlow 2.15.1, 1 child "
        "at a time; 3 runs of every variant on TensorFlow 2.16.2, 2 children at a time ."
    )
    lesson = (out / "lessons" / "stateful_map.html").read_text()
    lines = [text_of(p) for p in re.findall(r'<p class="repeat">(.*?)</p>', lesson, re.S)]
    assert lines == [
        "Repeatability on TensorFlow 2.15.1, 1 child at a time: leaky leak 1/1; fixed no-leak 1/1 "
        "( the runs and the spread of their slopes ).",
        "Repeatability on TensorFlow 2.16.2, 2 children at a time: leaky leak 3/3; fixed no-leak "
        "2, leak 1 ( the runs and the spread of their slopes ).",
    ]
    assert (
        'href="../repeatability.html#tf-2.16.2-jobs2"' in lesson
        and 'href="../repeatability.html#tf-2.15.1"' in lesson
    )
    # a lesson whose pair was not repeated has no line
    assert "repeatability.html" not in (out / "lessons" / "xss_pair.html").read_text()
    for page in pages(out):  # every relative link resolves, the anchors included
        for link in parse(page).links:
            if relative(link):
                target = (page.parent / urlsplit(link).path).resolve()
                assert target.is_file(), f"{page.name}: broken link {link}"
                anchor = urlsplit(link).fragment
                assert not anchor or f'id="{anchor}"' in target.read_text(), (
                    f"{page.name}: no #{anchor}"
                )


def test_no_repeatability_no_page_and_no_links(
    built, repeat_site, results, site_checkout, tmp_path
):
    assert not (built.out / "repeatability.html").exists()
    for page in pages(built.out):
        text = page.read_text()
        assert "repeatability.html" not in text and "How often each verdict repeats" not in text, (
            page.name
        )
    # a rebuild without the files drops the page an earlier build wrote
    out = copy_site(repeat_site, tmp_path / "out")  # the build of repeat_results in checkout
    assert (out / "repeatability.html").is_file()
    site.build(results, out, root=site_checkout, asv=False)
    assert not (out / "repeatability.html").exists()
    assert "repeatability.html" not in (out / "index.html").read_text()


def test_the_browser_tests_skip_without_chromium_but_fail_under_ci(tmp_path, monkeypatch):
    """need_chromium is conftest.need_system_package (skip, or fail under CI=true: tested in
    test_fragmentation) with chromium's path and how to get it."""
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="apt-get install chromium.*CI=true"):
        need_chromium(tmp_path / "chromium")
    need_chromium(Path(__file__))  # there: the test goes on


def test_make_test_installs_chromium_in_one_place():
    """make test's setup (scripts/system-packages) installs chromium with the allocators; .ci/run,
    which runs make test with CI=true, installs nothing itself."""
    setup = (REPO / "scripts" / "system-packages").read_text()
    assert "missing+=(chromium)" in setup and "sudo apt-get install" in setup
    assert "scripts/system-packages" in (REPO / "Makefile").read_text()
    ci = (REPO / ".ci" / "run").read_text()
    assert "apt-get" not in ci and "export CI=true" in ci and "make test" in ci
