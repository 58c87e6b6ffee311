"""TF version comparison on hand-made record files (tests/data/results/): the
TF pin check, `leakbench compare` (exit 0 unchanged, 1 regression, 2 bad
input; markdown and JSON) and `leakbench matrix`. No TensorFlow needed.

The fixture records: 2.13.1 is the reference; 2.21.0 moves numbers by less
than 1.5× or less than the noise floor; in 2.99.0 the `growing` fix leaks
again and the `peaking` fix's peak triples (25 → 80 MiB).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from leakbench import cli, versions

RESULTS = Path(__file__).parent / "data" / "results"
FILES = RESULTS / "records"


def invoke(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args])


def one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("leakbench: error: "), result.stderr
    return lines[0]


# --- the TF pin ---------------------------------------------------------------

def test_pin_check_passes_when_the_child_imported_the_pinned_version():
    versions.check_tf_version(versions.read_records(FILES / "tf-2.13.1.jsonl"), "2.13.1")


def test_pin_check_raises_on_another_version():
    recs = versions.read_records(FILES / "tf-2.13.1.jsonl")
    with pytest.raises(versions.VersionError, match="imported TensorFlow 2.13.1, but this environment pins 2.21.0"):
        versions.check_tf_version(recs, "2.21.0")


def test_pin_check_raises_without_tensorflow_installed():
    with pytest.raises(versions.VersionError, match="no TensorFlow distribution"):
        versions.check_tf_version([], None)


def test_pin_check_skips_a_child_that_died_before_reporting_versions():
    crashed = {"pair": "p", "variant": "leaky", "verdict": "over-cap", "environment": {"tensorflow": None}}
    versions.check_tf_version([crashed], "2.21.0")


def test_installed_version_comes_from_pip_metadata(monkeypatch):
    seen = {"tensorflow": "2.15.1"}

    def version(dist):
        if dist not in seen:
            raise versions.metadata.PackageNotFoundError(dist)
        return seen[dist]
    monkeypatch.setattr(versions.metadata, "version", version)
    assert versions.installed_tf_version() == "2.15.1"
    seen.clear()
    assert versions.installed_tf_version() is None


# --- record files --------------------------------------------------------------

def test_write_records_rewrites_the_version_file(tmp_path):
    recs = versions.read_records(FILES / "tf-2.13.1.jsonl")
    versions.write_records(tmp_path, "2.13.1", recs)
    versions.write_records(tmp_path, "2.13.1", recs)  # a rerun replaces, never appends
    assert len(versions.read_records(tmp_path / "records" / "tf-2.13.1.jsonl")) == len(recs)
    changed = {**recs[0], "verdict": "no-leak"}
    versions.write_records(tmp_path, "2.13.1", [changed])  # a partial run keeps the other records
    again = versions.read_records(tmp_path / "records" / "tf-2.13.1.jsonl")
    assert len(again) == len(recs)
    assert [r["verdict"] for r in again if (r["pair"], r["variant"]) == (changed["pair"], changed["variant"])] == ["no-leak"]


def test_versions_sort_numerically():
    assert sorted(["2.9.1", "2.12.1", "2.10.0"], key=versions.version_key) == ["2.9.1", "2.10.0", "2.12.1"]


# --- compare -------------------------------------------------------------------

def test_compare_unchanged_exits_0_markdown():
    result = invoke("compare", "2.13.1", "2.21.0", "--results", RESULTS)
    assert result.exit_code == 0, result.output
    assert "| pair | variant | metric | 2.13.1 | 2.21.0 | ratio | |" in result.output
    assert "| growing | fixed | RSS growth (KiB/rep) | 4.00 | 9.00 | 2.25× |  |" in result.output  # below the floor
    assert "| peaking | fixed | peak above baseline (MiB) | 25.0 | 30.0 | 1.20× |  |" in result.output
    assert "exit 0" in result.output


def test_compare_regression_exits_1_and_names_it():
    result = invoke("compare", "2.13.1", "2.99.0", "--results", RESULTS)
    assert result.exit_code == 1, result.output
    assert "| growing | fixed | verdict | no-leak | leak |  | **changed** |" in result.output
    assert "growing (fixed): verdict no-leak → leak: the fix leaks again" in result.output
    assert "peaking (fixed): peak above baseline 25.0 → 80.0 MiB, past 1.5×" in result.output
    assert "▲ regressed" in result.output


def test_compare_factor_is_configurable():
    # 25 → 30 MiB is 1.2×, but under the 16 MiB floor: no marker even at 1.1×
    assert invoke("compare", "2.13.1", "2.21.0", "--results", RESULTS, "--factor", "1.1").exit_code == 0
    # 25 → 80 MiB is 3.2×: at 4× the peak is no failure, the verdict change still is
    result = invoke("compare", "2.13.1", "2.99.0", "--results", RESULTS, "--factor", "4", "--format", "json")
    assert result.exit_code == 1
    assert json.loads(result.output)["failures"] == ["growing (fixed): verdict no-leak → leak: the fix leaks again"]


def test_compare_json():
    result = invoke("compare", "2.13.1", "2.99.0", "--results", RESULTS, "--format", "json")
    found = json.loads(result.output)
    assert found["exit_code"] == 1 == result.exit_code
    assert (found["old"], found["new"], found["factor"]) == ("2.13.1", "2.99.0", 1.5)
    row = next(r for r in found["rows"] if (r["pair"], r["variant"], r["metric"])
               == ("peaking", "fixed", "peak above baseline"))
    assert row["old"] == 25 << 20 and row["new"] == 80 << 20 and row["marker"] == "regressed"
    assert row["ratio"] == pytest.approx(3.2)


def test_compare_accepts_record_files():
    result = invoke("compare", FILES / "tf-2.13.1.jsonl", FILES / "tf-2.21.0.jsonl")
    assert result.exit_code == 0, result.output
    assert "TensorFlow 2.13.1 → 2.21.0" in result.output


def test_compare_improvement_is_marked_and_passes():
    result = invoke("compare", "2.99.0", "2.13.1", "--results", RESULTS)
    assert "▼ improved" in result.output
    assert result.exit_code == 1  # the verdict changed (leak → no-leak): a change is reported either way


@pytest.mark.parametrize("args, message", [
    (("2.13.1", "2.0.0"), "TensorFlow 2.0.0 is not in"),
    (("2.13.1", "missing.jsonl"), "no records file at missing.jsonl"),
    (("2.13.1", "2.21.0", "--factor", "1"), "--factor must be above 1"),
])
def test_compare_bad_input_exits_2(args, message):
    result = invoke("compare", *args, "--results", RESULTS)
    assert message in one_error_line(result)


def test_compare_wrong_directory_exits_2(tmp_path):
    (tmp_path / "vm").mkdir()  # an asv results directory of another project: no records/
    (tmp_path / "benchmarks.json").write_text("{}")
    assert "holds no leakbench records" in one_error_line(invoke("compare", "2.13.1", "2.21.0", "--results", tmp_path))
    assert "no results directory" in one_error_line(invoke("matrix", "--results", tmp_path / "nope"))


@pytest.mark.parametrize("text, message", [
    ('{"schema": 1, "pair": "x"\n', "line 1: corrupt JSON"),
    ('{"some": "other json"}\n', "line 1: not a leakbench record"),
    ("\n", "holds no records"),
])
def test_corrupt_records_exit_2(tmp_path, text, message):
    shutil.copytree(RESULTS, tmp_path / "results")
    (tmp_path / "results" / "records" / "tf-2.21.0.jsonl").write_text(text)
    assert message in one_error_line(invoke("compare", "2.13.1", "2.21.0", "--results", tmp_path / "results"))
    assert message in one_error_line(invoke("matrix", "--results", tmp_path / "results"))


# --- matrix --------------------------------------------------------------------

def test_matrix_markdown():
    result = invoke("matrix", "--results", RESULTS)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "| pair | variant | 2.13.1 | 2.21.0 | 2.99.0 |" in lines
    assert "| growing | fixed | no-leak +4 | no-leak +9 | **leak** (rss) +900 |" in lines
    assert "| peaking | leaky | leak k=0.80 | leak k=0.80 | leak k=0.80 |" in lines


def test_matrix_json():
    found = json.loads(invoke("matrix", "--results", RESULTS, "--format", "json").output)
    assert found["versions"] == ["2.13.1", "2.21.0", "2.99.0"]
    cell = next(r for r in found["rows"] if (r["pair"], r["variant"]) == ("growing", "fixed"))["cells"]["2.99.0"]
    assert cell["verdict"] == "leak" and cell["expected"] is False
    assert cell["rss_growth_bytes_per_rep"] == 900 * 1024


def test_matrix_marks_a_version_without_a_pair(tmp_path):
    shutil.copytree(RESULTS, tmp_path / "results")
    recs = versions.read_records(FILES / "tf-2.13.1.jsonl")
    versions.write_records(tmp_path / "results", "2.12.1", [{**r, "environment": {"tensorflow": "2.12.1"}}
                                                            for r in recs if r["pair"] == "growing"])
    found = versions.matrix(tmp_path / "results")
    assert found["versions"][0] == "2.12.1"
    peaking = next(r for r in found["rows"] if r["pair"] == "peaking")
    assert peaking["cells"]["2.12.1"] is None
    assert "| peaking | fixed | — |" in versions.matrix_markdown(found)


def test_empty_matrix_exits_2(tmp_path):
    (tmp_path / "records").mkdir()
    assert "holds no leakbench records" in one_error_line(invoke("matrix", "--results", tmp_path))
