"""`leakbench check TARGET --html FILE`: one self-contained page with the lesson's views
(leakbench.site.report). The TF test loads the page of tests/data/check_tf.py:stateful_map in
headless Chromium, offline from file:// and from a local server, with no console error."""

from __future__ import annotations

import re
import threading
from functools import partial
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import invoke
from test_site import _chromium, _console, _Quiet

from leakbench.check import pipeline as check
from leakbench.settings import Settings
from leakbench.site import report

DATA = Path(__file__).parent / "data"
SETTINGS = Settings(warmup=1, reps=6, heap_reps=5, cap_bytes=1 << 30, timeout_seconds=120)
LOADS = re.compile(
    r'<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)="(?!#|data:)[^"]+"', re.IGNORECASE
)


@pytest.fixture(scope="module")
def leaky_page(tmp_path_factory) -> Path:
    rec = check.check(f"{DATA / 'check_python.py'}:leaky", SETTINGS)
    assert rec["verdict"] == "leak", (rec["verdict"], rec["error"])
    return report.write_check_page(rec, tmp_path_factory.mktemp("report") / "report.html")


def test_the_page_loads_nothing_and_shows_the_evidence(leaky_page):
    html = leaky_page.read_text()
    assert not LOADS.findall(html), LOADS.findall(html)  # self-contained: style and charts inline
    assert "<style>" in html and 'role="img"' in html and "aria-label=" in html
    assert (
        ">leak<" in html and "Where the memory is" in html and "Growth by allocation site" in html
    )
    assert "check_python.py:" in html  # the user's line, not the engine's


def test_cli_html_writes_the_page_and_refuses_a_missing_folder(tmp_path):
    target, safe = (
        f"{DATA / 'check_python.py'}:bounded",
        ["--cap", "1GiB", "--timeout", "60", "--reps", "6"],
    )
    bad = invoke("check", target, *safe, "--html", str(tmp_path / "no" / "r.html"))
    assert bad.exit_code == 2 and bad.stderr.count("\n") == 1 and "--html" in bad.stderr, bad.output
    good = invoke("check", target, *safe, "--html", str(tmp_path / "r.html"))
    assert good.exit_code == 0, good.output
    assert "no-leak" in (tmp_path / "r.html").read_text() and "report written" in good.stderr


@pytest.mark.tf
def test_stateful_map_report_loads_in_chromium_without_console_errors(
    chromium, tf_records, tmp_path
):
    rec = tf_records[("stateful_map", "factory")]
    page = report.write_check_page(rec, tmp_path / "stateful_map.html")
    done = _chromium(page.as_uri(), "--dump-dom", "--allow-file-access-from-files")
    assert done.returncode == 0 and not _console(done), _console(done)
    assert "stateful_map" in done.stdout and "<svg" in done.stdout
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        done = _chromium(
            f"http://127.0.0.1:{server.server_address[1]}/stateful_map.html", "--dump-dom"
        )
        assert done.returncode == 0 and not _console(done), _console(done)
    finally:
        server.shutdown()
