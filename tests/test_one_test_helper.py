"""Test helpers defined once (issue 32): a helper or fixture two test modules need lives in
conftest.py; a helper of one module has a name no other module gives its own. And the long fuzz
run, marked `fuzz`, stays in the suite's default selection (make test, CI)."""

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


def test_the_fuzz_run_is_in_the_default_selection():
    """`make test` (and .ci/run, which calls it) runs every test: no default option deselects the
    `fuzz` marker, which is registered so that `-m "not fuzz"` can leave the long run out."""
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert any(m.startswith("fuzz:") for m in options["markers"])
    assert "fuzz" not in str(options.get("addopts", ""))
    for path in (ROOT / "Makefile", ROOT / ".ci" / "run"):
        assert "not fuzz" not in path.read_text(), path
