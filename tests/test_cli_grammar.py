"""One grammar for the command line (docs/cli.md): `leakbench --version`; every command's help says
how it exits; every option has help; the top-level help cuts no command's line; a result goes to
stdout or `--out FILE` in the form `--format` names, a folder of files to `--out-dir DIR`; no option
is hidden (the old spellings run --json/--markdown, check --json, gate --json/--markdown are
unknown options); every command's help names its exit codes, all from leakbench.cli.exits' one
table, which docs/cli.md shows.

matrix, compare and gate read the hand-made records of tests/data/results/ (tests/test_versions.py
says what they hold); run and check measure the pure-Python pair and target of
conftest.pure_python_checkout (no TensorFlow), a few seconds each.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from conftest import invoke, refused

from leakbench import cli

RESULTS = Path(__file__).parent / "data" / "results"
RECORDS = RESULTS / "records" / "fixture"
LEAKBENCH = Path(sys.executable).with_name("leakbench")
# one short, capped, timed measurement of pure Python (the heap pass skipped)
QUICK = ["--cap", "1GiB", "--timeout", "60", "--warmup", "1", "--reps", "5", "--heap-reps", "0"]


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

    done = invoke("--version")
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
    done = invoke(*path, "--help")
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
    done = invoke("--help", env={"COLUMNS": columns})
    listed = done.stdout.split("Commands:\n", 1)[1]
    assert "..." not in listed
    said = " ".join(listed.split())
    for name, command in cli.main.commands.items():
        first = " ".join(command.help.split("\n\n")[0].split())
        first = first[: first.index(".") + 1]
        assert f"{name} {first}" in said, (name, first)
        assert len(first) <= 60, f"{name}: a first sentence of {len(first)} characters wraps"


@pytest.mark.parametrize(
    "args",
    [
        ["run", "pyleak", "--json", "x.jsonl"],
        ["run", "pyleak", "--markdown", "x.md"],
        ["check", "ok.py:leaky", "--json"],
        ["gate", "--baseline", "2.13.1", "--candidate", "2.99.0", "--json", "x.json"],
        ["gate", "--baseline", "2.13.1", "--candidate", "2.99.0", "--markdown", "x.md"],
    ],
    ids=lambda a: f"{a[0]} {a[-2] if a[-1] != '--json' else a[-1]}",
)
def test_the_old_spellings_are_unknown_options(tmp_path, monkeypatch, args):
    """run --json/--markdown, check --json, gate --json/--markdown are gone (--format and --out):
    click's usage error, exit 2, nothing written."""
    monkeypatch.chdir(tmp_path)
    old = next(a for a in args if a in ("--json", "--markdown"))
    refused(invoke(*args), f"No such option '{old}'")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("path", "command"), EVERY)
def test_no_option_is_hidden(path, command):
    """One grammar, every option in the help: no hidden option (an old spelling kept) anywhere."""
    assert [p.opts for p in command.params if getattr(p, "hidden", False)] == []


# Commands that print no result in a --format of their choosing, with why: they write files (and
# print what they wrote), or their one form is fixed.
NO_FORMAT = {
    "leakbench": "the group: each command takes its own",
    "calibrate": "always files JSON in --out and its markdown table beside it; prints the table",
    "repeat": "always files JSON in --out and its markdown table beside it; prints the table",
    "bisect": "always files JSON in --out and its markdown beside it; prints its summary",
    "report-back": "markdown blocks to paste into an issue are its one form (--out-dir DIR)",
    "site": "writes a folder of HTML (--out-dir DIR); prints the pages written",
    "publish": "writes the published dataset under results/; prints progress only",
}


@pytest.mark.parametrize(("path", "command"), EVERY)
def test_every_command_that_prints_a_result_has_format(path, command):
    name = " ".join(path) or "leakbench"
    has = any("--format" in getattr(p, "opts", []) for p in command.params)
    assert has != (name in NO_FORMAT), (name, NO_FORMAT.get(name, "prints a result: --format"))


@pytest.mark.parametrize(("path", "command"), EVERY)
def test_every_help_names_its_exit_codes_from_the_one_table(path, command):
    """The help's "Exit ..." sentence names 0 and 2 at least, and every code it names is in
    leakbench.cli.exits.TABLE."""
    from leakbench.cli import exits

    said = " ".join(invoke(*path, "--help").stdout.split())
    sentence = re.search(r"Exit (\d+\b.*?)\(docs/cli\.md\)\.", said)
    assert sentence, said
    codes = {int(c) for c in re.findall(r"(?:^|; )(\d+) ", sentence.group(1))}
    assert {exits.DONE, exits.BAD_INPUT} <= codes <= set(exits.TABLE), (codes, sentence.group(0))


def test_docs_cli_shows_the_one_exit_code_table():
    from leakbench.cli import exits

    docs = (Path(__file__).parents[1] / "docs" / "cli.md").read_text()
    assert exits.markdown_table() in docs


@pytest.mark.parametrize(
    ("record", "verdict", "code"),
    [
        ({"verdict": "no-leak"}, "no-leak", 0),
        ({"verdict": "hang", "phase": "setup", "signals": []}, "hang", 1),
        ({"verdict": "over-cap", "phase": "setup", "signals": []}, "over-cap", 1),
        ({"verdict": "error", "phase": "setup", "signals": []}, "error", 3),
    ],
    ids=["no-leak", "hang", "over-cap", "error"],
)
def test_check_exits_by_the_one_table(record, verdict, code):
    """A hang is a verdict (1), as in run; an error is a measurement that could not run (3)."""
    from leakbench.cli import check_exit_code

    assert check_exit_code({"variant": "check", **record}) == code


def test_out_is_a_file_and_out_dir_a_folder():
    """--out always names a FILE (a folder refused); --out-dir, where a command writes a folder of
    files (report-back, site), a DIR. No other option writes a command's result."""
    found = {}
    for path, command in commands():
        ctx = click.Context(command, info_name=path[-1] if path else "leakbench")
        for param in command.params:
            for name in set(getattr(param, "opts", [])) & {"--out", "--out-dir"}:
                found[(path[-1], name)] = param.make_metavar(ctx)
                if name == "--out":
                    assert param.type.dir_okay is False, (path, name)  # type: ignore[attr-defined]
    files = ("run", "check", "causes", "matrix", "compare", "gate", "calibrate", "repeat")
    assert found == {
        **{(name, "--out"): "FILE" for name in (*files, "bisect", "list")},
        **{(name, "--out-dir"): "DIR" for name in ("report-back", "site")},
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
    printed = invoke(*args, "--format", "json")
    shown = invoke(*args)
    out = tmp_path / "result.json"
    done = invoke(*args, "--format", "json", "--out", str(out))
    assert (printed.exit_code, shown.exit_code, done.exit_code) == (code, code, code)
    assert out.read_text() == printed.stdout
    json.loads(out.read_text())
    assert done.stdout == shown.stdout and shown.stdout.startswith("## leakbench ")
    assert done.stderr == f"leakbench: result written to {out}\n"
    md = tmp_path / "result.md"
    assert invoke(*args, "--out", str(md)).exit_code == code
    assert md.read_text() == shown.stdout


@pytest.mark.parametrize("command", ["matrix", "compare"])
def test_out_is_never_a_file_it_reads_nor_a_folder(tmp_path, command):
    args = ["matrix"] if command == "matrix" else ["compare", "2.13.1", "2.21.0"]
    read = RECORDS / "tf-2.13.1.jsonl"
    before = read.read_bytes()
    refused(
        invoke(*args, "--results", str(RESULTS), "--out", str(read)),
        f"--out: {read} is a records file it reads",
    )
    assert read.read_bytes() == before
    refused(invoke(*args, "--results", str(RESULTS), "--out", str(tmp_path)), "--out")


def test_gate_writes_json_markdown_and_junit(tmp_path):
    base = ["gate", "--baseline", "2.13.1", "--candidate", "2.99.0", "--results", str(RESULTS)]
    plain = invoke(*base)
    assert plain.exit_code == 1, plain.output  # the fix that leaks in 2.99.0: a regression
    junit = tmp_path / "junit.xml"
    for form, suffix in (("json", "json"), ("markdown", "md")):
        new = tmp_path / f"new.{suffix}"
        again = invoke(*base, "--format", form, "--out", str(new), "--junit", str(junit))
        assert again.exit_code == 1 and again.stdout == plain.stdout
        if form == "json":
            assert json.loads(new.read_text())["exit_code"] == 1
        else:
            assert "| pair | variant | metric |" in new.read_text()  # a file: every metric
        assert junit.read_text().startswith("<?xml")
    refused(
        invoke(*base, "--out", str(tmp_path / "x"), "--junit", str(tmp_path / "x")),
        "--junit:",
        "--out's file too",
    )


# --- run and check: a measurement of pure Python ------------------------------------------------


@pytest.mark.timeout(180)
def test_run_format_json_out_writes_a_records_file(checkout, tmp_path):
    """One record per line, as a records file holds them, as bisect's installer reads it (its
    last line); stdout shows the table, as by default."""
    from leakbench.analysis import schema

    done = invoke(
        "run", "pyleak", "--variant", "leaky", *QUICK, "--format", "json", "--out", "records.jsonl"
    )
    assert done.exit_code == 0, (done.stdout, done.stderr)
    assert "leakbench: memory per scenario variant" in done.stdout
    lines = (tmp_path / "records.jsonl").read_text().splitlines()
    records = [schema.loads(line) for line in lines]
    assert [(r["pair"], r["variant"], r["verdict"]) for r in records] == [
        ("pyleak", "leaky", "leak")
    ]
    assert json.loads(lines[-1])["verdict"] == "leak"


def test_run_refuses_an_out_before_measuring(checkout, tmp_path):
    scenario = checkout / "scenarios" / "pyleak.py"
    refused(
        invoke("run", "pyleak", *QUICK, "--out", str(scenario)),
        f"--out: {scenario} is a scenario file it measures",
    )
    refused(invoke("run", "pyleak", *QUICK, "--out", str(tmp_path)), "--out")


@pytest.mark.timeout(120)
def test_check_format_json(checkout, tmp_path):
    printed = invoke("check", "ok.py:leaky", *QUICK, "--format", "json")
    new = invoke("check", "ok.py:leaky", *QUICK, "--format", "json", "--out", "rec.json")
    assert (printed.exit_code, new.exit_code) == (1, 1), (printed.stderr, new.stderr)  # a leak
    written = json.loads((tmp_path / "rec.json").read_text())
    assert (json.loads(printed.stdout)["verdict"], written["verdict"]) == ("leak", "leak")
    assert "ok.py:leaky: leak" in new.stdout  # the tables, as by default


def test_causes_format_json_and_its_out(tmp_path):
    """causes prints in --format as every command does: json, the causes named."""
    record = tmp_path / "rec.json"
    record.write_text(next(iter((RECORDS / "tf-2.13.1.jsonl").read_text().splitlines())))
    table = invoke("causes", str(record))
    found = invoke("causes", str(record), "--format", "json")
    assert (table.exit_code, found.exit_code) == (0, 0), (table.stderr, found.stderr)
    assert set(json.loads(found.stdout)) <= {"named", "none", "na"}
    out = tmp_path / "causes.json"
    again = invoke("causes", str(record), "--format", "json", "--out", str(out))
    assert again.exit_code == 0 and out.read_text() == found.stdout
    assert again.stdout == table.stdout
