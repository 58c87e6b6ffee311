"""`leakbench site`: the static site from results/ (leakbench.site). No TensorFlow needed.

The fixture results (tests/data/site_results/records/) are trimmed real
records: stateful_map on TF 2.15.1 and 2.16.2, and `xss_pair` (unbounded_cache's
numbers, only on 2.16.2) whose title holds a <script> tag. The pair files are
written into a temporary checkout; xss_pair's docstring holds a <script> tag too.

The browser test loads every page in headless Debian chromium from a localhost
server and keeps screenshots in test-artifacts/ (gitignored); without chromium
it skips.
"""
from __future__ import annotations

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
from click.testing import CliRunner

from leakbench import cli, site, versions

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "data" / "site_results"
CHROMIUM = Path("/usr/bin/chromium")
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


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("checkout")
    for folder in ("scenarios", "fixes"):
        (root / folder).mkdir()
        shutil.copy(REPO / folder / "stateful_map.py", root / folder / "stateful_map.py")
    (root / "scenarios" / "xss_pair.py").write_text(XSS_SCENARIO)
    (root / "fixes" / "xss_pair.py").write_text(XSS_SCENARIO.replace("CACHE.append", "len"))
    return root


@pytest.fixture(scope="module")
def built(checkout, tmp_path_factory) -> site.Built:
    return site.build(RESULTS, tmp_path_factory.mktemp("site") / "out", root=checkout, asv=False)


def pages(out: Path) -> list[Path]:
    return sorted(p for p in out.rglob("*.html") if "asv" not in p.relative_to(out).parts)


def test_pages_exist(built):
    out = built.out
    assert {rel for rel, _ in built.pages} == {"style.css", "index.html", "lessons/stateful_map.html",
                                               "lessons/xss_pair.html"}
    for rel, size in built.pages:
        assert (out / rel).stat().st_size == size > 0
    for page in pages(out):
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


def test_record_title_is_escaped_without_a_scenario_file(tmp_path):
    """Pairs whose files are not in the checkout take their title from the record."""
    built = site.build(RESULTS, tmp_path / "out", root=tmp_path, asv=False)
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


def test_matrix_cells(built):
    index = (built.out / "index.html").read_text()
    assert re.findall(r"<th scope=\"col\">TF ([\d.]+)", index) == ["2.15.1", "2.16.2"]
    cells = matrix_cells(index)
    recs = {v: {(r["pair"], r["variant"]): r for r in versions.read_records(p)}
            for v, p in versions.available(RESULTS).items()}

    def kib(version, pair, variant):
        return f"{versions.metric_value(recs[version][(pair, variant)], 'rss_growth') / 1024:+,.0f}"

    assert cells["stateful_map"] == [
        f"leaky: leak {kib(v, 'stateful_map', 'leaky')} fixed: no-leak {kib(v, 'stateful_map', 'fixed')}"
        for v in ("2.15.1", "2.16.2")]
    # a peak pair shows its exponent; the fixed variant's unexpected verdict would be marked "!"
    assert cells["xss_pair"] == ["leaky: — fixed: —", "leaky: leak k=0.88 fixed: no-leak k=-0.24"]
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
    assert "<code>numpy_function</code> (and <code>py_function</code>) run ordinary Python" in lesson
    # both real files, side by side, the differing lines marked on each side
    leaky = re.findall(r'<span class="line del"><span class="ln">(\d+)</span>', lesson)
    fixed = re.findall(r'<span class="line ins"><span class="ln">(\d+)</span>', lesson)
    assert leaky == ["18", "26", "30"] and fixed == ["18", "26", "30", "31"]
    short = lesson.split('<pre class="diff">', 1)[1].split("</pre>", 1)[0]
    assert '<span class="line del">-    SEEN.append(x.copy())' in short
    assert '<span class="line ins">+    STATS[&#34;sum&#34;] += float(x.sum())' in short
    assert "SEEN.append(x.copy())" in lesson and "STATS[&#34;count&#34;] += 1" in lesson
    # one inline SVG chart, no XML prolog inside the HTML
    assert lesson.count("<svg ") == 1 and "<?xml" not in lesson and "<!DOCTYPE svg" not in lesson
    assert "fixed on TensorFlow 2.16.2" in lesson
    # peak and growth per TF version
    history = lesson.split('<table class="history">', 1)[1].split("</table>", 1)[0]
    assert re.findall(r'<th scope="row">([\d.]+)</th>', history) == ["2.15.1", "2.16.2"]
    # how to see it: the signals that moved, and the commands
    assert "<strong>rss</strong>" in lesson and "<strong>heap</strong>" in lesson
    assert "leakbench run scenarios/stateful_map.py" in lesson and "leakbench check" in lesson
    assert "No memray flame graph" in lesson


def test_lesson_links_its_report(built):
    lesson = (built.out / "lessons" / "xss_pair.html").read_text()
    assert lesson.count('href="https://github.com/tensorflow/tensorflow/issues/44176"') == 2  # source, docstring


def test_default_version_and_source_links():
    assert site.default_version(["2.12.1", "2.21.0", "2.99.0"]) == "2.21.0"
    assert site.default_version(["2.12.1", "2.16.2"]) == "2.16.2"
    assert site.source_link("tensorflow/tensorflow#123") == "https://github.com/tensorflow/tensorflow/issues/123"
    assert site.source_link("caching") is None


def test_cli(tmp_path):
    out = tmp_path / "site"
    result = CliRunner().invoke(cli.main, ["site", "--results", str(RESULTS), "--out", str(out), "--no-asv"])
    assert result.exit_code == 0, result.output
    assert (out / "index.html").is_file() and (out / "lessons" / "stateful_map.html").is_file()
    assert f"4 files in" in result.output
    bad = CliRunner().invoke(cli.main, ["site", "--results", str(tmp_path / "none"), "--out", str(out)])
    assert bad.exit_code == 2 and "no results directory" in bad.stderr


@pytest.fixture(scope="module")
def real_site(tmp_path_factory) -> site.Built:
    """The site of the committed results, with asv's pages when asv is installed."""
    has_asv = (Path(os.sys.executable).with_name("asv")).exists() or shutil.which("asv")
    return site.build(REPO / "results", tmp_path_factory.mktemp("real") / "site", root=REPO, asv=bool(has_asv))


def test_committed_results(real_site):
    names = sorted(p.stem for p in (REPO / "scenarios").glob("*.py"))
    assert sorted(Path(rel).stem for rel, _ in real_site.pages if rel.startswith("lessons/")) == names
    if real_site.asv:
        assert (real_site.out / "asv" / "index.html").is_file()
        assert 'href="../index.html"' in (real_site.out / "asv" / "index.html").read_text()  # linked back
        assert 'href="asv/index.html"' in (real_site.out / "index.html").read_text()
    for page in pages(real_site.out):
        for link in parse(page).links:
            if relative(link):
                assert (page.parent / urlsplit(link).path).is_file(), f"{page}: broken link {link}"


# --- the browser test -----------------------------------------------------------------

class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _chromium(url: str, *extra: str) -> subprocess.CompletedProcess:
    profile = tempfile.mkdtemp(prefix="leakbench-chromium-")
    try:
        return subprocess.run(
            [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *extra, url],
            capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


@pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium (Debian: apt-get install chromium; "
                                                  ".ci/run installs it as root)")
def test_browser(real_site):
    out = real_site.out
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(out)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        for page in pages(out):
            url = urljoin(base, page.relative_to(out).as_posix())
            done = _chromium(url, "--dump-dom")
            assert done.returncode == 0, done.stderr[-2000:]
            console = [line for line in done.stderr.splitlines()
                       if "CONSOLE" in line or "Uncaught" in line]
            assert not console, f"{url}: {console}"
            assert "</main>" in done.stdout, f"{url} did not render"
            if page.name == "index.html":
                assert re.search(r'<html lang="en" class="\s*js"', done.stdout), "the filter script did not run"
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
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        lesson = sorted(p for p in pages(out) if p.parent.name == "lessons")[0]
        shots = {"index.png": (base + "index.html", "1280,900"),
                 "index-phone.png": (base + "index.html", "390,844"),
                 f"lesson-{lesson.stem}.png": (urljoin(base, f"lessons/{lesson.name}"), "1280,900"),
                 f"lesson-{lesson.stem}-phone.png": (urljoin(base, f"lessons/{lesson.name}"), "390,844")}
        for name, (url, size) in shots.items():
            done = _chromium(url, f"--screenshot={ARTIFACTS / name}", f"--window-size={size}")
            assert done.returncode == 0 and (ARTIFACTS / name).stat().st_size > 10_000, done.stderr[-2000:]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
