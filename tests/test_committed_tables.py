"""The committed tables that docs/compare.md says are generated (`leakbench matrix > results/...`)
are exactly what those commands print from the committed records today: a change to a
verdict's wording or a record shows here, not as a stale file."""

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from leakbench import cli

ROOT = Path(__file__).parent.parent
# `leakbench ARGS > results/PATH`, and the exit code its comment names ("# exits 1: ..."), else 0
GENERATED = re.compile(r"^leakbench (.+?) > (results/\S+)(?:\s+# exits (\d))?", re.MULTILINE)
COMMANDS = [
    (args, path, int(code or 0))
    for args, path, code in GENERATED.findall((ROOT / "docs" / "compare.md").read_text())
]


def test_docs_name_the_generated_tables():
    assert len(COMMANDS) >= 3, COMMANDS


def test_docs_say_which_tables_record_a_changed_verdict():
    # compare exits 1 on a regression only (docs/gate.md): neither committed comparison has one
    assert [code for args, _, code in COMMANDS if args.startswith("compare")] == [0, 0]


@pytest.mark.parametrize(("args", "path", "code"), COMMANDS, ids=[c[1] for c in COMMANDS])
def test_a_committed_table_is_what_its_command_prints(
    args, path, code, committed_results, monkeypatch
):
    monkeypatch.setenv("LEAKBENCH_ROOT", str(ROOT))
    monkeypatch.chdir(committed_results.parent)
    done = CliRunner().invoke(cli.main, shlex.split(args))
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    assert done.exit_code == code, done.output
    assert done.stdout == Path(path).read_text(), f"regenerate: leakbench {args} > {path}"
