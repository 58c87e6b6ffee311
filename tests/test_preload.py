"""Portability (issue 21): a library ENV preloads is found the dynamic loader's way
(leakbench.engine.preload: LD_LIBRARY_PATH, `ldconfig -p`, the default directories), never by a
Debian path; one the machine lacks makes the record read `skipped` with one line naming it and its
package, as a missing GPU does, and `leakbench run` exits 0. Nothing here imports TensorFlow: a
skipped variant starts no child.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import invoke

from leakbench import catalog, contract, expectation
from leakbench.catalog import Target
from leakbench.engine import preload
from leakbench.measure import measure
from leakbench.settings import Settings

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parents[1]
ABSENT = "libleakbench_absent.so.1"
SETTINGS = Settings(warmup=1, reps=5, heap_reps=0, cap_bytes=1 << 30, timeout_seconds=60)
CLI_LIMITS = ["--cap", "1GiB", "--timeout", "60", "--reps", "5", "--heap-reps", "0"]
LOADER_CACHE = preload.loader_cache  # the real one, where a test has hidden it (no_loader)


def libc() -> str:
    """Where the loader's cache puts libc.so.6 for this interpreter (skips where it cannot say)."""
    found = [p for p in LOADER_CACHE().get("libc.so.6", []) if preload.fits(p)]
    if not found:
        pytest.skip("ldconfig -p lists no libc.so.6 for this interpreter")
    return found[0]


@pytest.fixture
def no_loader(monkeypatch):
    """A machine whose loader finds nothing: no cache, no default directories, no
    LD_LIBRARY_PATH."""
    monkeypatch.setattr(preload, "loader_cache", lambda: {})
    monkeypatch.setattr(preload, "default_dirs", lambda: [])
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)


# --- the lookup ------------------------------------------------------------------------------


def test_a_present_library_is_found_by_its_soname_and_by_its_path():
    assert preload.missing({"LD_PRELOAD": "libc.so.6"}) is None
    assert preload.missing({"LD_PRELOAD": libc()}) is None
    assert preload.missing({}) is None and preload.missing({"LD_PRELOAD": " : "}) is None


def test_an_absent_soname_is_one_line_naming_it():
    reason = preload.missing({"LD_PRELOAD": f"libc.so.6:{ABSENT}"})
    assert reason is not None and "\n" not in reason
    assert reason.startswith(f"LD_PRELOAD names {ABSENT}, which is not installed")
    assert "ldconfig -p" in reason and "install the package with it" in reason


def test_a_known_allocator_names_its_package(no_loader):
    reason = preload.missing({"LD_PRELOAD": "libtcmalloc_minimal.so.4"})
    assert reason is not None and "apt-get install libtcmalloc-minimal4" in reason
    reason = preload.missing({"LD_PRELOAD": "/nonexistent/libjemalloc.so.2"})
    assert reason == (
        "LD_PRELOAD names /nonexistent/libjemalloc.so.2, which does not exist; install it "
        f"({preload.PACKAGES['libjemalloc.so.2']})"
    )


def test_without_ldconfig_the_default_directories_are_searched_and_the_reason_says_so(
    monkeypatch, tmp_path
):
    where = str(Path(libc()).parent)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(preload, "LDCONFIG_DIRS", ())
    assert preload.loader_cache() == {}
    monkeypatch.setattr(preload, "default_dirs", lambda: [where])
    assert preload.missing({"LD_PRELOAD": "libc.so.6"}) is None
    reason = preload.missing({"LD_PRELOAD": ABSENT})
    assert reason is not None and "ldconfig was not found to read the loader's cache" in reason
    (tmp_path / "ldconfig").write_text("#!/bin/sh\n")  # musl's: prints no cache
    (tmp_path / "ldconfig").chmod(0o755)
    assert preload.loader_cache() == {}
    reason = preload.missing({"LD_PRELOAD": ABSENT})
    assert reason is not None and reason.endswith(
        "and ldconfig -p listed no cache to look in; install the package with it"
    )


def test_ld_library_path_is_searched_first(no_loader, tmp_path):
    (tmp_path / ABSENT).symlink_to(libc())
    assert preload.missing({"LD_PRELOAD": ABSENT}) is not None
    found = {"LD_PRELOAD": ABSENT, "LD_LIBRARY_PATH": f"/nowhere:{tmp_path}"}
    assert preload.missing(found) is None


def test_a_library_for_another_machine_counts_as_missing(no_loader, tmp_path):
    head = bytearray(Path(libc()).read_bytes()[:64])
    head[18:20] = (0xFFFF).to_bytes(2, "little")  # e_machine no loader runs
    other = tmp_path / ABSENT
    other.write_bytes(bytes(head))
    reason = preload.missing({"LD_PRELOAD": str(other)})
    assert reason is not None and "not a shared library for this machine" in reason
    searched = {"LD_PRELOAD": ABSENT, "LD_LIBRARY_PATH": str(tmp_path)}
    assert preload.missing(searched) is not None  # found by name, yet the loader would skip it


def test_ldconfig_p_is_read_by_soname():
    text = (
        "3 libs found in cache `/etc/ld.so.cache'\n"
        "\tlibjemalloc.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libjemalloc.so.2\n"
        "\tlibc.so.6 (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/x86_64-linux-gnu/libc.so.6\n"
        "\tlibc.so.6 (libc6) => /lib/i386-linux-gnu/libc.so.6\n"
    )
    assert preload.parse_cache(text) == {
        "libjemalloc.so.2": ["/lib/x86_64-linux-gnu/libjemalloc.so.2"],
        "libc.so.6": ["/lib/x86_64-linux-gnu/libc.so.6", "/lib/i386-linux-gnu/libc.so.6"],
    }
    assert preload.candidates("libc.so.6", "/a:;/b", {}) == [
        "/a/libc.so.6",
        "/b/libc.so.6",
        *(f"{d}/libc.so.6" for d in preload.default_dirs()),
    ]


# --- the record and what passes ----------------------------------------------------------------


def test_a_missing_preload_reads_skipped_not_error_and_runs_nothing():
    target = Target(contract.read_metadata(DATA / "python_preload_absent.py"), "fixed")
    assert target.scenario.needs == ABSENT
    rec = measure(target, target.scenario.params, SETTINGS)  # its setup raises: it must not run
    assert rec["verdict"] == "skipped"
    assert rec["skip_reason"].startswith(f"LD_PRELOAD names {ABSENT}, which is not installed")
    assert (rec["phase"], rec["error"], rec["signals"], rec["metrics"]) == (None, None, [], {})
    assert [(r["status"], r["wall_seconds"]) for r in rec["runs"]] == [("skipped", 0.0)]
    assert rec["requires"] == ABSENT
    assert expectation.accepts(rec) and target.expected.accepts(rec)
    assert target.expected.label == "no-leak or skipped"
    json.dumps(rec, allow_nan=False)


def test_the_allocator_fix_passes_skipped_where_its_library_is_missing(no_loader):
    (target,) = catalog.targets(REPO, ["shuffle_fragmentation"], "fixed")
    assert target.scenario.env == {"LD_PRELOAD": "libtcmalloc_minimal.so.4"}  # a soname, no path
    rec = measure(target, target.scenario.params, SETTINGS)  # skipped before TensorFlow imports
    assert rec["verdict"] == "skipped" and "libtcmalloc-minimal4" in rec["skip_reason"]
    assert target.expected.accepts(rec) and expectation.accepts(rec)
    (leaky,) = catalog.targets(REPO, ["shuffle_fragmentation"], "leaky")
    assert leaky.scenario.needs is None  # no ENV: the leaky side needs nothing


def test_a_present_preload_is_measured(tmp_path):
    scenario = tmp_path / "with_libc.py"
    scenario.write_text(
        (DATA / "python_bounded.py").read_text() + '\nENV = {"LD_PRELOAD": "libc.so.6"}\n'
    )
    target = Target(contract.read_metadata(scenario), "fixed")
    rec = measure(target, target.scenario.params, SETTINGS)
    assert rec["verdict"] == "no-leak", (rec["verdict"], rec["error"], rec["skip_reason"])
    assert rec["requires"] == "libc.so.6" and expectation.accepts(rec)


# --- leakbench run exits 0 ---------------------------------------------------------------------


def test_run_of_a_file_whose_library_is_missing_exits_0(tmp_path):
    out = tmp_path / "records.jsonl"
    result = invoke(
        "run", DATA / "python_preload_absent.py", *CLI_LIMITS, "--format", "json", "--out", out
    )
    assert result.exit_code == 0, result.output
    assert f"python_preload_absent (file): skipped: LD_PRELOAD names {ABSENT}" in result.stderr
    assert json.loads(out.read_text())["verdict"] == "skipped"


def test_run_of_a_pair_whose_fix_lacks_its_library_exits_0(tmp_path, monkeypatch):
    root = tmp_path / "root"
    for sub, source in (("scenarios", "python_leak"), ("fixes", "python_preload_absent")):
        (root / sub).mkdir(parents=True)
        shutil.copy(DATA / f"{source}.py", root / sub / "absent.py")
    monkeypatch.setenv("LEAKBENCH_ROOT", str(root))
    result = invoke("run", "absent", "--variant", "fixed", *CLI_LIMITS)
    assert result.exit_code == 0, result.output
    assert f"absent (fixed): skipped: LD_PRELOAD names {ABSENT}" in result.stderr
    assert "no-leak or skipped" in result.stdout  # what the fix should read, in the table
