"""The layout's one rule (docs/layout.md): faces import inward only.

The faces (cli, site, reporters, pytest_plugin) may import anything; nothing
inward (the engine, the analysis, the record store, check, calibrate, repeat,
the registries) imports a face. Read from the source with ast: nothing is
imported or run.
"""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "leakbench"
FACES = ("leakbench.cli", "leakbench.__main__", "leakbench.site", "leakbench.reporters", "leakbench.pytest_plugin")


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def module(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)


def test_nothing_inward_imports_a_face():
    inward = [p for p in PACKAGE.rglob("*.py") if not module(p).startswith(FACES)]
    wrong = {module(p): sorted(i for i in imports(p) if i.startswith(FACES)) for p in inward}
    assert {m: i for m, i in wrong.items() if i} == {}


def test_no_module_is_much_over_300_lines():
    sizes = {module(p): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert {m: n for m, n in sizes.items() if n > 320} == {}
