"""One grammar for the command line (docs/cli.md): `leakbench --version`; every command's help says
how it exits; every option has help; the top-level help cuts no command's line; a result goes to
stdout or `--out FILE` in the form `--format` names; the old spellings (run --json/--markdown,
check --json, gate --json/--markdown) still work, hidden from the help.

matrix, compare and gate read the hand-made records of tests/data/results/ (tests/test_versions.py
says what they hold); run and check measure the pure-Python pair and target of
conftest.pure_python_checkout (no TensorFlow), a few seconds each.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from conftest import refused

from leakbench import cli

RESULTS = Path(__file__).parent / "data" / "results"
RECORDS = RESULTS / "records" / "fixture"
LEAKBENCH = Path(sys.executable).with_name("leakbench")
# one short, capped, timed measurement of pure Python (the heap pass skipped)
QUICK = ["--cap", "1GiB", "--timeout", "60", "--warmup", "1", "--reps", "5", "--heap-reps", "0"]

leakbench = functools.partial(CliRunner().invoke, cli.main)


def commands(command: click.Command = cli.main, path: tuple[str, ...] = ()):
    """(the words that name it, the command) for the group and every command under it."""
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from commands(sub, (*path, name))


EVERY = [
    pytest.param(path, command, id=" ".join(path) or "leakbench") for path, command in commands()
]


# --- --version, help ----------------------------------------------------------------------------


def test_version_prints_the_version_engine_and_tensorflow_on_one_line():
    from leakbench import version
    from leakbench.history import pin

    done = leakbench(["--version"])
    assert done.exit_code == 0, done.output
    tf = pin.installed_tf_version() or "none: no TensorFlow installed here"
    assert done.stdout == (
        f"leakbench {importlib.metadata.version('leakbench')} (engine {version.source_hash()}); "
        f"measures TensorFlow {tf}\n"
    )
    # the installed entry point, as a user types it
    typed = subprocess.run([LEAKBENCH, "--version"], capture_output=True, text=True, timeout=60)
    assert (typed.returncode, typed.stdout) == (0, done.stdout), typed.stderr


@pytest.mark.parametrize(("path", "command"), EVERY)
def test_every_help_states_the_exit_codes(path, command):
    done = leakbench([*path, "--help"])
    assert done.exit_code == 0, done.output
    said = " ".join(done.stdout.split())
    assert re.search(r"Exit 0\b[^.]*\b2\b", said), said  # 0, and 2 for bad input, at least


@pytest.mark.parametrize(("path", "command"), EVERY)
def test_no_option_lacks_help(path, command):
    """Every option, the hidden old spellings included, says what it does."""
    ctx = click.Context(command, info_name=path[-1] if path else "leakbench")
    bare = [p.opts for p in command.get_params(ctx) if isinstance(p, click.Option) and not p.help]
    assert bare == []


@pytest.mark.parametrize("columns", ["50", "80", "200"])
def test_the_command_list_cuts_no_line(columns):
    """Each command's line in `leakbench --help` is its first sentence, whole, at any width."""
    done = leakbench(["--help"], env={"COLUMNS": columns})
    listed = done.stdout.split("Commands:\n", 1)[1]
    assert "..." not in listed
    said = " ".join(listed.split())
    for name, command in cli.main.commands.items():
        first = " ".join(command.help.split("\n\n")[0].split())
        first = first[: first.index(".") + 1]
        assert f"{name} {first}" in said, (name, first)
        assert len(first) <= 60, f"{name}: a first sentence of {len(first)} characters wraps"


def test_old_spellings_are_hidden_from_the_help():
    for path, options in ((["run"], ["--json", "--markdown"]), (["check"], ["--json"])):
        shown = leakbench([*path, "--help"]).stdout
        assert not [o for o in options if f"{o} " in shown], shown
    shown = leakbench(["gate", "--help"]).stdout
    assert "--json " not in shown and "--markdown " not in shown and "--junit FILE" in shown


def test_out_is_a_file_where_it_is_not_a_folder():
    """--out names a FILE in every command but report-back's and site's, which say DIR."""
    metavars = {}
    for path, command in commands():
        for param in command.params:
            if "--out" in getattr(param, "opts", []):
                ctx = click.Context(command, info_name=path[-1])
                metavars[path[-1]] = param.make_metavar(ctx)
    assert metavars == {
        name: "DIR" if name in ("report-back", "site") else "FILE"
        for name in ("run", "check", "causes", "matrix", "compare", "gate", "calibrate", "repeat")
        + ("bisect", "list")
        + ("report-back", "site")
    }


# --- --format and --out: matrix, compare, gate --------------------------------------------------


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["matrix", "--results", RESULTS], 0),
        (["compare", "2.13.1", "2.21.0", "--results", RESULTS], 0),
        (["compare", "2.13.1", "2.99.0", "--results", RESULTS], 1),  # a regression
        (["compare", RECORDS / "tf-2.13.1.jsonl", RECORDS / "tf-2.21.0.jsonl"], 0),
    ],
    ids=["matrix", "compare", "compare-regression", "compare-files"],
)
def test_format_json_out_file(tmp_path, args, code):
    """--format json --out F: F holds what --format json prints; stdout shows the markdown, as
    without either; the exit code stays the command's; one line on stderr names F."""
    args = [str(a) for a in args]
    printed = leakbench([*args, "--format", "json"])
    shown = leakbench(args)
    out = tmp_path / "result.json"
    done = leakbench([*args, "--format", "json", "--out", str(out)])
    assert (printed.exit_code, shown.exit_code, done.exit_code) == (code, code, code)
    assert out.read_text() == printed.stdout
    json.loads(out.read_text())
    assert done.stdout == shown.stdout and shown.stdout.startswith("## leakbench ")
    assert done.stderr == f"leakbench: result written to {out}\n"
    md = tmp_path / "result.md"
    assert leakbench([*args, "--out", str(md)]).exit_code == code
    assert md.read_text() == shown.stdout


@pytest.mark.parametrize("command", ["matrix", "compare"])
def test_out_is_never_a_file_it_reads_nor_a_folder(tmp_path, command):
    args = ["matrix"] if command == "matrix" else ["compare", "2.13.1", "2.21.0"]
    read = RECORDS / "tf-2.13.1.jsonl"
    before = read.read_bytes()
    refused(
        leakbench([*args, "--results", str(RESULTS), "--out", str(read)]),
        f"--out: {read} is a records file it reads",
    )
    assert read.read_bytes() == before
    refused(leakbench([*args, "--results", str(RESULTS), "--out", str(tmp_path)]), "--out")


def test_gate_old_spellings_are_its_format_and_out(tmp_path):
    base = ["gate", "--baseline", "2.13.1", "--candidate", "2.99.0", "--results", str(RESULTS)]
    old = [
        "--json",
        str(tmp_path / "old.json"),
        "--markdown",
        str(tmp_path / "old.md"),
        "--junit",
        str(tmp_path / "junit.xml"),
    ]
    done = leakbench([*base, *old])
    assert done.exit_code == 1, done.output  # the fix that leaks in 2.99.0: a regression
    assert (tmp_path / "junit.xml").read_text().startswith("<?xml")
    plain = leakbench(base)
    for form, suffix in (("json", "json"), ("markdown", "md")):
        new = tmp_path / f"new.{suffix}"
        again = leakbench([*base, "--format", form, "--out", str(new)])
        assert again.exit_code == 1 and again.stdout == plain.stdout == done.stdout
        if form == "json":  # the same comparison; only the seconds it took differ
            seconds = {"seconds": 0}
            assert {**json.loads(new.read_text()), **seconds} == {
                **json.loads((tmp_path / "old.json").read_text()),
                **seconds,
            }
        else:
            assert new.read_text() == (tmp_path / "old.md").read_text()
    refused(
        leakbench([*base, "--out", str(tmp_path / "x"), "--json", str(tmp_path / "x")]),
        "--json:",
        "--out's file too",
    )


# --- run and check: a measurement of pure Python ------------------------------------------------


@pytest.mark.timeout(180)
def test_run_old_and_new_spellings_write_the_same(checkout, tmp_path):
    done = leakbench(
        [
            "run",
            "pyleak",
            "--variant",
            "leaky",
            *QUICK,
            "--json",
            "appended.jsonl",
            "--markdown",
            "old.md",
            "--format",
            "json",
            "--out",
            "records.jsonl",
        ]
    )
    assert done.exit_code == 0, (done.stdout, done.stderr)
    assert "leakbench: memory per scenario variant" in done.stdout  # the table, as by default
    records = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert [(r["pair"], r["variant"], r["verdict"]) for r in records] == [
        ("pyleak", "leaky", "leak")
    ]
    assert (tmp_path / "appended.jsonl").read_text() == (tmp_path / "records.jsonl").read_text()
    assert (tmp_path / "old.md").read_text().startswith("## leakbench run: ")


def test_run_refuses_an_out_before_measuring(checkout, tmp_path):
    scenario = checkout / "scenarios" / "pyleak.py"
    refused(
        leakbench(["run", "pyleak", *QUICK, "--out", str(scenario)]),
        f"--out: {scenario} is a scenario file it measures",
    )
    refused(leakbench(["run", "pyleak", *QUICK, "--out", str(tmp_path)]), "--out")
    refused(
        leakbench(["run", "pyleak", *QUICK, "--out", "a.md", "--markdown", "a.md"]),
        "--markdown: a.md is --out's file too",
    )


@pytest.mark.timeout(120)
def test_check_json_is_format_json(checkout, tmp_path):
    old = leakbench(["check", "ok.py:leaky", *QUICK, "--json"])
    new = leakbench(["check", "ok.py:leaky", *QUICK, "--format", "json", "--out", "rec.json"])
    assert (old.exit_code, new.exit_code) == (1, 1), (old.stderr, new.stderr)  # a leak
    printed, written = json.loads(old.stdout), json.loads((tmp_path / "rec.json").read_text())
    assert (printed["verdict"], written["verdict"]) == ("leak", "leak")
    assert "ok.py:leaky: leak" in new.stdout  # the tables, as by default
    refused(
        leakbench(["check", "ok.py:leaky", *QUICK, "--json", "--format", "table"]),
        "--json is --format json",
    )
