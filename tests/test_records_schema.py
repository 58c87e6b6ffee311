"""One validation at each border: records, and the resume files of `leakbench repeat`
and `leakbench calibrate`, are checked against their schema (leakbench.analysis.validate) once,
where the file is read. A file that fails is one line naming the file, the line of a .jsonl and
the first problem; the commands that read it (matrix, compare, report-back, site, repeat,
calibrate) print it, exit 2 and leave every file as it was. Every committed file under results/
still reads.

No TensorFlow: the records are fixtures copied from committed ones (tests/data/published), the
committed files are read as committed (git HEAD: conftest's committed_results); repeat and
calibrate measure through a stub that returns a record at once.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import invoke, refused, state

from leakbench.analysis import record_type, schema, validate
from leakbench.analysis.judge import in_words
from leakbench.calibrate import calibration as calibrate
from leakbench.calibrate import committed
from leakbench.history import store
from leakbench.repeat import repeatability as repeat

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
# py_function_map's records of three builds, copied from the committed ones (schema 2): a
# fixture of this file's, where the working copy of results/ is regenerated or run over
RECORDS = DATA / "published" / "records" / "vm"
FAST = ["--cap", "1GiB", "--timeout", "60", "--warmup", "1", "--reps", "6", "--heap-reps", "0"]


# --- helpers ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def committed_line() -> dict:
    """Line 2 of the fixture's tf-2.21.0 records (py_function_map's leaky variant), parsed."""
    return json.loads((RECORDS / "tf-2.21.0.jsonl").read_text().splitlines()[1])


# The records files `here` copies: the file the tests spoil (tf-2.21.0), the one compare reads
# beside it, and the newest (a nightly), so the spoiled file is neither the first a command reads
# nor the last.
HERE_RECORDS = ("tf-2.20.0.jsonl", "tf-2.21.0.jsonl", "tf-2.23.0.dev20261026.jsonl")


@pytest.fixture
def records_here(tmp_path, monkeypatch) -> Path:
    """cwd: results/ with a copy of the fixture's three records files (HERE_RECORDS, machine vm);
    the repository as LEAKBENCH_ROOT (report-back's pairs)."""
    machine = tmp_path / "results" / "records" / "vm"
    machine.mkdir(parents=True)
    for name in HERE_RECORDS:
        shutil.copy2(RECORDS / name, machine / name)
    # read in this order: the spoiled file in the middle
    assert list(store.available(tmp_path / "results")) == ["2.20.0", "2.21.0", "2.23.0.dev20261026"]
    monkeypatch.setenv("LEAKBENCH_ROOT", str(REPO))
    monkeypatch.setenv("ASV_MACHINE", "vm")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def spoil(path: Path, n: int, text: str) -> None:
    """Replace line n (from 1) of `path` with `text`."""
    lines = path.read_text().splitlines()
    lines[n - 1] = text
    path.write_text("\n".join(lines) + "\n")


def edited(rec: dict, **changes) -> str:
    return json.dumps({**rec, **changes})


def _slope(rec: dict) -> str:
    bad = json.loads(json.dumps(rec))
    bad["metrics"]["held_growth"]["slope"] = "12"
    return json.dumps(bad)


def _seconds(rec: dict) -> str:
    bad = json.loads(json.dumps(rec))
    bad["runs"][0]["seconds"]["setup"] = [1.0]
    return json.dumps(bad)


# A record line made bad one way, and what the one line says of it.
BAD_RECORDS = {
    "unknown verdict": (
        lambda r: edited(r, verdict="banana"),
        "verdict: 'banana' is not one of leak, no-leak, fragmentation",
    ),
    "unknown variant": (
        lambda r: edited(r, variant="tasty"),
        "variant: 'tasty' is not one of leaky, fixed, file, check",
    ),
    "signals a string": (
        lambda r: edited(r, signals="held"),
        "signals: must be a list (got 'held')",
    ),
    "runs a number": (lambda r: edited(r, runs=5), "runs: must be a list (got 5)"),
    "NaN": (lambda r: edited(r, seconds=float("nan")), "seconds: nan is not a finite number"),
    "1e400": (
        lambda r: edited(r, seconds=1).replace('"seconds": 1}', '"seconds": 1e400}'),
        "seconds: inf is not a finite number",
    ),
    "lone surrogate in the pair": (
        lambda r: edited(r, pair="py_function_map\ud800"),
        "pair: a string with a lone surrogate (\\ud800), not valid UTF-8",
    ),
    "a metric's slope a string": (_slope, "metrics.held_growth.slope: must be a number (got '12')"),
    "a run's seconds a list": (_seconds, "runs[0].seconds.setup: must be a number (got [1.0])"),
    "environment a list": (
        lambda r: edited(r, environment=[]),
        "environment: must be a dict (got [])",
    ),
    "schema a bool": (lambda r: edited(r, schema=True), "schema: must be an integer (got True)"),
    "a look's extend a number": (  # JSON's words for a boolean (jsonfile.TYPE_WORDS)
        lambda r: edited(r, confirmation={"extend": 1}),
        "confirmation.extend: must be true or false (got 1)",
    ),
}


# --- the schema of a record ---------------------------------------------------------------------


@pytest.mark.parametrize("case", BAD_RECORDS)
def test_a_bad_record_is_one_line_naming_the_first_problem(case, committed_line):
    make, why = BAD_RECORDS[case]
    with pytest.raises(schema.SchemaError) as found:
        schema.loads(make(committed_line))
    assert str(found.value).startswith("not a valid record: ") and why in str(found.value)
    assert "\n" not in str(found.value)
    str(found.value).encode("utf-8")  # printable: a lone surrogate is named, not echoed


def test_a_newer_schema_is_named_before_its_types():
    line = json.dumps(
        {
            "schema": 5,
            "pair": "p",
            "variant": "new",
            "verdict": "new",
            "metrics": [],
            "environment": 1,
        }
    )
    with pytest.raises(
        schema.SchemaError, match="record schema 5; this leakbench reads schemas 1 to 4"
    ):
        schema.loads(line)


def test_optional_keys_are_optional_and_unknown_keys_kept():
    rec = {
        "schema": 1,
        "pair": "p",
        "variant": "file",
        "verdict": "skipped",
        "metrics": {},
        "environment": {},
        "runs": [{"series": {"heap_used_bytes": [10, None], "mmap_used_bytes": [5, 5]}}],
        "later": {"x": 1},
    }
    found = schema.loads(json.dumps(rec))
    assert found["later"] == {"x": 1} and found["runs"][0]["series"]["malloc_used_bytes"] == [
        15,
        None,
    ]
    assert schema.loads(json.dumps({**rec, "variant": "check", "schema": 2}))["variant"] == "check"


def test_the_file_and_line_are_named(tmp_path, committed_line):
    path = tmp_path / "tf-2.21.0.jsonl"
    path.write_text(
        json.dumps(committed_line) + "\n" + edited(committed_line, verdict="banana") + "\n"
    )
    with pytest.raises(store.VersionError) as found:
        store.read_records(path)
    assert str(found.value).startswith(f"{path}, line 2: not a valid record: verdict: ")


@pytest.mark.parametrize("case", BAD_RECORDS)
def test_every_command_reading_records_refuses_a_bad_one_and_changes_nothing(
    records_here, case, committed_line
):
    make, why = BAD_RECORDS[case]
    path = records_here / "results" / "records" / "vm" / "tf-2.21.0.jsonl"
    spoil(path, 2, make(committed_line))
    before = state(records_here)
    named = f"tf-2.21.0.jsonl, line 2: not a valid record: {why}"
    refused(invoke("matrix", "--results", "results"), named)
    refused(invoke("matrix", "--results", "results", "--format", "json"), named)
    refused(invoke("compare", "2.20.0", "2.21.0", "--results", "results"), named)
    refused(
        invoke("compare", path, records_here / "results" / "records" / "vm" / "tf-2.20.0.jsonl"),
        named,
    )
    refused(invoke("report-back", "py_function_map", "--results", "results"), named)
    refused(
        invoke("site", "--results", "results", "--out-dir", records_here / "site", "--no-asv"),
        named,
    )
    assert state(records_here) == before and not (records_here / "site").exists()


def test_store_keeps_a_file_it_cannot_read_whole(records_here, committed_line):
    path = records_here / "results" / "records" / "vm" / "tf-2.21.0.jsonl"
    spoil(path, 2, edited(committed_line, runs=5))
    before = path.read_bytes()
    with pytest.raises(
        store.VersionError, match="line 2: not a valid record: runs: .*it is kept as it is"
    ):
        store.write_records(records_here / "results", "vm", "2.21.0", [committed_line])
    assert path.read_bytes() == before


# --- every committed file still reads -------------------------------------------------------------


def test_every_committed_file_reads(committed_results):
    # every records file (results/ as committed, and the fixtures), whichever machines it holds;
    # the committed dataset is regenerated whole, so no count of its files or records is fixed
    committed = sorted(committed_results.rglob("*.jsonl"))
    assert any(p.parent.parent.name == store.RECORDS_DIR for p in committed), committed
    for path in committed + sorted(DATA.rglob("*.jsonl")):
        assert store.read_records(path), path
    kinds = {
        "repeat": "repeatability/*.json",
        "calibrate": "calibration/*.json",
        "bisect": "bisect/*/*.json",
    }
    checked = 0
    for kind, pattern in kinds.items():
        for path in sorted(committed_results.glob(pattern)):
            assert validate.problem(kind, json.loads(path.read_text())) is None, path
            checked += 1
    # which of them a regenerated dataset keeps is its own; one of them at least
    assert checked, sorted(kinds.values())


# --- resume files
# -----------------------------------------------------------------------------------


def stub_record(target, params, settings) -> dict:
    """A record as leakbench.measure returns one, measured in no time."""
    return {
        "schema": 2,
        "pair": target.scenario.name,
        "variant": target.variant,
        "verdict": "no-leak",
        "signals": [],
        "metrics": {},
        "environment": {"tensorflow": None},
        "settings": settings.stored(),
        "runs": [],
        "error": None,
        "phase": None,
        "seconds": 0.5,
    }


@pytest.fixture
def stubbed(tmp_path, monkeypatch) -> Path:
    """cwd: a checkout root/ with the pure-Python pair `pyleak` as LEAKBENCH_ROOT; repeat and
    calibrate measure through stub_record."""
    root = tmp_path / "root"
    for sub, source in (("scenarios", "python_leak"), ("fixes", "python_bounded")):
        (root / sub).mkdir(parents=True)
        shutil.copy(DATA / f"{source}.py", root / sub / "pyleak.py")
    monkeypatch.setenv("LEAKBENCH_ROOT", str(root))
    monkeypatch.setenv("ASV_MACHINE", "m")
    monkeypatch.setattr(repeat, "measure", stub_record)
    monkeypatch.setattr(calibrate, "measure", stub_record)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _drop(key: str):
    return lambda found: {k: v for k, v in found.items() if k != key}


def _observations(value):
    return lambda found: {**found, "observations": value}


def _first(**changes):
    return lambda found: {**found, "observations": [{**found["observations"][0], **changes}]}


REPEAT_CASES = {
    "observations [5]": (_observations([5]), "observations[0]: must be a dict (got 5)"),
    "observations [{}]": (_observations([{}]), "observations[0].pair: missing"),
    "no elapsed_seconds": (_drop("elapsed_seconds"), "elapsed_seconds: missing"),
    "an unknown verdict": (
        _first(verdict="banana"),
        "observations[0].verdict: 'banana' is not one of leak",
    ),
    "run a string": (_first(run="1"), "observations[0].run: must be an integer (got '1')"),
    "wall seconds NaN": (
        _first(wall_seconds=float("nan")),
        "observations[0].wall_seconds: nan is not a finite",
    ),
}
CALIBRATE_CASES = {
    "observations [5]": (_observations([5]), "observations[0]: must be a dict (got 5)"),
    "observations [{}]": (_observations([{}]), "observations[0].holder: missing"),
    "no environment": (_drop("environment"), "environment: missing"),
    "peers a dict": (lambda found: {**found, "peers": {}}, "peers: must be a list (got {})"),
    "bytes_per_rep a float": (
        _first(bytes_per_rep=1.5),
        "observations[0].bytes_per_rep: must be an integer (got 1.5)",
    ),
    "an unknown verdict": (
        _first(verdict="banana"),
        "observations[0].verdict: 'banana' is not one of leak",
    ),
}


# kind -> (its command line, ending in its --out; the one-line refusal's start and end; its cases)
RESUMED = {
    "repeat": (
        ("repeat", "pyleak", "--runs", "1", *FAST, "--machine", "m", "--out", "r.json"),
        "r.json is not a repeatability result of format 2: ",
        "it is kept: use another --out, or --fresh",
        REPEAT_CASES,
    ),
    "calibrate": (
        (
            "calibrate",
            "--holders",
            "python",
            "--sizes",
            "0",
            "--runs",
            "1",
            "--machine",
            "m",
            "--out",
            "c.json",
        ),
        "c.json is not a calibration result of format 2: ",
        "it is kept",
        CALIBRATE_CASES,
    ),
}


@pytest.mark.parametrize(
    "kind, case", [(kind, case) for kind, spec in RESUMED.items() for case in spec[3]]
)
def test_a_bad_resume_file_is_refused_in_one_line_and_kept(stubbed, kind, case):
    args, start, end, cases = RESUMED[kind]
    out = stubbed / args[-1]
    done = invoke(*args)
    assert done.exit_code == 0, (done.stderr, done.exception)
    found = json.loads(out.read_text())
    assert validate.problem(kind, found) is None
    change, why = cases[case]
    out.write_text(json.dumps(change(found)))
    before = state(stubbed)
    refused(invoke(*args), start, why, end)
    assert state(stubbed) == before
    if kind == "repeat":
        assert invoke(*args, "--fresh").exit_code == 0  # --fresh replaces it


# --- calibrate's suite records
# ----------------------------------------------------------------------


def test_suite_records_without_settings_count_no_run(tmp_path, committed_line):
    path = tmp_path / "suite.jsonl"
    bare = {k: v for k, v in committed_line.items() if k not in ("settings",)}
    path.write_text(json.dumps(bare) + "\n")
    assert committed.suite_cost(path) is None  # no timed run to count: no traceback
    path.write_text(json.dumps(committed_line) + "\n" + json.dumps(bare) + "\n")
    found = committed.suite_cost(path)
    assert found["runs"] >= 1 and found["wall_seconds"] > 0
    path.write_text(edited(committed_line, runs=5) + "\n")
    assert committed.suite_cost(path)["error"].startswith(
        f"{path}, line 1: not a valid record: runs: "
    )


def test_calibrate_with_suite_records_without_settings_ends_well(stubbed, committed_line):
    bare = {k: v for k, v in committed_line.items() if k != "settings"}
    (stubbed / "suite.jsonl").write_text(json.dumps(bare) + "\n")
    done = invoke(
        "calibrate",
        "--holders",
        "python",
        "--sizes",
        "0",
        "--runs",
        "1",
        "--machine",
        "m",
        "--out",
        "c.json",
        "--suite-records",
        "suite.jsonl",
    )
    assert done.exit_code == 0, (done.stderr, done.exception)
    assert json.loads((stubbed / "c.json").read_text())["suite_cost"] is None


# --- values anywhere
# --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, why",
    [
        ({"a": [1, {"b": float("inf")}]}, "a[1].b: inf is not a finite number"),
        ({"a": {"k\udc00": 1}}, "a: a key with a lone surrogate (\\udc00)"),
        ([float("-inf")], "[0]: -inf is not a finite number"),
        ({"ok": ["é", 1e308, 2**80]}, None),
    ],
)
def test_values_anywhere_are_finite_and_utf8(value, why):
    found = validate.values_problem(value)
    assert found == why if why is None else why in found


def test_calibration_signals_are_calibrations():
    from leakbench.calibrate import stats

    assert validate.CALIBRATION_SIGNALS == tuple(stats.SIGNALS)


def test_an_unknown_kind_is_a_programming_error():
    with pytest.raises(ValueError, match="no schema for 'nope'"):
        validate.problem("nope", {})


def test_the_trend_schema_is_estimates_trend_and_requires_what_the_verdict_reads():
    """One source for a trend's shape: estimate.Trend. A trend the engine writes validates; one
    without a key the verdict indexes (metrics.rate, verdict.moved) is refused on read, not met
    as a KeyError in a view."""
    from leakbench.analysis import estimate

    found = estimate.trend([0, 1, 2, 3, 5, 8]).as_dict()
    rec = {
        "schema": 3,
        "pair": "p",
        "variant": "leaky",
        "verdict": "no-leak",
        "metrics": {"held_growth": {**found, "unit": "bytes/repetition"}},
        "environment": {},
    }
    assert validate.problem("record", rec) is None
    for key in ("slope", "first_half", "second_half", "p_increasing"):
        broken = {k: v for k, v in found.items() if k != key}
        problem = validate.problem("record", {**rec, "metrics": {"held_growth": broken}})
        assert problem == f"metrics.held_growth.{key}: missing", problem


def test_the_record_schema_is_derived_from_the_record_type():
    """One source for a record's keys: record_type.Record. Every key of the type is in the schema,
    no other; the required keys are record_type.REQUIRED; a detail naming a key the type lacks
    fails."""
    from typing import TypedDict, get_type_hints

    from leakbench.analysis import json_schemas, schema_parts

    found = json_schemas.schema_of("record")
    assert set(found["properties"]) == set(get_type_hints(record_type.Record))
    assert found["required"] == list(record_type.REQUIRED)

    class Small(TypedDict, total=False):
        n: int
        name: str | None

    assert schema_parts.from_typed(Small, {}, ("n",))["properties"] == {
        "n": {"type": "integer"},
        "name": {"type": ["string", "null"]},
    }
    with pytest.raises(TypeError, match="has no key 'size'"):
        schema_parts.from_typed(Small, {"size": {"type": "integer"}}, ())
    with pytest.raises(TypeError, match="refuses null"):
        schema_parts.from_typed(Small, {"name": {"type": "string"}}, ())


@pytest.mark.parametrize("verdict", ["leak", "no-leak", "fragmentation", "error", "skipped"])
def test_what_validation_accepts_the_views_read_without_a_key_error(verdict):
    """A record of the required keys alone, and one whose decision holds its required keys
    alone, pass validation; matrix.cell, the decision's words and the table's row read them."""
    from leakbench.analysis import json_schemas
    from leakbench.analysis.judge import decision
    from leakbench.history import matrix

    least = {
        "schema": 3,
        "pair": "p",
        "variant": "leaky",
        "verdict": verdict,
        "metrics": {},
        "environment": {},
    }
    required = json_schemas.schema_of("record")["properties"]["decision"]["required"]
    made = {k: None for k in required} | {"verdict": verdict, "source": "first run", "signals": []}
    for rec in (least, {**least, "decision": made}):
        assert validate.problem("record", rec) is None
        read = schema.migrate(json.loads(json.dumps(rec)))
        assert matrix.cell(read)["verdict"] == verdict
        assert in_words.words(decision.of(read)).startswith(verdict)
