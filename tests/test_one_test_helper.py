"""Test helpers defined once (issue 32): a helper or fixture two test modules need lives in
conftest.py; a helper of one module has a name no other module gives its own. The command line
in process goes through one helper, conftest.invoke: no other test module uses click's CliRunner
(issue 41). And the long fuzz run, marked `fuzz`, stays in the suite's default selection (make
test, CI)."""

from __future__ import annotations

import ast
import tomllib
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def module_functions(path: Path) -> list[str]:
    """The names of the functions (fixtures included) a module defines at its top level, but its
    tests and pytest's hooks, whose names pytest gives them."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and not node.name.startswith(("test_", "pytest_"))
    ]


def defined_twice(folder: Path) -> dict[str, list[str]]:
    """{name: [module, ...]} for each function name defined in more than one module of folder."""
    found = defaultdict(list)
    for path in sorted(folder.glob("*.py")):
        for name in set(module_functions(path)):
            found[name].append(path.name)
    return {name: files for name, files in sorted(found.items()) if len(files) > 1}


def test_no_helper_is_defined_in_two_test_modules():
    twice = defined_twice(TESTS)
    assert not twice, "move these to tests/conftest.py (or name them apart): " + "; ".join(
        f"{name} in {', '.join(files)}" for name, files in twice.items()
    )


def test_the_check_finds_a_helper_defined_twice(tmp_path):
    (tmp_path / "test_a.py").write_text(
        "def invoke(*args):\n    pass\n\n\ndef test_a():\n    pass\n"
    )
    (tmp_path / "test_b.py").write_text(
        "import pytest\n\n\n@pytest.fixture\ndef invoke():\n    pass\n"
    )
    (tmp_path / "conftest.py").write_text("def pytest_configure(config):\n    pass\n")
    assert defined_twice(tmp_path) == {"invoke": ["test_a.py", "test_b.py"]}


def cli_runner_uses(folder: Path, helper: str = "conftest.py") -> list[str]:
    """'file:line' for each use of click's CliRunner in folder's *.py but `helper` (the module of
    conftest.invoke): an import from click.testing (or of it), the name CliRunner, an attribute
    of that name."""
    found = []
    for path in sorted(folder.glob("*.py")):
        if path.name == helper:
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if (
                (
                    isinstance(node, ast.Import)
                    and any(a.name == "click.testing" for a in node.names)
                )
                or (isinstance(node, ast.ImportFrom) and node.module == "click.testing")
                or (
                    isinstance(node, ast.ImportFrom)
                    and node.module == "click"
                    and any(a.name == "testing" for a in node.names)
                )
                or (isinstance(node, ast.Name) and node.id == "CliRunner")
                or (isinstance(node, ast.Attribute) and node.attr == "CliRunner")
            ):
                found.append(f"{path.name}:{node.lineno}")
    return found


def test_the_command_line_runs_in_process_through_conftest_invoke_alone():
    uses = cli_runner_uses(TESTS)
    assert not uses, "run the command line through conftest.invoke, not CliRunner: " + ", ".join(
        uses
    )


def test_the_check_finds_each_use_of_cli_runner(tmp_path):
    (tmp_path / "conftest.py").write_text("from click.testing import CliRunner\n")
    (tmp_path / "test_a.py").write_text(
        "import click\n\n\ndef test_a():\n    click.testing.CliRunner().invoke(None, [])\n"
    )
    (tmp_path / "test_b.py").write_text(
        "from click import testing\nfrom click.testing import CliRunner as R\n"
        "import click.testing\n\n\ndef test_b():\n    assert 'CliRunner' in 'a CliRunner'\n"
    )
    (tmp_path / "test_c.py").write_text("def test_c(CliRunner):\n    CliRunner()\n")
    assert cli_runner_uses(tmp_path) == [
        "test_a.py:5",
        "test_b.py:1",
        "test_b.py:2",
        "test_b.py:3",
        "test_c.py:2",
    ]


def test_the_fuzz_run_is_in_the_default_selection():
    """`make test` (and .ci/run, which calls it) runs every test: no default option deselects the
    `fuzz` marker, which is registered so that `-m "not fuzz"` can leave the long run out."""
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert any(m.startswith("fuzz:") for m in options["markers"])
    assert "fuzz" not in str(options.get("addopts", ""))
    for path in (ROOT / "Makefile", ROOT / ".ci" / "run"):
        assert "not fuzz" not in path.read_text(), path
