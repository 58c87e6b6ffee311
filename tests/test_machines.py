"""One machine name is one machine (leakbench.history.store): a machine is the CPU model and the
cores a record's environment names. Reading a folder that holds two (matrix, compare, report-back,
the site) is refused in one line naming the files, CPU models and counts; write_records refuses to
add another machine's records to a folder; the default name of leakbench's own writes
(store.default_machine) is asv's unless its folder holds another machine; compare refuses two
sides of two machines (files by path, a file and a version) unless --across-machines, which its
summary then says first, and the gate reads one machine's folder only; the machine the published
views read by default (store.published_machine) is never a user's own runs. No TensorFlow needed:
the fixture records (tests/data/results/records/fixture/, tests/data/published/), given a CPU
model and cores here; results/ as committed only where its own consistency is checked.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import invoke, refused, state

from leakbench.analysis import record, schema
from leakbench.history import compare as comparing
from leakbench.history import machines, store

FILES = Path(__file__).parent / "data" / "results" / "records" / "fixture"
# the published dataset's fixture: machine vm, an AMD EPYC of 2 cores (py_function_map's records)
PUBLISHED = Path(__file__).parent / "data" / "published" / "records" / "vm"
AMD = ("AMD EPYC", 2)
INTEL = ("Intel(R) Xeon(R) Processor", 2)


def on(machine: tuple, recs: list) -> list:
    """The records as measured on `machine` (CPU model, cores)."""
    cpu, cores = machine
    return [{**r, "environment": {**r["environment"], "cpu": cpu, "cores": cores}} for r in recs]


def fixture(version: str) -> list:
    return store.read_records(FILES / f"tf-{version}.jsonl")


def write_lines(path: Path, recs: list) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(schema.dumps(r) + "\n" for r in recs))


def mixed(tmp_path) -> Path:
    """results/records/box/: 2.13.1 all AMD; 2.21.0 three AMD records and five Intel ones."""
    results = tmp_path / "results"
    write_lines(results / "records" / "box" / "tf-2.13.1.jsonl", on(AMD, fixture("2.13.1")))
    newer = fixture("2.21.0")
    write_lines(
        results / "records" / "box" / "tf-2.21.0.jsonl", on(AMD, newer[:3]) + on(INTEL, newer[3:])
    )
    return results


# --- reading ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [("matrix",), ("compare", "2.13.1", "2.21.0"), ("report-back",)],
    ids=["matrix", "compare", "report-back"],
)
def test_a_folder_of_two_cpu_models_is_refused_naming_both(tmp_path, args):
    results = mixed(tmp_path)
    line = refused(invoke(*args, "--results", results, "--machine", "box"))
    assert f"{results / 'records' / 'box'} mixes records of 2 machines under one name" in line
    # the most numerous with its count, the other with its files and counts
    assert "11 of AMD EPYC, 2 cores (2 files)" in line
    assert "5 of Intel(R) Xeon(R) Processor, 2 cores in tf-2.21.0.jsonl (5)" in line
    assert "box-intel-xeon-processor-2c" in line


def test_the_store_refuses_what_every_view_reads(tmp_path):
    results = mixed(tmp_path)
    for read in (
        lambda: store.by_version(results, "box"),
        lambda: store.available(results),
        lambda: store.resolve(results, "2.13.1", "box"),  # a clean file, in a mixed folder
    ):
        with pytest.raises(store.VersionError, match="mixes records of 2 machines"):
            read()


def test_a_records_file_of_two_cpu_models_is_refused(tmp_path):
    path = mixed(tmp_path) / "records" / "box" / "tf-2.21.0.jsonl"
    line = refused(invoke("compare", FILES / "tf-2.13.1.jsonl", path))
    assert f"{path} mixes records of 2 machines" in line
    assert "Intel(R) Xeon(R) Processor, 2 cores" in line and "AMD EPYC, 2 cores" in line


# --- two sides of two machines ------------------------------------------------------------

AMD_WORDS, INTEL_WORDS = "AMD EPYC, 2 cores", "Intel(R) Xeon(R) Processor, 2 cores"
ACROSS = "**Across machines:** the two sides were measured on different machines"


def two_files(tmp_path) -> tuple[Path, Path]:
    """2.13.1 measured on AMD, 2.21.0 on Intel, each file of one machine."""
    old, new = tmp_path / "amd" / "tf-2.13.1.jsonl", tmp_path / "intel" / "tf-2.21.0.jsonl"
    write_lines(old, on(AMD, fixture("2.13.1")))
    write_lines(new, on(INTEL, fixture("2.21.0")))
    return old, new


def test_compare_refuses_two_files_of_two_machines(tmp_path):
    old, new = two_files(tmp_path)
    line = refused(invoke("compare", old, new), AMD_WORDS, INTEL_WORDS, "--across-machines")
    assert f"{old} ({AMD_WORDS}) and {new} ({INTEL_WORDS}) were measured on different machines" in (
        line
    )


def test_compare_refuses_published_records_and_the_same_on_another_cpu(tmp_path):
    # the same TensorFlow and records on both sides: every difference there is the hardware's
    amd = PUBLISHED / "tf-2.21.0.jsonl"
    intel = tmp_path / "intel" / "tf-2.21.0.jsonl"
    write_lines(intel, on(INTEL, store.read_records(amd)))
    refused(invoke("compare", amd, intel), AMD_WORDS, INTEL_WORDS)
    refused(invoke("compare", intel, amd, "--format", "json"), INTEL_WORDS, AMD_WORDS)


def test_compare_refuses_a_version_and_a_file_of_two_machines(tmp_path):
    results = tmp_path / "results"
    write_lines(results / "records" / "box" / "tf-2.13.1.jsonl", on(AMD, fixture("2.13.1")))
    _, intel = two_files(tmp_path)
    refused(invoke("compare", "2.13.1", intel, "--results", results), AMD_WORDS, INTEL_WORDS)


def test_across_machines_compares_and_says_so_at_the_top(tmp_path):
    old, new = two_files(tmp_path)
    done = invoke("compare", old, new, "--across-machines")
    assert done.exit_code == 0, done.output
    title, blank, across = done.stdout.splitlines()[:3]
    assert title == "## leakbench compare: TensorFlow 2.13.1 → 2.21.0" and blank == ""
    assert across.startswith(ACROSS)
    assert f"old (2.13.1) on {AMD_WORDS}; new (2.21.0) on {INTEL_WORDS}." in across
    assert "the hardware's" in across
    found = json.loads(invoke("compare", old, new, "--across-machines", "--format", "json").stdout)
    assert found["machines"] == [AMD_WORDS, INTEL_WORDS]


def test_one_machine_on_both_sides_says_nothing_of_machines(tmp_path):
    old, new = tmp_path / "a" / "tf-2.13.1.jsonl", tmp_path / "b" / "tf-2.21.0.jsonl"
    write_lines(old, on(AMD, fixture("2.13.1")))
    write_lines(new, on(AMD, fixture("2.21.0")))
    for extra in ((), ("--across-machines",)):
        done = invoke("compare", old, new, *extra)
        assert done.exit_code == 0 and "machines" not in done.stdout, done.output
        found = json.loads(invoke("compare", old, new, *extra, "--format", "json").stdout)
        assert "machines" not in found


def test_a_side_naming_no_cpu_is_left_out_of_the_check(tmp_path):
    _, intel = two_files(tmp_path)
    done = invoke("compare", FILES / "tf-2.13.1.jsonl", intel)  # no environment.cpu
    assert done.exit_code == 0 and ACROSS not in done.stdout, done.output


def test_across_machines_still_refuses_a_file_of_two(tmp_path):
    path = mixed(tmp_path) / "records" / "box" / "tf-2.21.0.jsonl"
    old, _ = two_files(tmp_path)
    refused(
        invoke("compare", old, path, "--across-machines"), f"{path} mixes records of 2 machines"
    )


def test_the_comparison_itself_refuses_two_machines():
    # what compare and the gate share: the gate's sides are one machine's folder, and even so
    with pytest.raises(store.VersionError, match="were measured on different machines"):
        comparing.compare(
            "2.13.1", on(AMD, fixture("2.13.1")), "2.21.0", on(INTEL, fixture("2.21.0"))
        )
    found = comparing.compare(
        "2.13.1",
        on(AMD, fixture("2.13.1")),
        "2.21.0",
        on(INTEL, fixture("2.21.0")),
        across_machines=True,
    )
    assert found.machines == [AMD_WORDS, INTEL_WORDS] and found.as_dict()["machines"]


def test_the_gate_reads_one_machine_and_takes_no_file(tmp_path):
    results = mixed(tmp_path)
    refused(
        invoke("gate", "--baseline", "2.13.1", "--candidate", "2.21.0", "--results", results),
        "mixes records of 2 machines",
    )
    old, new = two_files(tmp_path)
    refused(invoke("gate", "--baseline", old, "--candidate", new), "is not in")


def test_records_naming_no_cpu_are_left_out_of_the_check(tmp_path):
    results = mixed(tmp_path)
    folder = results / "records" / "box"
    write_lines(folder / "tf-2.21.0.jsonl", fixture("2.21.0"))  # no environment.cpu
    assert list(store.by_version(results, "box")) == ["2.13.1", "2.21.0"]


def test_the_same_cpu_with_other_cores_is_another_machine(tmp_path):
    results = tmp_path / "results"
    folder = results / "records" / "box"
    write_lines(folder / "tf-2.13.1.jsonl", on(AMD, fixture("2.13.1")))
    write_lines(folder / "tf-2.21.0.jsonl", on(("AMD EPYC", 4), fixture("2.21.0")))
    with pytest.raises(store.VersionError, match=r"8 of AMD EPYC, 4 cores in tf-2\.21\.0\.jsonl"):
        store.by_version(results, "box")


def test_committed_records_hold_one_machine_per_name(committed_results, monkeypatch):
    """results/ as committed: each published machine name holds one machine's records, and the
    machine a command reads without --machine is the published views' (store.published_machine:
    the manifest's, results/reference.json, where there is one), whatever the names."""
    monkeypatch.delenv("ASV_MACHINE", raising=False)  # the committed machine.json, not the shell's
    names = store.machines(committed_results)
    assert names and names == store.machines(committed_results, with_local=False)
    seen = {}
    for name in names:
        recs = [
            r for recs in store.by_version(committed_results, name).values() for r in recs.values()
        ]
        (seen[name],) = {machines.machine_of(r) for r in recs}  # one machine, none unnamed
        assert seen[name] is not None
    chosen = store.published_machine(committed_results)
    assert chosen in names and store.pick_machine(committed_results) == chosen
    if (ref := machines.reference(committed_results)) is not None:
        assert chosen == ref["machine"] and seen[chosen] == (ref["cpu"], ref["cores"])


def test_published_machine_is_the_manifests_else_the_only_published_one(tmp_path, monkeypatch):
    monkeypatch.setenv("ASV_MACHINE", "elsewhere")
    results = tmp_path / "results"
    store.write_records(results, "box", "2.21.0", on(AMD, fixture("2.21.0")))
    store.write_records(results, "box.local", "2.21.0", on(INTEL, fixture("2.21.0")))
    assert store.published_machine(results) == "box"  # a user's own runs beside it: not them
    store.write_records(results, "cube", "2.21.0", on(INTEL, fixture("2.21.0")))
    with pytest.raises(store.VersionError, match="pick one with --machine"):
        store.published_machine(results)  # two published, no manifest, asv's not among them
    (results / "reference.json").write_text(json.dumps({"machine": "cube"}))
    assert store.published_machine(results) == "cube"
    (results / "reference.json").write_text(json.dumps({"machine": "gone"}))
    with pytest.raises(store.VersionError, match="no records of machine 'gone'"):
        store.published_machine(results)


def test_published_machine_is_never_a_users_own_runs(tmp_path):
    results = tmp_path / "results"
    store.write_records(results, "box.local", "2.21.0", on(INTEL, fixture("2.21.0")))
    with pytest.raises(store.VersionError, match=r"no published records.*\(box\.local\)"):
        store.published_machine(results)
    line = refused(invoke("causes", "--leave-one-out", "--results", results), "--machine")
    assert "no published records, only a user's own runs (box.local)" in line


# --- writing ------------------------------------------------------------------------


def test_write_records_refuses_to_add_another_machine(tmp_path):
    results = tmp_path / "results"
    store.write_records(results, "box", "2.13.1", on(AMD, fixture("2.13.1")))
    before = state(results)
    with pytest.raises(store.VersionError) as refused:
        store.write_records(results, "box", "2.21.0", on(INTEL, fixture("2.21.0")[:2]))
    line = str(refused.value)
    assert "\n" not in line
    assert "holds records of another machine (8 of AMD EPYC, 2 cores (1 file))" in line
    assert "2 of Intel(R) Xeon(R) Processor, 2 cores would mix two under one name" in line
    assert "box-intel-xeon-processor-2c" in line
    assert state(results) == before  # nothing written


def test_write_records_refuses_to_mix_within_one_file(tmp_path):
    results = tmp_path / "results"
    path = store.write_records(results, "box", "2.21.0", on(AMD, fixture("2.21.0")))
    before = path.read_bytes()
    with pytest.raises(store.VersionError, match="another machine"):  # 7 AMD records stay
        store.write_records(results, "box", "2.21.0", on(INTEL, fixture("2.21.0")[:1]))
    with pytest.raises(store.VersionError, match="are of 2 machines"):
        store.write_records(
            results,
            "box",
            "2.21.0",
            on(INTEL, fixture("2.21.0")[:1]) + on(AMD, fixture("2.21.0")[1:2]),
        )
    assert path.read_bytes() == before
    # replacing every record of the only file: nothing of the other machine stays
    store.write_records(results, "box", "2.21.0", on(INTEL, fixture("2.21.0")))
    assert {machines.machine_of(r) for r in store.read_records(path)} == {INTEL}


def test_write_records_of_the_same_machine_replace_as_before(tmp_path):
    results = tmp_path / "results"
    store.write_records(results, "box", "2.13.1", on(AMD, fixture("2.13.1")))
    store.write_records(results, "box", "2.21.0", on(AMD, fixture("2.21.0")))
    store.write_records(results, "box", "2.21.0", on(AMD, fixture("2.21.0")[:1]))
    assert [len(v) for v in store.by_version(results, "box").values()] == [8, 8]


def test_check_writable_says_before_measuring(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "this_machine", lambda: INTEL)
    results = tmp_path / "results"
    store.write_records(results, "box", "2.13.1", on(AMD, fixture("2.13.1")))
    with pytest.raises(store.VersionError, match="records of Intel.* would mix two"):
        store.check_writable(results, "box", "2.21.0")
    assert store.check_writable(results, "other", "2.21.0") == (
        results / "records" / "other" / "tf-2.21.0.jsonl"
    )


# --- the default name -----------------------------------------------------------------


def test_this_machine_is_what_records_carry():
    env = record.environment(None)
    assert machines.this_machine() == (env["cpu"], env["cores"])


@pytest.mark.parametrize(
    "machine, slug",
    [
        (INTEL, "intel-xeon-processor-2c"),
        (AMD, "amd-epyc-2c"),
        (("Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz", 8), "intel-core-i7-8650u-cpu-1-90ghz-8c"),
        (("AMD EPYC 7763 64-Core Processor", 4), "amd-epyc-7763-64-core-processor-4c"),
    ],
)
def test_machine_slug(machine, slug):
    assert machines.machine_slug(machine) == slug


def test_default_machine_is_asvs_unless_its_folder_holds_another(tmp_path, monkeypatch):
    monkeypatch.setenv("ASV_MACHINE", "vm")
    monkeypatch.setattr(store, "this_machine", lambda: INTEL)
    results = tmp_path / "results"
    assert store.default_machine(results) == ("vm", None)  # no folder yet
    store.write_records(results, "vm", "2.21.0", on(INTEL, fixture("2.21.0")))
    assert store.default_machine(results) == ("vm", None)  # this machine's
    shutil.rmtree(results / "records" / "vm")
    store.write_records(results, "vm", "2.21.0", on(AMD, fixture("2.21.0")))
    name, why = store.default_machine(results)
    assert name == "vm-intel-xeon-processor-2c"
    assert why == (
        f"{results / 'records' / 'vm'} holds records of AMD EPYC, 2 cores, not of this machine "
        "(Intel(R) Xeon(R) Processor, 2 cores): its records go under "
        "vm-intel-xeon-processor-2c (--machine names another)"
    )
    # the default never mixes: this machine's records go in beside the others' and are read
    store.write_records(results, name, "2.21.0", on(INTEL, fixture("2.21.0")))
    assert store.machines(results) == ["vm", name]
    assert list(store.by_version(results, name)) == ["2.21.0"]
