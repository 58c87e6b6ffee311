"""Bad input, case by case: each bad input a fuzzer found against an older leakbench gives one
line "leakbench: error: ..." on stderr, exit 2 (bad input), no traceback, no file changed (bytes and
mtime) and no process left.

Most of these cases have a test of their own, beside the code they exercise:

- outputs that are inputs (check --html the target, run --out a scenario), FIFOs and links to
  /dev/full, loops and dangling links as records or outputs,
  a bad --machine or ASV_MACHINE for repeat and calibrate, names too long for repeat --out,
  calibrate --out and check, bad JSON read by matrix and resumed by repeat, a site build that
  fails (the old site kept), a flame graph not UTF-8 or a bad repeatability file (a note):
  tests/test_bad_input.py;
- records of the wrong types (verdict "banana", an unknown variant, signals "held", runs 5,
  NaN, 1e400, a lone surrogate) read by matrix, compare, report-back and site, resume files whose
  observations are [5] or [{}] or without elapsed_seconds, calibrate's suite records without
  settings: tests/test_records_schema.py;
- NaN and infinity in --timeout, --param, --scales and compare --factor, --cap 0.5, sizes of
  309 digits: tests/test_cli.py (test_numbers_must_be_finite_and_sizes_whole_bytes);
- a process in a session of its own, an error then a stall: tests/test_runaway.py;
  garbage on the message pipe: tests/test_engine.py.

This file holds the rest, one parametrized test per kind of input: the cases that no test
ran as they were found (a command, an option, a file), through the real command line. In
process (click's CliRunner), with subprocess.Popen and bisect's virtualenv refusing to be used
(the package registry answers from test_bisect's saved sample), so a case that got as far as
starting a process fails; a case that could hang or read without end on a regression
(/dev/full) runs as a child process in a session of its own, with a timeout, and no process of
that session may be left. No TensorFlow: the scenarios are the pure-Python pair of tests/data
(conftest.pure_python_checkout).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import invoke, leakbench, refused, state
from packaging.tags import Tag

from leakbench.history import installer, registry

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
SAFE = ["--cap", "1GiB", "--timeout", "60"]  # every command that could measure is capped and timed
FAST = [*SAFE, "--warmup", "1", "--reps", "6", "--heap-reps", "0"]
REPEAT = ["repeat", "pyleak", "--runs", "1", *FAST]
CALIBRATE = ["calibrate", "--holders", "python", "--sizes", "0", "--runs", "1", "--timeout", "60"]
BISECT = [
    "bisect",
    "pyleak",
    "--good",
    "2.15.1",
    "--bad",
    "2.16.2",
    "--cap",
    "1GiB",
    "--venv",
    "venv",
]
DIGITS_309 = "1" * 309  # past 1e308
LONG = "y" * 300  # one name past NAME_MAX (255)
DEEP = "/".join(["d" * 200] * 25)  # a path past PATH_MAX (4096), each name short enough
SAMPLE_TAGS = {
    Tag("cp311", "cp311", p)
    for p in ("manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
}  # the wheels of the registry sample


class Started(Exception):
    """A refusal got as far as starting a process or making bisect's virtualenv."""


def _start(*args, **kwargs):
    raise Started(f"would start {args[0] if args else kwargs.get('args')!r}")


# --- the world, and the promise -------------------------------------------------------------------


@pytest.fixture
def sealed(here, monkeypatch) -> Path:
    """conftest's `here` (the pure-Python pair `pyleak`, stateful_map, ok.py, the site fixture's
    records as results/), where no process can start, nor a virtualenv be made; the package
    registry answers from test_bisect's saved sample."""
    monkeypatch.setattr(subprocess, "Popen", _start)
    sample = json.loads((DATA / "pypi-simple-tf.json").read_text())
    monkeypatch.setattr(registry, "fetch_index", lambda dist: sample[dist])
    monkeypatch.setattr(registry, "sys_tags", lambda: iter(SAMPLE_TAGS))
    for name in ("ensure", "install", "measure"):
        monkeypatch.setattr(installer.Venv, name, _start)
    return here


# --- numbers and names on the command line --------------------------------------------------------

# case -> (command line, what the line names, environment added)
OPTIONS = {
    "repeat --timeout nan": ([*REPEAT, "--timeout", "nan", "--out", "r.json"], "--timeout", None),
    "check --teardown-timeout nan": (
        ["check", "ok.py:bounded", *SAFE, "--teardown-timeout", "nan"],
        "--teardown-timeout",
        None,
    ),
    "repeat --cap 0.5": ([*REPEAT, "--cap", "0.5", "--out", "r.json"], "--cap", None),
    "check --cap 0.5": (
        ["check", "ok.py:bounded", "--timeout", "60", "--cap", "0.5"],
        "--cap",
        None,
    ),
    "repeat --cap of 309 digits": (
        [*REPEAT, "--cap", DIGITS_309, "--out", "r.json"],
        "--cap",
        None,
    ),
    "check --cap of 309 digits": (
        ["check", "ok.py:bounded", "--timeout", "60", "--cap", DIGITS_309],
        "--cap",
        None,
    ),
    "calibrate --sizes 0.5": (
        [*CALIBRATE[:3], "--sizes", "0.5", "--runs", "1", "--out", "c.json"],
        "--sizes",
        None,
    ),
    "calibrate --sizes of 309 digits": (
        [*CALIBRATE[:3], "--sizes", DIGITS_309, "--runs", "1", "--out", "c.json"],
        "--sizes",
        None,
    ),
    "repeat --scales 1,inf": ([*REPEAT, "--scales", "1,inf", "--out", "r.json"], "--scales", None),
    "repeat --scales 1,nan": ([*REPEAT, "--scales", "1,nan", "--out", "r.json"], "--scales", None),
    "matrix --machine a/b": (["matrix", "--results", "results", "--machine", "a/b"], "'a/b'", None),
    "matrix --machine ..": (["matrix", "--results", "results", "--machine", ".."], "'..'", None),
    "compare --machine ..": (
        ["compare", "2.15.1", "2.16.2", "--results", "results", "--machine", ".."],
        "'..'",
        None,
    ),
    "report-back --machine a/b": (
        ["report-back", "--results", "results", "--machine", "a/b"],
        "'a/b'",
        None,
    ),
    "bisect with ASV_MACHINE a/b": (
        BISECT,
        "ASV_MACHINE: 'a/b' is not an asv machine name",
        {"ASV_MACHINE": "a/b"},
    ),
    "bisect with ASV_MACHINE ..": (
        BISECT,
        "ASV_MACHINE: '..' is not an asv machine name",
        {"ASV_MACHINE": ".."},
    ),
    "bisect --out with ASV_MACHINE ..": (
        [*BISECT, "--out", "b.json"],
        "ASV_MACHINE: '..'",
        {"ASV_MACHINE": ".."},
    ),
}


@pytest.mark.parametrize("case", OPTIONS)
def test_a_bad_number_or_machine_name_is_refused(sealed, case):
    args, named, env = OPTIONS[case]
    before = state(sealed)
    refused(invoke(*args, env=env), named)
    assert state(sealed) == before


# case -> (command line, environment added, what the line says): a path no filesystem takes
# (LONG: a name past 255 bytes,
# DEEP: a path past 4,096), refused before any folder is made for it
TOO_LONG = {
    "run FILE": (["run", f"{LONG}.py", *SAFE], None, "too long"),
    "run --out": (["run", "pyleak", *SAFE, "--out", f"{LONG}.jsonl"], None, "too long"),
    "run --out, deep": (["run", "pyleak", *SAFE, "--out", f"{DEEP}/r.jsonl"], None, "too long"),
    "run --out, markdown": (
        ["run", "pyleak", *SAFE, "--format", "markdown", "--out", f"{LONG}.md"],
        None,
        "too long",
    ),
    "run --flamegraph-dir": (["run", "pyleak", *SAFE, "--flamegraph-dir", LONG], None, "too long"),
    "check FILE, deep": (["check", f"{DEEP}/x.py:work", *SAFE], None, "too long"),
    "check --html": (["check", "ok.py:bounded", *SAFE, "--html", f"{LONG}.html"], None, "too long"),
    "repeat --out, deep": ([*REPEAT, "--out", f"{DEEP}/r.json"], None, "too long"),
    "repeat --machine": ([*REPEAT, "--machine", LONG], None, "too long"),
    "calibrate --machine": ([*CALIBRATE, "--machine", LONG], None, "too long"),
    "calibrate --suite-records": (
        [*CALIBRATE, "--out", "c.json", "--suite-records", f"{LONG}.jsonl"],
        None,
        "too long",
    ),
    "bisect with ASV_MACHINE": (BISECT, {"ASV_MACHINE": LONG}, "too long"),
    "matrix --results": (["matrix", "--results", LONG], None, "too long"),
    "compare FILE": (
        ["compare", f"{LONG}.jsonl", "results/records/vm/tf-2.16.2.jsonl"],
        None,
        "no records file at",
    ),
    "report-back --out-dir": (
        ["report-back", "--results", "results", "--out-dir", LONG],
        None,
        "too long",
    ),
    "site --out-dir": (
        ["site", "--results", "results", "--out-dir", LONG, "--no-asv"],
        None,
        "too long",
    ),
    "site --results, deep": (
        ["site", "--results", DEEP, "--out-dir", "site", "--no-asv"],
        None,
        "too long",
    ),
}


@pytest.mark.parametrize("case", TOO_LONG)
def test_a_path_too_long_is_refused(sealed, case):
    args, env, named = TOO_LONG[case]
    before = state(sealed)
    refused(invoke(*args, env=env), named)
    assert state(sealed) == before  # repeat, calibrate, bisect --machine: no results/<kind>/ made


# --- /dev/full as an output -----------------------------------------------------------------------

DEV_FULL = {  # the device itself (tests/test_bad_input.py: a link to it)
    "repeat --out": ([*REPEAT, "--out", "/dev/full"], "--out: /dev/full"),
    "calibrate --out": ([*CALIBRATE, "--out", "/dev/full"], "--out: /dev/full"),
    "run --out (json)": (
        ["run", "pyleak", *FAST, "--format", "json", "--out", "/dev/full"],
        "--out: /dev/full is a character device",
    ),
    "run --out (markdown)": (
        ["run", "pyleak", *FAST, "--format", "markdown", "--out", "/dev/full"],
        "--out: /dev/full is a character device",
    ),
    "check --html": (
        ["check", "ok.py:bounded", *FAST, "--html", "/dev/full"],
        "--html: /dev/full is a character device",
    ),
}


@pytest.mark.parametrize("case", DEV_FULL)
def test_dev_full_as_an_output_is_refused(sealed, case):
    args, named = DEV_FULL[case]
    before = state(sealed)
    refused(leakbench(*args), named)
    assert state(sealed) == before


@pytest.fixture
def reported(tmp_path, monkeypatch) -> Path:
    """cwd: results/ with a copy of tests/data/published's records (py_function_map's, copied
    from committed ones: never the working copy of results/, which is regenerated); the
    repository as LEAKBENCH_ROOT (its pairs from public reports, which report-back writes a
    block for); blocks/, report-back's --out-dir."""
    shutil.copytree(DATA / "published" / "records", tmp_path / "results" / "records")
    (tmp_path / "blocks").mkdir()
    monkeypatch.setenv("LEAKBENCH_ROOT", str(REPO))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(subprocess, "Popen", _start)
    return tmp_path


LINKS = {
    "a link to /dev/full": ("/dev/full", "a character device"),
    "a symbolic link loop": ("py_function_map.md", "a symbolic link loop"),
    "a dangling symbolic link": ("nowhere/py_function_map.md", "a dangling symbolic link"),
}


@pytest.mark.parametrize("kind", LINKS)
def test_report_back_refuses_a_special_block_file(reported, kind):
    target, named = LINKS[kind]
    block = reported / "blocks" / "py_function_map.md"
    block.symlink_to(target)
    before = state(reported)
    refused(
        invoke("report-back", "py_function_map", "--results", "results", "--out-dir", "blocks"),
        f"--out-dir: blocks/py_function_map.md is {named}",
    )
    assert state(reported) == before


# --- scenario files -------------------------------------------------------------------------------


def with_field(name: str, literal: str) -> bytes:
    """tests/data/python_leak.py with `name = literal` in place of its own line (added at the end
    where it has none)."""
    lines = (DATA / "python_leak.py").read_text().splitlines(keepends=True)
    at = [i for i, line in enumerate(lines) if line.startswith(f"{name} = ")]
    if not at:
        return "".join([*lines, f"\n{name} = {literal}\n"]).encode()
    return "".join([*lines[: at[0]], f"{name} = {literal}\n", *lines[at[0] + 1 :]]).encode()


LEAK = (DATA / "python_leak.py").read_bytes()
LATIN_1 = LEAK.replace(b'TITLE = "', b'TITLE = "\xe9', 1)
MINUSES = "-" * 3000 + "1"
# case -> (the scenario file's bytes, what the line says of it)
SCENARIOS = {
    "not UTF-8, with a coding line": (
        b"# -*- coding: latin-1 -*-\n" + LATIN_1,
        "not UTF-8 (byte 0xe9",
    ),
    "not UTF-8": (LATIN_1, "not UTF-8 (byte 0xe9"),
    "PARAMS = {[1]: 2}": (with_field("PARAMS", "{[1]: 2}"), "PARAMS must be a literal"),
    "SIZE_PARAM = []": (with_field("SIZE_PARAM", "[]"), "SIZE_PARAM must be a str"),
    "3,000 nested unary minuses in PARAMS": (
        with_field("PARAMS", f"{{'bytes_per_rep': {MINUSES}}}"),
        "nested too deeply",
    ),
    "3,000 nested unary minuses elsewhere": (
        LEAK + f"\nX = {MINUSES}\n".encode(),
        "nested too deeply",
    ),
    "a NUL in an ENV name": (
        with_field("ENV", "{'A\\x00B': 'x'}"),
        "ENV names must be non-empty, without '=' or NUL",
    ),
    "a NUL in an ENV value": (
        with_field("ENV", "{'A': 'x\\x00'}"),
        "ENV A must not hold a NUL character",
    ),
    "TITLE = 5": (with_field("TITLE", "5"), "TITLE must be a str"),
    "TITLE = None": (with_field("TITLE", "None"), "TITLE must be a str"),
    "REPETITION = []": (with_field("REPETITION", "[]"), "REPETITION must be a str"),
    "SOURCE = '#'": (with_field("SOURCE", "'#'"), "SOURCE must be one of"),
    "the size parameter defaulting to 0": (
        with_field("PARAMS", "{'bytes_per_rep': 0}"),
        "bytes_per_rep must default to a positive number",
    ),
    "the size parameter defaulting to -1": (
        with_field("PARAMS", "{'bytes_per_rep': -1}"),
        "bytes_per_rep must default to a positive number",
    ),
    "another parameter defaulting to -1": (
        with_field("PARAMS", "{'bytes_per_rep': 1, 'extra': -1}"),
        "extra must default to 0 or more, got -1",
    ),
    "ENV {'': 'x'}": (with_field("ENV", "{'': 'x'}"), "ENV names must be non-empty"),
    "ENV LD_PRELOAD=/etc/passwd": (
        with_field("ENV", "{'LD_PRELOAD': '/etc/passwd'}"),
        "which is not an ELF shared library",
    ),
}


@pytest.mark.parametrize("command", ["run FILE", "check FILE", "list"])
@pytest.mark.parametrize("case", SCENARIOS)
def test_a_scenario_file_that_breaks_the_contract_is_refused(sealed, case, command):
    """`run FILE` and `check FILE` (a file of the user's), `list` (the file in scenarios/): refused
    in one line naming the file, before anything runs."""
    data, why = SCENARIOS[case]
    path = sealed / "root" / "scenarios" / "pyleak.py" if command == "list" else sealed / "mine.py"
    path.write_bytes(data)
    before = state(sealed)
    args = {
        "run FILE": ["run", path, *FAST],
        "check FILE": ["check", path, *FAST],
        "list": ["list"],
    }[command]
    refused(invoke(*args), str(path), why)
    assert state(sealed) == before


# --- records and resume files ---------------------------------------------------------------------

GOOD = (DATA / "site_results" / "records" / "vm" / "tf-2.16.2.jsonl").read_text().splitlines()[0]
# case -> (a records file's one line, what the line says of it)
RECORDS = {
    "an integer of 5,000 digits in a record": (
        GOOD.replace('"schema": 1', '"schema": ' + "9" * 5000, 1),
        "an integer of 5,000 digits",
    ),
    "an array nested 100,000 deep in a record": (
        GOOD[:-1] + ', "deep": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "nested too deeply",
    ),
    "a line that is [5]": ("[5]", "not a leakbench record"),
    "a line that is {}": ("{}", "not a leakbench record"),
}
READERS = {
    "matrix": ["matrix", "--results", "results"],
    "compare versions": ["compare", "2.16.2", "2.17.1", "--results", "results"],
    "compare files": [
        "compare",
        "results/records/vm/tf-2.16.2.jsonl",
        "results/records/vm/tf-2.17.1.jsonl",
    ],
    "report-back": ["report-back", "--results", "results"],
    "site": ["site", "--results", "results", "--out-dir", "site", "--no-asv"],
}


def test_the_good_record_is_what_the_cases_spoil():
    assert json.loads(GOOD)["schema"] == 1 and GOOD.endswith("}")


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("case", RECORDS)
def test_a_records_file_that_is_not_json_records_is_refused(sealed, case, reader):
    line, why = RECORDS[case]
    (sealed / "results" / "records" / "vm" / "tf-2.17.1.jsonl").write_text(line + "\n")
    before = state(sealed)
    refused(invoke(*READERS[reader]), "tf-2.17.1.jsonl, line 1: ", why)
    assert state(sealed) == before  # site: no site/ made


# case -> (a resume file's text, what the line says of it)
RESUMES = {
    "[5]": ("[5]", "is not a {kind} result of format 2"),
    "[{}]": ("[{}]", "is not a {kind} result of format 2"),
    "{}": ("{}", "is not a {kind} result of format 2"),
    "null": ("null", "is not a {kind} result of format 2"),
    "an integer of 5,000 digits": (
        '{"format": 2, "observations": [' + "9" * 5000 + "]}",
        "cannot be read as JSON (an integer of 5,000 digits",
    ),
    "nested 100,000 deep": (
        "[" * 100_000 + "]" * 100_000,
        "cannot be read as JSON (nested too deeply)",
    ),
}
RESUMERS = {
    "repeat": ([*REPEAT, "--out", "out.json"], "repeatability"),
    "calibrate": ([*CALIBRATE, "--out", "out.json"], "calibration"),
}


@pytest.mark.parametrize("command", RESUMERS)
@pytest.mark.parametrize("case", RESUMES)
def test_a_resume_file_of_another_shape_is_refused_and_kept(sealed, case, command):
    text, why = RESUMES[case]
    args, kind = RESUMERS[command]
    (sealed / "out.json").write_text(text)
    before = state(sealed)
    refused(invoke(*args), "out.json ", why.format(kind=kind), "it is kept")
    assert state(sealed) == before
