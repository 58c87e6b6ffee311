"""The release gate, `leakbench gate` (docs/gate.md), and `leakbench compare`, which classifies the
same way: exit 1 on a regression only (a fix that leaks, a new hang, error or over-cap, a peak
pair's fix past the factor), 0 on a leak fixed upstream and on no change, 2 on bad input; the
summary first; JSON and JUnit XML; --measure on a stand-in for the measurement. On the hand-made
records of tests/data/results/ (tests/test_versions.py says what they hold) and small changes to
them; no TensorFlow needed.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import invoke, refused

from leakbench.analysis.judge import decision, in_words
from leakbench.history import compare, machines, registry, store
from leakbench.history import gate as gating
from leakbench.reporters import gate as summary
from leakbench.reporters import junit

RESULTS = Path(__file__).parent / "data" / "results"
MACHINE = "fixture"
FILES = RESULTS / "records" / MACHINE
# the published dataset's fixture (machine vm): py_function_map's records of five builds
PUBLISHED = Path(__file__).parent / "data" / "published" / "records" / "vm"


def gate(*args):
    return invoke("gate", *args, "--results", RESULTS)


def records(version: str = "2.13.1") -> list:
    return store.read_records(FILES / f"tf-{version}.jsonl")


def reading(recs: list, pair: str, variant: str, verdict: str, **more) -> list:
    """`recs` with one variant reading `verdict` (and `more`), its decision made again from it."""
    found = []
    for r in recs:
        if (r["pair"], r["variant"]) == (pair, variant):
            r = {**r, "verdict": verdict, **more}
            r.pop("decision", None)
        found.append(r)
    return found


def outcome(found: compare.Comparison, pair: str, variant: str) -> str:
    return next(e["outcome"] for e in found.entries if (e["pair"], e["variant"]) == (pair, variant))


# --- the exit code, on records ------------------------------------------------------


def test_no_change_exits_0():
    result = gate("--baseline", "2.13.1", "--candidate", "2.21.0")
    assert result.exit_code == 0, result.output
    assert "**Exit 0: no regression.**" in result.stdout
    assert "### Regressions: 0" in result.stdout


def test_a_fix_that_leaks_now_is_a_regression_exit_1():
    result = gate("--baseline", "2.13.1", "--candidate", "2.99.0")
    assert result.exit_code == 1, result.output
    out = result.stdout
    # the summary first: the regressions, then fixed upstream, then the changes
    heads = ["### Regressions: 2", "### Fixed upstream: 0", "### Changes that do not count: 1"]
    assert [out.index(h) for h in heads] == sorted(out.index(h) for h in heads)
    assert (
        "- growing (fixed): no-leak · rss +4 KiB/rep → leak · rss +900 KiB/rep: the fix leaks again"
        in out
    )
    # the per-metric rows only with --details
    assert "| pair | variant | metric |" not in out
    detailed = gate("--baseline", "2.13.1", "--candidate", "2.99.0", "--details").stdout
    assert detailed.index("### Regressions") < detailed.index("| pair | variant | metric |")


def test_a_leak_fixed_upstream_exits_0_and_is_said():
    old = records()
    new = reading(old, "growing", "leaky", "no-leak", signals=[])
    found = compare.compare("2.13.1", old, "2.14.0", new)
    assert found.exit_code == 0 and found.failures == []
    assert outcome(found, "growing", "leaky") == compare.FIXED_UPSTREAM
    text = "\n".join(summary.summary(found))
    assert "### Fixed upstream: 1" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("- growing (leaky)"))
    assert line.startswith("- growing (leaky): leak · rss +4,000 KiB/rep → no-leak · ")


def test_the_same_records_change_nothing():
    found = compare.compare("2.13.1", records(), "again", records())
    assert found.exit_code == 0
    assert {e["outcome"] for e in found.entries} == {compare.UNCHANGED, compare.SKIPPED}


@pytest.mark.parametrize("verdict", ["hang", "error", "over-cap"])
@pytest.mark.parametrize("variant", ["leaky", "fixed"])
def test_a_new_hang_error_or_over_cap_is_a_regression(verdict, variant):
    old = records()
    new = reading(old, "growing", variant, verdict, phase="repetitions", metrics={})
    found = compare.compare("2.13.1", old, "2.14.0", new)
    assert found.exit_code == 1
    assert outcome(found, "growing", variant) == compare.REGRESSION
    # the other way round it is no regression: the candidate measures what the baseline did not
    back = compare.compare("2.14.0", new, "2.13.1", old)
    assert back.exit_code == 0 and outcome(back, "growing", variant) == compare.CHANGE


def test_a_hang_on_both_sides_is_not_new():
    hung = reading(records(), "growing", "fixed", "hang", phase="teardown")
    assert compare.compare("a", hung, "b", hung).exit_code == 0


@pytest.mark.parametrize("other", ["leak", "hang", "no-leak"])
def test_skipped_on_either_side_never_counts(other):
    old = reading(records(), "growing", "fixed", "skipped", skip_reason="no GPU")
    new = reading(records(), "growing", "fixed", other, phase="run")
    for a, b in ((old, new), (new, old)):
        found = compare.compare("a", a, "b", b)
        assert found.exit_code == 0 and outcome(found, "growing", "fixed") == compare.SKIPPED


def test_a_declared_fragmentation_that_leaks_is_a_regression():
    old = reading(records(), "fragmenting", "leaky", "fragmentation", expects="fragmentation")
    new = reading(old, "fragmenting", "leaky", "leak", signals=["rss"])
    found = compare.compare("a", old, "b", new)
    assert outcome(found, "fragmenting", "leaky") == compare.REGRESSION
    assert found.failures[0].endswith(": it should read fragmentation")


def test_a_leak_back_on_a_release_dependent_scenario_does_not_count():
    """A scenario whose REPORTED claim ties its leak to some releases may read either."""
    claim = {"issue": "tensorflow/tensorflow#1", "leaks": ["2.13.1"]}
    old = reading(records(), "growing", "leaky", "no-leak", signals=[], reported=claim)
    new = reading(old, "growing", "leaky", "leak", signals=["rss"])
    found = compare.compare("a", old, "b", new)
    assert found.exit_code == 0 and outcome(found, "growing", "leaky") == compare.CHANGE


def test_a_peak_pairs_fix_past_the_factor_is_a_regression_a_growth_pairs_is_not():
    found = compare.compare("2.13.1", records(), "2.99.0", records("2.99.0"))
    assert outcome(found, "peaking", "fixed") == compare.REGRESSION
    # the same peak on a growth pair's fix: a number past the factor, no regression
    old = [{**r, "kind": "growth"} if r["pair"] == "peaking" else r for r in records()]
    new = [{**r, "kind": "growth"} if r["pair"] == "peaking" else r for r in records("2.99.0")]
    for r in (*old, *new):
        r.pop("decision", None)
    assert outcome(compare.compare("a", old, "b", new), "peaking", "fixed") == compare.CHANGE


def test_a_variant_one_side_lacks_is_not_measured_and_says_how():
    new = [r for r in records("2.21.0") if r["pair"] != "growing"]
    found = compare.compare("2.13.1", records(), "2.21.0", new, versions=("2.13.1", "2.21.0"))
    assert found.exit_code == 0
    assert outcome(found, "growing", "fixed") == compare.NOT_MEASURED
    text = "\n".join(summary.summary(found))
    assert "### Not measured: 2" in text
    assert "`leakbench gate --baseline 2.13.1 --candidate 2.21.0 --measure`" in text


def test_each_side_shows_its_verdict_with_the_number_it_rests_on():
    found = compare.compare("2.13.1", records(), "2.99.0", records("2.99.0"))
    olds = {(r["pair"], r["variant"]): r for r in records()}
    for e in found.entries:
        assert e["old"] == in_words.words(decision.of(olds[(e["pair"], e["variant"])]))


def test_compare_classifies_as_the_gate(tmp_path):
    via_compare = json.loads(
        invoke("compare", "2.13.1", "2.99.0", "--results", RESULTS, "--format", "json").output
    )
    out = tmp_path / "gate.json"
    result = gate("--baseline", "2.13.1", "--candidate", "2.99.0", "--format", "json", "--out", out)
    with_gate = json.loads(out.read_text())
    assert result.exit_code == with_gate["exit_code"] == via_compare["exit_code"] == 1
    assert with_gate["entries"] == via_compare["entries"]
    assert (
        "### Regressions: 2" in invoke("compare", "2.13.1", "2.99.0", "--results", RESULTS).stdout
    )


# --- the files it writes -------------------------------------------------------------


def test_json_holds_the_classification_and_the_exit_code(tmp_path):
    out = tmp_path / "gate.json"
    result = gate("--baseline", "2.13.1", "--candidate", "2.99.0", "--format", "json", "--out", out)
    found = json.loads(out.read_text())
    assert found["exit_code"] == 1 == result.exit_code
    assert (found["command"], found["baseline"], found["candidate"]) == ("gate", "2.13.1", "2.99.0")
    assert found["counts"] == {
        "regression": 2,
        "fixed upstream": 0,
        "change": 1,
        "unchanged": 3,
        "skipped": 2,
        "not measured": 0,
    }
    growing = next(e for e in found["entries"] if (e["pair"], e["variant"]) == ("growing", "fixed"))
    assert growing["outcome"] == "regression" and growing["why"] == "the fix leaks again"
    assert growing["new"] == "leak · rss +900 KiB/rep"
    assert found["rows"] and found["measured"] == {}


def test_junit_parses_with_a_failure_per_regression(tmp_path):
    out = tmp_path / "gate.xml"
    gate("--baseline", "2.13.1", "--candidate", "2.99.0", "--junit", out)
    root = ET.parse(out).getroot()
    cases = root.findall(".//testcase")
    assert len(cases) == 8 and root.get("tests") == "8"
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert failed == ["growing (fixed)", "peaking (fixed)"] and root.get("failures") == "2"
    assert len([c for c in cases if c.find("skipped") is not None]) == 2 == int(root.get("skipped"))
    failure = next(c for c in cases if c.get("name") == "growing (fixed)").find("failure")
    assert failure.get("message") == "the fix leaks again"
    assert "2.99.0: leak · rss +900 KiB/rep" in failure.text


def test_junit_says_fixed_upstream_in_a_passing_case():
    old = records()
    found = compare.compare("2.13.1", old, "2.14.0", reading(old, "growing", "leaky", "no-leak"))
    case = next(
        c
        for c in ET.fromstring(junit.document(found)).iter("testcase")
        if c.get("name") == "growing (leaky)"
    )
    assert case.find("failure") is None and case.find("skipped") is None
    assert case.find("system-out").text.startswith("fixed upstream: growing (leaky): leak · ")


def test_markdown_file_has_the_summary_then_every_metric(tmp_path):
    out = tmp_path / "gate.md"
    gate("--baseline", "2.13.1", "--candidate", "2.99.0", "--out", out)
    text = out.read_text()
    assert text.startswith("## leakbench gate: TensorFlow 2.13.1 → 2.99.0")
    assert text.index("### Regressions: 2") < text.index("| pair | variant | metric |")


# --- bad input: one line, exit 2 --------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (("--baseline", "2.13.1", "--candidate", "2.0.0"), "gate --measure` measures it"),
        (("--baseline", "2.13.1", "--candidate", "2.21.0", "--factor", "1"), "above 1"),
        (("--baseline", "2.13.1", "--candidate", "2.21.0", "no_such_pair"), "no_such_pair"),
        (("--baseline", "2.13.1", "--candidate", "nightly"), "nightly is not in"),
        (("--baseline", "2.13.1"), "--candidate"),
    ],
)
def test_bad_input_exits_2_in_one_line(args, message):
    assert message in refused(gate(*args))


def test_an_output_that_is_no_file_is_refused_before_anything(tmp_path):
    result = gate("--baseline", "2.13.1", "--candidate", "2.21.0", "--junit", tmp_path)
    assert "--junit" in refused(result)


# --- --measure, with a stand-in for each measurement --------------------------------------

PAIR = "py_function_map"  # a pair of the checkout's catalog, with records in PUBLISHED


class Measured:
    """Stands for a side's environment (gating._environment): each measurement a copy of the
    published fixture's record of PAIR on 2.21.0, or a record-less failure."""

    def __init__(self, version: str, gives_none: bool = False):
        self.version, self.gives_none, self.runs = version, gives_none, []

    def measure(self, root, pair, variant, cap_bytes, timeout_seconds):
        self.runs.append((pair, variant))
        if self.gives_none:
            return {"verdict": "error", "phase": "run", "error": "exited 1 without a record"}
        rec = next(r for r in committed() if (r["pair"], r["variant"]) == (pair, variant))
        return json.loads(json.dumps({**rec, "environment": {"tensorflow": self.version}}))

    def remove(self):
        pass


def committed() -> list:
    recs = store.read_records(PUBLISHED / "tf-2.21.0.jsonl")
    # no CPU model: these stand for this machine's (store's one-machine check passes them over)
    return [
        {**r, "environment": {"tensorflow": r["environment"]["tensorflow"]}}
        for r in recs
        if r["pair"] == PAIR
    ]


@pytest.fixture
def measuring(tmp_path, monkeypatch):
    """A results folder whose machine `m` holds PAIR on 2.21.0 only, in m.local/ (this machine's
    own runs: where --measure --machine m reads and files them); measurements stand-ins."""
    results = tmp_path / "results"
    store.write_records(results, "m.local", "2.21.0", committed())
    envs = {}

    def environment(root, side, workdir):
        return envs.setdefault(side.version, Measured(side.version, side.version == "2.98.0"))

    monkeypatch.setattr(gating, "_environment", environment)
    monkeypatch.setattr(gating, "new_workdir", lambda: tmp_path / "work")
    return results, envs


def test_measure_measures_only_what_a_side_lacks_and_files_it(measuring):
    results, envs = measuring
    args = ["--baseline", "2.21.0", "--candidate", "2.99.0", "--machine", "m", "--measure", PAIR]
    result = invoke(
        "gate", *args, "--results", results, "--format", "json", "--out", results / "g.json"
    )
    assert result.exit_code == 0, result.output
    assert list(envs) == ["2.99.0"] and envs["2.99.0"].runs == [(PAIR, "leaky"), (PAIR, "fixed")]
    filed = store.read_records(results / "records" / "m.local" / "tf-2.99.0.jsonl")
    assert [r["pair"] for r in filed] == [PAIR, PAIR]
    assert not (results / "records" / "m").exists()  # never the published folder
    found = json.loads((results / "g.json").read_text())
    assert found["measured"] == {"2.99.0": [f"{PAIR} (leaky)", f"{PAIR} (fixed)"]}
    assert found["counts"]["unchanged"] == 2
    # measured and filed: the next gate reads the records, measuring nothing
    again = invoke("gate", *args, "--results", results)
    assert again.exit_code == 0 and len(envs["2.99.0"].runs) == 2


def test_measure_from_an_installed_package_files_into_the_working_folder(measuring, shipped):
    """Outside a checkout the records read are the installed package's, which are never
    written: --measure files what it measures under ./results, as `leakbench run` does."""
    store.write_records(shipped / "results", "m", "2.21.0", committed())
    before = sorted(p.read_text() for p in shipped.rglob("*.jsonl"))
    args = ["--baseline", "2.21.0", "--candidate", "2.99.0", "--machine", "m", "--measure", PAIR]
    result = invoke("gate", *args)
    assert result.exit_code == 0, result.output
    filed = sorted(p.name for p in Path("results", "records", "m.local").glob("*.jsonl"))
    assert filed == ["tf-2.21.0.jsonl", "tf-2.99.0.jsonl"]
    assert sorted(p.read_text() for p in shipped.rglob("*.jsonl")) == before


def test_without_machine_it_reads_this_machines_records_not_another_cpus(tmp_path, monkeypatch):
    """After `make run` filed this machine's records (under a name of their own, local: not
    published) beside another CPU's under asv's name (store.default_machine), the gate reads
    this machine's, as --measure would file them."""
    monkeypatch.setenv("ASV_MACHINE", "vm")
    mine = machines.this_machine()
    results = tmp_path / "results"

    def on(machine: tuple) -> list:
        cpu, cores = machine
        return [
            {**r, "environment": {**r["environment"], "cpu": cpu, "cores": cores}}
            for r in committed()
        ]

    other = ("Another CPU", 64)
    for version in ("2.21.0", "2.99.0"):
        store.write_records(results, "vm", version, on(other))
        store.write_records(results, f"vm-{machines.machine_slug(mine)}.local", version, on(mine))
    result = invoke("gate", "--baseline", "2.21.0", "--candidate", "2.99.0", "--results", results)
    assert result.exit_code == 0, result.output
    assert f"Records of asv machine `vm-{machines.machine_slug(mine)}.local" in result.stdout


def test_a_measurement_without_a_record_is_a_new_error_not_filed(measuring):
    results, _ = measuring
    args = ["--baseline", "2.21.0", "--candidate", "2.98.0", "--machine", "m", "--measure", PAIR]
    result = invoke("gate", *args, "--results", results)
    assert result.exit_code == 1, result.output
    assert "exited 1 without a record" in result.stdout
    assert not (results / "records" / "m.local" / "tf-2.98.0.jsonl").exists()


def test_without_measure_a_side_that_lacks_a_pair_is_not_measured(measuring):
    results, _ = measuring
    store.write_records(results, "m.local", "2.99.0", [committed()[0]])  # the fix is missing
    result = invoke("gate", "--baseline", "2.21.0", "--candidate", "2.99.0", "--results", results)
    assert result.exit_code == 0, result.output
    assert "### Not measured: 1" in result.stdout
    assert "--candidate 2.99.0 --machine m.local --measure" in result.stdout


def test_a_side_to_measure_names_its_build(tmp_path):
    side = gating.to_measure(tmp_path, "m", "2.23.0-dev20261026", [PAIR], lambda: [])
    # pip's spelling, which names the records file; the build to install: not the running one
    assert side.version == "2.23.0.dev20261026" and side.label == "nightly 2026-10-26"
    assert side.build is not None and side.build.requirement == "tf-nightly==2.23.0.dev20261026"
    assert side.missing == [(PAIR, "leaky"), (PAIR, "fixed")] and side.records == []
    served = [
        registry.Build("2.21.0", registry.RELEASE_DIST, None),
        registry.Build("2.23.0.dev20261101", registry.NIGHTLY_DIST, None),
        registry.Build("2.23.0.dev20261026", registry.NIGHTLY_DIST, None),
    ]
    nightly = gating.to_measure(tmp_path, "m", "nightly", [PAIR], lambda: served)
    assert nightly.version == "2.23.0.dev20261101"
    release = gating.to_measure(tmp_path, "m", "2.99.0", [PAIR], lambda: [])
    assert release.build is not None and release.build.requirement == "tensorflow-cpu==2.99.0"
    with pytest.raises(store.VersionError, match="not a TensorFlow version"):
        gating.to_measure(tmp_path, "m", "latest", [PAIR], lambda: [])
