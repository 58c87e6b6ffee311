"""The committed tables that docs/asv.md says are generated (`leakbench matrix > results/...`)
are exactly what those commands print from the committed records today: a change to a
verdict's wording or a record shows here, not as a stale file."""

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from leakbench import cli

ROOT = Path(__file__).parent.parent
GENERATED = re.compile(r"^leakbench (.+?) > (results/\S+)", re.MULTILINE)
COMMANDS = GENERATED.findall((ROOT / "docs" / "asv.md").read_text())


def test_docs_name_the_generated_tables():
    assert len(COMMANDS) >= 3, COMMANDS


@pytest.mark.parametrize(("args", "path"), COMMANDS, ids=[path for _, path in COMMANDS])
def test_a_committed_table_is_what_its_command_prints(args, path, monkeypatch):
    monkeypatch.chdir(ROOT)
    done = CliRunner().invoke(cli.main, shlex.split(args))
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    assert done.exit_code in (0, 1), done.output  # compare exits 1 when verdicts changed
    assert done.stdout == (ROOT / path).read_text(), f"regenerate: leakbench {args} > {path}"
