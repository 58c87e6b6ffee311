"""`--flamegraph-dir`: memray's flame graph of the allocations the heap pass retained.

A pure-Python leak (tests/data/python_leak.py) in a temporary checkout, as in
test_cli.py: no TensorFlow. The flame graph is drawn by `memray flamegraph
--leaks` from the heap pass's capture, after the child has exited.
"""

from __future__ import annotations

import json
import re

from conftest import invoke, pair_checkout

from leakbench.engine import heap
from tests.test_cli import FAST


def test_run_writes_the_leaky_flame_graph(tmp_path):
    root = pair_checkout(tmp_path)
    folder = tmp_path / "graphs" / "tf-none"  # created by the option
    result = invoke(
        "run",
        "pyleak",
        "--variant",
        "leaky",
        *FAST,
        "--flamegraph-dir",
        folder,
        "--format",
        "json",
        "--out",
        "out.jsonl",
        env={"LEAKBENCH_ROOT": root},
        cwd=tmp_path,
    )
    assert result.exit_code == 0, result.output
    page = folder / "pyleak-leaky.html"
    assert f"flame graph {page}" in result.stderr
    text = page.read_text()
    assert "<html" in text and len(text) < 2_000_000
    # the leak is there: repetition() of the scenario file holds the retained bytes
    assert "repetition" in text and "pyleak.py" in text
    rec = json.loads((tmp_path / "out.jsonl").read_text())
    assert rec["flamegraph"] == {"file": "pyleak-leaky.html"}
    assert "flamegraph_dir" not in rec["settings"]  # where it went is not how it was measured
    assert sorted(p.name for p in folder.iterdir()) == ["pyleak-leaky.html"]  # the capture is gone


def test_without_heap_pass_is_bad_input(tmp_path, monkeypatch):
    root = pair_checkout(tmp_path)
    monkeypatch.setenv("LEAKBENCH_ROOT", str(root))
    result = invoke(
        "run", "pyleak", *FAST[:-2], "--heap-reps", "0", "--flamegraph-dir", str(tmp_path / "g")
    )
    assert result.exit_code == 2 and "--heap-reps 0 skips it" in result.stderr


def test_a_folder_that_takes_no_file_is_bad_input_before_measuring(tmp_path, monkeypatch):
    root = pair_checkout(tmp_path)
    monkeypatch.setenv("LEAKBENCH_ROOT", str(root))
    result = invoke("run", "pyleak", *FAST[:-2], "--flamegraph-dir", "/proc/self")
    assert result.exit_code == 2 and result.stdout == "", result.output
    assert result.stderr.startswith(
        "leakbench: error: --flamegraph-dir: cannot write in /proc/self"
    )
    assert len(result.stderr.splitlines()) == 1


def test_render_failure_is_one_line(tmp_path):
    bogus = tmp_path / "not-a-capture.bin"
    bogus.write_bytes(b"nothing memray wrote")
    problem = heap.render_flamegraph(bogus, tmp_path / "out.html")
    assert problem and problem.startswith("memray flamegraph failed:") and "\n" not in problem


def test_cdn_scripts_are_listed_for_the_site(tmp_path):
    """The flame graph loads its libraries from CDNs (leakbench site rewrites them): say which."""
    import memray

    capture = tmp_path / "cap.bin"
    with memray.Tracker(capture, native_traces=False):
        kept = [bytearray(10_000) for _ in range(10)]
    assert heap.render_flamegraph(capture, tmp_path / "fg.html") is None
    text = (tmp_path / "fg.html").read_text()
    assert re.findall(r'<script src="https://[^"]+/d3@[\d.]+/dist/d3\.min\.js"', text) and kept
