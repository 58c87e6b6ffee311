"""TF version comparison on hand-made record files (tests/data/results/): the
TF pin check, `leakbench compare` (exit 0 without a regression, 1 on one, 2 bad
input; markdown and JSON; the gate's classification: tests/test_gate.py) and
`leakbench matrix`. No TensorFlow needed.

The fixture records (tests/data/results/records/fixture/, asv machine
`fixture`): 2.13.1 is the reference; 2.21.0 moves numbers by less than 1.5×
or less than the noise floor; in 2.99.0 the `growing` fix leaks again, the
`peaking` fix's peak triples (25 → 80 MiB) and the `fragmenting` fix reads
fragmentation (RSS +500 KiB/rep, malloc heap +1, 6.5 MiB given back by the
trim). `fragmenting` leaky reads fragmentation everywhere; `gpu_only` is
skipped everywhere (REQUIRES = "GPU", no GPU visible to TensorFlow).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import invoke, refused

from leakbench import metrics
from leakbench.analysis import record_type, schema
from leakbench.analysis.judge import verdict
from leakbench.history import builds, compare, machines, matrix, pin, store
from leakbench.reporters import history as history_md

RESULTS = Path(__file__).parent / "data" / "results"
MACHINE = "fixture"  # the asv machine name of the fixture records
FILES = RESULTS / "records" / MACHINE


# --- the TF pin ---------------------------------------------------------------


def test_pin_check_passes_when_the_child_imported_the_pinned_version():
    pin.check_tf_version(store.read_records(FILES / "tf-2.13.1.jsonl"), "2.13.1")


def test_pin_check_raises_on_another_version():
    recs = store.read_records(FILES / "tf-2.13.1.jsonl")
    with pytest.raises(
        store.VersionError, match="imported TensorFlow 2.13.1, but this environment pins 2.21.0"
    ):
        pin.check_tf_version(recs, "2.21.0")


def test_pin_check_raises_without_tensorflow_installed():
    with pytest.raises(store.VersionError, match="no TensorFlow distribution"):
        pin.check_tf_version([], None)


def test_pin_check_skips_a_child_that_died_before_reporting_versions():
    crashed = {
        "pair": "p",
        "variant": "leaky",
        "verdict": "over-cap",
        "environment": {"tensorflow": None},
    }
    pin.check_tf_version([crashed], "2.21.0")


def test_installed_version_comes_from_pip_metadata(monkeypatch):
    seen = {"tensorflow": "2.15.1"}

    def version(dist):
        if dist not in seen:
            raise pin.metadata.PackageNotFoundError(dist)
        return seen[dist]

    monkeypatch.setattr(pin.metadata, "version", version)
    assert pin.installed_tf_version() == "2.15.1"
    seen.clear()
    assert pin.installed_tf_version() is None


# --- record files --------------------------------------------------------------


def test_write_records_rewrites_the_version_file(tmp_path):
    recs = store.read_records(FILES / "tf-2.13.1.jsonl")
    store.write_records(tmp_path, "box", "2.13.1", recs)
    store.write_records(tmp_path, "box", "2.13.1", recs)  # a rerun replaces, never appends
    assert len(store.read_records(tmp_path / "records" / "box" / "tf-2.13.1.jsonl")) == len(recs)
    changed = {**recs[0], "verdict": "no-leak"}
    # a partial run keeps the other records
    store.write_records(tmp_path, "box", "2.13.1", [changed])
    again = store.read_records(tmp_path / "records" / "box" / "tf-2.13.1.jsonl")
    assert len(again) == len(recs)
    assert [
        r["verdict"]
        for r in again
        if (r["pair"], r["variant"]) == (changed["pair"], changed["variant"])
    ] == ["no-leak"]


def test_versions_sort_numerically():
    assert sorted(["2.9.1", "2.12.1", "2.10.0"], key=store.version_key) == [
        "2.9.1",
        "2.10.0",
        "2.12.1",
    ]


# --- compare -------------------------------------------------------------------


def test_compare_unchanged_exits_0_markdown():
    result = invoke("compare", "2.13.1", "2.21.0", "--results", RESULTS)
    assert result.exit_code == 0, result.output
    # the summary first, then every metric
    assert result.output.index("**Exit 0: no regression.**") < result.output.index("| pair |")
    assert "| pair | variant | metric | 2.13.1 | 2.21.0 | ratio |  |" in result.output
    # below the floor
    assert "| growing | fixed | RSS (KiB/rep) | 4.00 | 9.00 | 2.25× |  |" in result.output
    assert (
        "| peaking | fixed | peak above baseline (MiB) | 25.0 | 30.0 | 1.20× |  |" in result.output
    )


def test_compare_regression_exits_1_and_names_it():
    result = invoke("compare", "2.13.1", "2.99.0", "--results", RESULTS)
    assert result.exit_code == 1, result.output
    assert "| growing | fixed | verdict | no-leak | leak |  | **changed** |" in result.output
    regressions = result.output.split("### Regressions: 2")[1].split("###")[0]
    assert (
        "- growing (fixed): no-leak · rss +4 KiB/rep → leak · rss +900 KiB/rep: "
        "the fix leaks again" in regressions
    )
    assert "peaking (fixed)" in regressions
    assert ": peak above baseline 25.0 → 80.0 MiB, past 1.5×" in regressions
    assert "▲ regressed" in result.output


def test_compare_factor_is_configurable():
    # 25 → 30 MiB is 1.2×, but under the 16 MiB floor: no marker even at 1.1×
    assert (
        invoke("compare", "2.13.1", "2.21.0", "--results", RESULTS, "--factor", "1.1").exit_code
        == 0
    )
    # 25 → 80 MiB is 3.2×: at 4× the peak is no regression, the fix that leaks still is
    result = invoke(
        "compare", "2.13.1", "2.99.0", "--results", RESULTS, "--factor", "4", "--format", "json"
    )
    assert result.exit_code == 1
    assert json.loads(result.output)["failures"] == [
        "growing (fixed): no-leak · rss +4 KiB/rep → leak · rss +900 KiB/rep: the fix leaks again",
    ]


def test_compare_json():
    result = invoke("compare", "2.13.1", "2.99.0", "--results", RESULTS, "--format", "json")
    found = json.loads(result.output)
    assert found["exit_code"] == 1 == result.exit_code
    assert (found["old"], found["new"], found["factor"]) == ("2.13.1", "2.99.0", 1.5)
    assert found["counts"]["regression"] == 2 and found["counts"]["skipped"] == 2
    row = next(
        r
        for r in found["rows"]
        if (r["pair"], r["variant"], r["metric"]) == ("peaking", "fixed", "peak above baseline")
    )
    assert row["old"] == 25 << 20 and row["new"] == 80 << 20 and row["marker"] == "regressed"
    assert row["ratio"] == pytest.approx(3.2)


def test_compare_accepts_record_files():
    result = invoke("compare", FILES / "tf-2.13.1.jsonl", FILES / "tf-2.21.0.jsonl")
    assert result.exit_code == 0, result.output
    assert "TensorFlow 2.13.1 → 2.21.0" in result.output


def test_compare_improvement_is_marked_and_passes():
    result = invoke("compare", "2.99.0", "2.13.1", "--results", RESULTS)
    assert "▼ improved" in result.output
    # the fix read leak and reads no-leak again: a change, shown, that does not count
    assert result.exit_code == 0, result.output
    assert "- growing (fixed): leak · rss +900 KiB/rep → no-leak · rss +4 KiB/rep" in result.output


@pytest.mark.parametrize(
    "args, message",
    [
        (("2.13.1", "2.0.0"), "TensorFlow 2.0.0 is not in"),
        (("2.13.1", "missing.jsonl"), "no records file at missing.jsonl"),
        (("2.13.1", "2.21.0", "--factor", "1"), "--factor must be above 1"),
    ],
)
def test_compare_bad_input_exits_2(args, message):
    result = invoke("compare", *args, "--results", RESULTS)
    assert message in refused(result)


def test_compare_wrong_directory_exits_2(tmp_path):
    (tmp_path / "vm").mkdir()  # an asv results directory of another project: no records/
    (tmp_path / "benchmarks.json").write_text("{}")
    assert "holds no leakbench records" in refused(
        invoke("compare", "2.13.1", "2.21.0", "--results", tmp_path)
    )
    assert "no results directory" in refused(invoke("matrix", "--results", tmp_path / "nope"))


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"schema": 1, "pair": "x"\n', "line 1: corrupt JSON"),
        ('{"some": "other json"}\n', "line 1: not a leakbench record"),
        ("\n", "holds no records"),
    ],
)
def test_corrupt_records_exit_2(tmp_path, text, message):
    shutil.copytree(RESULTS, tmp_path / "results")
    (tmp_path / "results" / "records" / MACHINE / "tf-2.21.0.jsonl").write_text(text)
    assert message in refused(
        invoke("compare", "2.13.1", "2.21.0", "--results", tmp_path / "results")
    )
    assert message in refused(invoke("matrix", "--results", tmp_path / "results"))


# --- matrix --------------------------------------------------------------------


def test_matrix_markdown():
    result = invoke("matrix", "--results", RESULTS)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "| pair | variant | 2.13.1 | 2.21.0 | 2.99.0 |" in lines
    assert (
        "| growing | fixed | no-leak · rss +4 KiB/rep | no-leak · rss +9 KiB/rep | "
        "**leak** (rss) · rss +900 KiB/rep · malloc +880 · trim 3.0 MiB |" in lines
    )
    peak = "leak · peak +180.0 MiB, k=0.80"
    assert f"| peaking | leaky | {peak} | {peak} | {peak} |" in lines
    assert (
        "| peaking | fixed | no-leak · peak +75.0 MiB, k=0.05 (under 0.5) | "
        "no-leak · peak +90.0 MiB, k=0.07 (under 0.5) | "
        "no-leak · peak +240.0 MiB, k=0.10 (under 0.5) |" in lines
    )


def test_matrix_json():
    found = json.loads(invoke("matrix", "--results", RESULTS, "--format", "json").output)
    assert found["versions"] == ["2.13.1", "2.21.0", "2.99.0"] and found["machine"] == MACHINE
    cell = next(r for r in found["rows"] if (r["pair"], r["variant"]) == ("growing", "fixed"))[
        "cells"
    ]["2.99.0"]
    assert cell["verdict"] == "leak" and cell["expected"] is False
    assert cell["decision"]["value"] == 900 * 1024 and cell["expectation"] == "no-leak"


def test_matrix_marks_a_version_without_a_pair(tmp_path):
    shutil.copytree(RESULTS, tmp_path / "results")
    recs = store.read_records(FILES / "tf-2.13.1.jsonl")
    store.write_records(
        tmp_path / "results",
        MACHINE,
        "2.12.1",
        [{**r, "environment": {"tensorflow": "2.12.1"}} for r in recs if r["pair"] == "growing"],
    )
    found = matrix.matrix(tmp_path / "results")
    assert found["versions"][0] == "2.12.1"
    peaking = next(r for r in found["rows"] if r["pair"] == "peaking")
    assert peaking["cells"]["2.12.1"] is None
    assert "| peaking | fixed | — |" in history_md.matrix_markdown(found)


def test_empty_matrix_exits_2(tmp_path):
    (tmp_path / "records").mkdir()
    assert "holds no leakbench records" in refused(invoke("matrix", "--results", tmp_path))


# --- fragmentation, malloc heap and trim, the skipped GPU pair -------------


def test_compare_shows_malloc_heap_growth_and_trim():
    result = invoke("compare", "2.13.1", "2.99.0", "--results", RESULTS)
    assert (
        "| growing | fixed | malloc in use (KiB/rep) | 2.00 | 880 | 440.00× | ▲ regressed |"
        in result.output
    )
    assert (
        "| growing | leaky | returned by malloc_trim (MiB) | 4.00 | 4.00 | 1.00× |  |"
        in result.output
    )
    # 3.0 → 6.5 MiB given back is 2.2×, but under the 8 MiB floor: the allocator's noise here
    assert (
        "| fragmenting | fixed | returned by malloc_trim (MiB) | 3.00 | 6.50 | 2.17× |  |"
        in result.output
    )
    rows = json.loads(
        invoke("compare", "2.13.1", "2.99.0", "--results", RESULTS, "--format", "json").output
    )["rows"]
    trim = next(
        r
        for r in rows
        if (r["pair"], r["variant"], r["metric"]) == ("growing", "leaky", "returned by malloc_trim")
    )
    assert trim["old"] == trim["new"] == 4 << 20 and trim["unit"] == "MiB"


def test_compare_shows_fragmentation_apart_from_leak():
    result = invoke("compare", "2.13.1", "2.99.0", "--results", RESULTS)
    assert (
        "| fragmenting | leaky | verdict | fragmentation | fragmentation |  |  |" in result.output
    )
    assert (
        "| fragmenting | fixed | verdict | no-leak | fragmentation |  | **changed** |"
        in result.output
    )
    assert (
        "fragmentation (fixed)" not in result.output
        and verdict.VERDICTS["fragmentation"] in result.output
    )
    # a fix that fragments is not what it should read, but holds nothing: no regression
    changes = result.output.split("### Changes that do not count: 1")[1].split("###")[0]
    assert (
        "- fragmenting (fixed): no-leak · rss +8 KiB/rep → fragmentation · trim gave back "
        "6.5 MiB: it should read no-leak" in changes
    )
    assert "the fix leaks again" not in next(
        ln for ln in result.output.splitlines() if ln.startswith("- fragmenting")
    )


def test_matrix_shows_fragmentation_with_its_evidence():
    lines = invoke("matrix", "--results", RESULTS).output.splitlines()
    # undeclared (no EXPECTED = "fragmentation" in its
    # contract): neither side should read it, evidence shown
    frag = "**fragmentation** (rss) · trim gave back {} MiB · malloc {}"
    assert (
        f"| fragmenting | leaky | {frag.format('9.0', '+2')} | "
        f"{frag.format('9.0', '+2')} | {frag.format('9.0', '+2')} |" in lines
    )
    assert (
        "| fragmenting | fixed | no-leak · rss +8 KiB/rep | no-leak · rss +8 KiB/rep | "
        f"{frag.format('6.5', '+1')} |" in lines
    )
    found = matrix.matrix(RESULTS)
    cell = next(r for r in found["rows"] if (r["pair"], r["variant"]) == ("fragmenting", "leaky"))[
        "cells"
    ]["2.13.1"]
    assert (
        cell["verdict"] == "fragmentation"
        and cell["expected"] is False
        and cell["expectation"] == "leak"
    )
    # registry keys
    assert cell["malloc_heap_growth"] == 2 * 1024 and cell["trim_returned_bytes"] == 9 << 20


def test_skipped_pair_in_matrix_and_compare():
    lines = invoke("matrix", "--results", RESULTS).output.splitlines()
    # not bold: nothing unexpected
    skipped = "skipped · no GPU visible to TensorFlow"
    assert f"| gpu_only | leaky | {skipped} | {skipped} | {skipped} |" in lines
    cell = next(r for r in matrix.matrix(RESULTS)["rows"] if r["pair"] == "gpu_only")["cells"][
        "2.21.0"
    ]
    assert cell["verdict"] == "skipped" and cell["expected"] is True
    assert cell["skip_reason"] == "no GPU visible to TensorFlow"
    result = invoke("compare", "2.13.1", "2.21.0", "--results", RESULTS)
    assert result.exit_code == 0, result.output
    assert [ln for ln in result.output.splitlines() if ln.startswith("| gpu_only |")] == [
        "| gpu_only | leaky | verdict | skipped | skipped |  |  |",
        # no metric rows: nothing measured
        "| gpu_only | fixed | verdict | skipped | skipped |  |  |",
    ]


def test_a_skip_against_a_measurement_is_shown_not_failed(tmp_path):
    recs = store.read_records(FILES / "tf-2.13.1.jsonl")
    measured = [
        {**r, "verdict": "leak" if r["variant"] == "leaky" else "no-leak"}
        if r["pair"] == "gpu_only"
        else r
        for r in recs
    ]
    found = compare.compare("gpu", measured, "cpu", recs)
    row = next(
        r
        for r in found.rows
        if (r["pair"], r["variant"], r["metric"]) == ("gpu_only", "fixed", "verdict")
    )
    assert (row["old"], row["new"], row["marker"]) == ("no-leak", "skipped", compare.CHANGED)
    assert found.failures == [] and found.exit_code == 0
    assert [e["outcome"] for e in found.entries if e["pair"] == "gpu_only"] == [compare.SKIPPED] * 2


# --- records per asv machine ------------------------------------------------------


def two_machines(tmp_path) -> Path:
    shutil.copytree(RESULTS, tmp_path / "results")
    shutil.copytree(FILES, tmp_path / "results" / "records" / "gpu-box")
    (tmp_path / "results" / "records" / "gpu-box" / "tf-2.99.0.jsonl").unlink()
    return tmp_path / "results"


def test_records_live_under_their_machine():
    assert store.machines(RESULTS) == [MACHINE]
    assert store.records_path(RESULTS, MACHINE, "2.13.1") == FILES / "tf-2.13.1.jsonl"
    assert list(store.available(RESULTS)) == ["2.13.1", "2.21.0", "2.99.0"]
    assert store.available(RESULTS, MACHINE) == store.available(RESULTS)


def test_several_machines_need_machine_one_line(tmp_path):
    results = two_machines(tmp_path)
    for args in (
        ("matrix",),
        ("compare", "2.13.1", "2.21.0"),
        ("site", "--no-asv", "--out-dir", tmp_path / "site"),
    ):
        line = refused(invoke(*args, "--results", results))
        assert line == (
            f"leakbench: error: {results} holds records of 2 machines (fixture, gpu-box): "
            "pick one with --machine"
        ), args


def test_machine_option_picks_the_records(tmp_path):
    results = two_machines(tmp_path)
    found = json.loads(
        invoke("matrix", "--results", results, "--machine", "gpu-box", "--format", "json").output
    )
    assert found["machine"] == "gpu-box" and found["versions"] == ["2.13.1", "2.21.0"]
    result = invoke("compare", "2.13.1", "2.21.0", "--results", results, "--machine", "fixture")
    assert result.exit_code == 0 and "Records of asv machine `fixture`." in result.output
    assert "TensorFlow 2.99.0 is not in" in refused(
        invoke("compare", "2.13.1", "2.99.0", "--results", results, "--machine", "gpu-box")
    )
    assert "no records of machine 'laptop'" in refused(
        invoke("matrix", "--results", results, "--machine", "laptop")
    )


def test_record_files_need_no_machine(tmp_path):
    results = two_machines(tmp_path)  # two machines, but the files are named: nothing to pick
    result = invoke(
        "compare", FILES / "tf-2.13.1.jsonl", FILES / "tf-2.21.0.jsonl", "--results", results
    )
    assert result.exit_code == 0, result.output
    assert "Records of asv machine" not in result.output


def test_records_of_the_old_layout_are_named(tmp_path):
    (tmp_path / "records").mkdir()
    shutil.copy(FILES / "tf-2.13.1.jsonl", tmp_path / "records")
    line = refused(invoke("matrix", "--results", tmp_path))
    assert (
        "holds records without a machine folder" in line and "records/<asv machine name>/" in line
    )


def test_write_records_refuses_a_machine_name_that_is_no_folder(tmp_path):
    for bad in ("", "..", "a/b"):
        with pytest.raises(store.VersionError, match="not an asv machine name"):
            store.write_records(tmp_path, bad, "2.13.1", [])


def test_asv_machine_follows_asv(tmp_path, monkeypatch):
    monkeypatch.delenv("ASV_MACHINE", raising=False)
    monkeypatch.setattr(machines.platform, "uname", lambda: type("U", (), {"node": "host-1"})())
    assert machines.asv_machine(tmp_path) == "host-1"  # asv's default: the host name
    # asv run rewrites machine.json as it starts
    for name, when in (("vm", 1_000), ("ci-runner", 2_000)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "machine.json").write_text("{}")
        os.utime(tmp_path / name / "machine.json", (when, when))
    assert machines.asv_machine(tmp_path) == "ci-runner"
    monkeypatch.setenv("ASV_MACHINE", "github-ubuntu-latest")
    assert machines.asv_machine(tmp_path) == "github-ubuntu-latest"


def test_committed_records_are_per_machine(committed_results):
    """The published dataset as committed: its records under machine folders only (one CPU per
    name: test_machines), the reference machine's among them with asv's machine.json beside;
    a user's own runs (.local) are never committed."""
    found = store.machines(committed_results)
    assert found and not any(machines.is_local(m) for m in found)
    reference = store.published_machine(committed_results)
    assert reference in found
    assert (committed_results / reference / "machine.json").is_file()
    assert not list((committed_results / "records").glob("tf-*.jsonl"))


# --- the asv glue (benchmarks/benchmark_pairs.py): numbers read from one build's records --------


@pytest.fixture
def glue(monkeypatch):
    """benchmarks.benchmark_pairs imported afresh with the environment a test sets (it reads
    LEAKBENCH_BUILD and LEAKBENCH_RECORDS as asv imports it), and again after the test."""
    import importlib

    import benchmarks.benchmark_pairs as module

    def load(**env):
        for key in ("LEAKBENCH_BUILD", "LEAKBENCH_RECORDS", "LEAKBENCH_PAIRS"):
            monkeypatch.delenv(key, raising=False)
        for key, value in env.items():
            monkeypatch.setenv(key, str(value))
        return importlib.reload(module)

    yield load
    monkeypatch.undo()
    importlib.reload(module)


def test_asv_glue_reads_the_records_of_its_build(glue):
    import math

    path = FILES / "tf-2.21.0.jsonl"
    records = {(r["pair"], r["variant"]): r for r in store.read_records(path)}
    module = glue(LEAKBENCH_BUILD="2.21.0", LEAKBENCH_RECORDS=path, LEAKBENCH_PAIRS="growing")
    assert module.Pairs.params == (["growing"], ["leaky", "fixed"])
    assert module.Pairs.version == "unknown"  # records made before records named their engine
    pairs = module.Pairs()
    pairs.setup("growing", "leaky")  # a record: no skip
    want = metrics.value(records["growing", "leaky"], "malloc_heap_growth")
    assert pairs.track_malloc_heap_growth_per_repetition("growing", "leaky") == want
    want = metrics.value(records["growing", "leaky"], "trim_returned_bytes")
    assert pairs.track_trim_returned("growing", "leaky") == want
    assert math.isnan(pairs.track_held_growth_per_repetition("growing", "leaky"))  # None: NaN
    with pytest.raises(NotImplementedError, match="no GPU visible to TensorFlow"):  # asv: skipped
        pairs.setup("gpu_only", "fixed")
    with pytest.raises(NotImplementedError, match="no record of nowhere"):
        pairs.setup("nowhere", "leaky")


def test_asv_glue_refuses_another_builds_records_and_none(glue):
    with pytest.raises(RuntimeError, match="a record of TensorFlow 2.21.0, not 2.13.1"):
        glue(LEAKBENCH_BUILD="2.13.1", LEAKBENCH_RECORDS=FILES / "tf-2.21.0.jsonl")
    module = glue()  # asv run by hand: nothing to read, every benchmark fails
    with pytest.raises(RuntimeError, match="no records to read"):
        module.Pairs().setup("growing", "leaky")


@pytest.mark.parametrize(
    "bad, message",
    [
        ("{not json\n", "corrupt JSON"),
        (
            '{"schema": 99, "pair": "p", "variant": "leaky", '
            '"verdict": "leak", "metrics": {}, "environment": {}}\n',
            "record schema 99",
        ),
    ],
)
def test_write_records_never_drops_a_file_it_cannot_read_whole(tmp_path, bad, message):
    """It used to replace the whole file when one line was corrupt or of another schema."""
    recs = store.read_records(FILES / "tf-2.13.1.jsonl")
    path = store.write_records(tmp_path, "box", "2.13.1", recs)
    before = path.read_bytes() + bad.encode()
    path.write_bytes(before)
    with pytest.raises(store.VersionError, match=message):
        store.write_records(tmp_path, "box", "2.13.1", recs[:1])
    assert path.read_bytes() == before


def test_schema_1_records_migrate_on_read():

    v1 = {
        "schema": 1,
        "pair": "p",
        "variant": "leaky",
        "verdict": "skipped",
        "metrics": {},
        "environment": {},
        "runs": [{"series": {"heap_used_bytes": [10, None], "mmap_used_bytes": [5, 5]}}],
    }
    rec = schema.loads(json.dumps(v1))
    assert rec["schema"] == record_type.SCHEMA == 4 and (rec["expects"], rec["requires"]) == (
        None,
        "GPU",
    )
    assert rec["runs"][0]["series"]["malloc_used_bytes"] == [15, None]
    # the schema-1 fixtures, migrated
    assert store.read_records(FILES / "tf-2.13.1.jsonl")[0]["schema"] == 4


def test_committed_records_load_in_the_current_schema():
    committed = Path(__file__).resolve().parents[1] / "results"
    found = {v: store.read_records(p) for v, p in store.available(committed, "vm").items()}
    releases = [v for v in found if not builds.is_nightly(v)]
    # 2.12–2.21 and a nightly column
    assert len(releases) == 10 and any(builds.is_nightly(v) for v in found)
    assert all(r["schema"] == 4 for recs in found.values() for r in recs)
    frag = next(
        r
        for r in found["2.21.0"]
        if (r["pair"], r["variant"]) == ("shuffle_fragmentation", "leaky")
    )
    assert frag["expects"] == "fragmentation"  # copied from the contract (scripts/migrate-records)


def test_asv_track_benchmarks_match_the_registry():
    import benchmarks.benchmark_pairs as glue

    tracked = {
        name[len("track_") :]: getattr(glue.Pairs, name)
        for name in dir(glue.Pairs)
        if name.startswith("track_")
    }
    # every registry metric with an asv name has its benchmark: "_per_repetition" in the name of
    # a rate, the unit without it ("bytes", "seconds": what asv's pages format, 12.3k, 1.2s)
    registry = {glue.asv_name(m): m for m in metrics.METRICS if m.asv}
    assert tracked.keys() == registry.keys()
    assert "held_growth_per_repetition" in tracked and "python_objects_per_repetition" in tracked
    assert {k: f.unit for k, f in tracked.items()} == {
        k: m.unit.removesuffix("/repetition") for k, m in registry.items()
    }
    assert {glue.asv_unit(m) for m in registry.values()} == {
        "bytes",
        "seconds",
        "threads",
        "objects",
    }
