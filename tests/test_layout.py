"""The layout's rules (docs/layout.md): every import goes down a rank, and no module is long.

Each package, and each module directly under leakbench/, has a rank (RANKS). A module may
import its own package and anything of a lower rank, never anything of its own rank or above:
the child side of the engine imports no analysis, the analysis no orchestration, and nothing
inward imports a face. The base modules (rank 0) are one layer: they import one another. No
module imports itself back through others (no import circle). Imports inside functions count
too. Read from the source with ast: nothing is imported or run.
"""

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "leakbench"

BASE = (
    "leakbench",
    "leakbench.units",
    "leakbench.metrics",
    "leakbench.bars",
    "leakbench.metric_type",
    "leakbench.series",
    "leakbench.contract",
    "leakbench.contract_rules",
    "leakbench.scenario_source",
    "leakbench.catalog",
    "leakbench.expectation",
    "leakbench.jsonfile",
    "leakbench.version",
)
RANKS = {
    **dict.fromkeys(BASE, 0),  # the registries and rules every layer reads
    "leakbench.engine": 1,  # the child side: one child run, and what runs in the child
    "leakbench.analysis": 2,  # series into slopes, a verdict, a record
    "leakbench.settings": 2,  # a measurement's settings and their rules (on the engine)
    # one variant: child runs (engine) into its record (analysis)
    "leakbench.measure": 3,
    "leakbench.online": 3,  # samples in the user's process (engine probes) judged (analysis)
    "leakbench.history": 4,  # the record store, and sweeps and bisect over releases
    "leakbench.check": 5,  # the commands' own work, on measure and the store
    "leakbench.calibrate": 5,
    "leakbench.repeat": 5,
    "leakbench.reporters": 6,  # views: text and markdown
    "leakbench.publish": 7,  # the published dataset: records, then every view of them
    "leakbench.site": 8,  # the site: the reporters' tables, asv's pages of the published results
    "leakbench.cli": 9,  # the faces
    "leakbench.pytest_settings": 9,  # the pytest plugin's keywords, options and defaults
    "leakbench.pytest_plugin": 10,  # its hooks, marker and assert_no_leak (on pytest_settings)
    "leakbench.watch": 9,  # the online watcher in the user's own process (on leakbench.online)
    "leakbench.keras": 10,  # its Keras callback
    "leakbench.__main__": 10,  # python -m leakbench: the CLI
}
FACES = (
    "leakbench.cli",
    "leakbench.__main__",
    "leakbench.site",
    "leakbench.publish",
    "leakbench.reporters",
    "leakbench.pytest_plugin",
    "leakbench.pytest_settings",
    "leakbench.watch",
    "leakbench.keras",
)


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
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit(name: str) -> str | None:
    """The entry of RANKS a module or imported name belongs to (None: not leakbench's, or unranked).
    `from leakbench import catalog` names both leakbench and leakbench.catalog: each is checked."""
    if name == "leakbench":
        return name
    return next(
        (
            key
            for key in RANKS
            if key != "leakbench" and (name == key or name.startswith(key + "."))
        ),
        None,
    )


def modules() -> dict[str, set[str]]:
    """Every module of the package, with the leakbench names it imports."""
    return {
        module(p): {i for i in imports(p) if i == "leakbench" or i.startswith("leakbench.")}
        for p in PACKAGE.rglob("*.py")
    }


def test_every_module_has_a_rank():
    assert sorted(m for m in modules() if unit(m) is None) == []


def test_every_import_goes_down_a_rank():
    wrong = {}
    for name, found in modules().items():
        own = unit(name)
        up = sorted(
            i
            for i in found
            if unit(i) != own
            and not (RANKS[unit(i)] < RANKS[own] or RANKS[unit(i)] == RANKS[own] == 0)
        )
        if up:
            wrong[name] = up
    assert wrong == {}


def test_no_module_imports_itself_back_through_others():
    """No import circle anywhere in the package, late imports included: each imported name is
    taken to the module that holds it (the longest known module prefix of it)."""
    found = modules()

    def holder(name: str) -> str | None:
        parts = name.split(".")
        while parts and ".".join(parts) not in found:
            parts.pop()
        return ".".join(parts) or None

    # a package's own __init__ is not an edge: importing leakbench.x.y loads leakbench.x first
    graph = {
        m: {h for i in names if (h := holder(i)) not in (None, m) and not m.startswith(h + ".")}
        for m, names in found.items()
    }
    done, path = set(), []

    def visit(m):
        assert m not in path, f"import circle: {' -> '.join(path[path.index(m) :] + [m])}"
        if m not in done:
            path.append(m)
            for n in sorted(graph.get(m, ())):
                visit(n)
            path.pop()
            done.add(m)

    for m in sorted(graph):
        visit(m)


def test_nothing_inward_imports_a_face():
    inward = {m: found for m, found in modules().items() if not m.startswith(FACES)}
    wrong = {m: sorted(i for i in found if i.startswith(FACES)) for m, found in inward.items()}
    assert {m: i for m, i in wrong.items() if i} == {}


MODULE_LINES_MAX = 320  # a module one reads whole (ruff format's layout)
FUNCTION_LINES_MAX = 80  # a function one reads on a screen, its docstring included


def functions() -> dict[str, int]:
    """ "module:name" -> lines (end_lineno - lineno + 1) of every function and method, nested
    ones too (the longest where a module has two of one name)."""
    found: dict[str, int] = {}
    for p in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                key, n = f"{module(p)}:{node.name}", node.end_lineno - node.lineno + 1
                found[key] = max(n, found.get(key, 0))
    return found


def test_no_module_is_over_320_lines():
    """Every module fits MODULE_LINES_MAX but those WAITING, and each of those is still over (the
    list only shrinks: a module brought under comes off it)."""
    WAITING: set[str] = set()
    sizes = {module(p): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    over = {m for m, n in sizes.items() if n > MODULE_LINES_MAX}
    assert {m: sizes[m] for m in sorted(over - WAITING)} == {}
    assert sorted(WAITING - over) == [], "no longer over MODULE_LINES_MAX: take it off WAITING"


def test_no_function_is_over_80_lines():
    """Every function fits FUNCTION_LINES_MAX but those WAITING, and each of those is still over
    (the list only shrinks: a function brought under comes off it)."""
    WAITING: set[str] = set()
    sizes = functions()
    over = {f for f, n in sizes.items() if n > FUNCTION_LINES_MAX}
    assert {f: sizes[f] for f in sorted(over - WAITING)} == {}
    assert sorted(WAITING - over) == [], "no longer over FUNCTION_LINES_MAX: take it off WAITING"


def test_every_pointer_to_the_measurements_names_one_of_its_sections():
    """Code cites a measured figure by section (docs/measurements.md, "Held memory") instead of
    copying it: each section a comment or docstring names exists, a wrapped line included."""
    docs = PACKAGE.parent / "docs" / "measurements.md"
    sections = {line[3:].strip() for line in docs.read_text().splitlines() if line[:3] == "## "}
    files = [*PACKAGE.rglob("*.py"), *(PACKAGE.parent / "benchmarks").rglob("*.py")]
    cited = {
        (module(p) if PACKAGE in p.parents else p.name, name)
        for p in files
        for name in re.findall(
            r'measurements\.md, "([^"]+)"', re.sub(r"\s*\n\s*#?\s*", " ", p.read_text())
        )
    }
    assert len(cited) > 10, "the scan finds the pointers"
    assert sorted(c for c in cited if c[1] not in sections) == []


# The layers that show one command: its face (cli/), its views (reporters/, site/)
VIEW_LAYERS = ("leakbench.cli", "leakbench.reporters", "leakbench.site")


def test_a_module_name_repeats_only_as_one_commands_faces_in_the_layers():
    """Two domain modules never share a name (three run.py held three different things): a name may
    repeat only across the view layers, beside at most one module elsewhere (cli/gate.py,
    reporters/gate.py and history/gate.py are one command)."""
    by_name: dict[str, list[str]] = {}
    for p in PACKAGE.rglob("*.py"):
        if p.name != "__init__.py":
            by_name.setdefault(p.stem, []).append(module(p))
    clashes = {
        name: sorted(found)
        for name, found in by_name.items()
        if len([m for m in found if not m.startswith(VIEW_LAYERS)]) > 1
    }
    assert clashes == {}
