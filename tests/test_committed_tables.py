"""The committed tables are exactly what `leakbench publish` writes from the committed records
today (leakbench.publish.views.tables: the same commands, run here into a copy): a change to a
verdict's wording or to a record shows here, not as a stale file. Read from results/ as
committed (git HEAD), never the working copy a `make run` may have added to."""

import json
import shutil
from pathlib import Path

import pytest
from conftest import invoke

from leakbench.history import store
from leakbench.publish import dataset, views

ROOT = Path(__file__).parent.parent


def _outputs(args: list[str]) -> list[str]:
    """The files (or the folder) one command writes: the values of --out and --junit."""
    return [args[i + 1] for i, a in enumerate(args) if a in ("--out", "--junit")]


def test_publish_writes_every_committed_table(committed_results):
    machine = store.published_machine(committed_results)
    commands = views.tables(committed_results, machine)
    written = [Path(p) for args in commands for p in _outputs(args)]
    assert len(commands) >= 6 and all(p.exists() for p in written), written


@pytest.mark.parametrize("index", range(7))
def test_a_committed_table_is_what_its_command_prints(
    index, committed_results, tmp_path, monkeypatch
):
    machine = store.published_machine(committed_results)
    commands = views.tables(committed_results, machine)
    if index >= len(commands):
        pytest.skip(f"publish writes {len(commands)} tables")
    copy = tmp_path / "results"
    shutil.copytree(committed_results, copy)
    args = [a.replace(str(committed_results), str(copy)) for a in commands[index]]
    monkeypatch.setenv("LEAKBENCH_ROOT", str(ROOT))
    done = invoke(*args)
    assert done.exit_code in (0, 1), done.output  # 1: a regression the gate or compare reports
    for out in _outputs(commands[index]):
        new = Path(out.replace(str(committed_results), str(copy)))
        old = Path(out)
        pairs = (
            [(n, new / n.relative_to(old)) for n in sorted(old.rglob("*.md"))]
            if old.is_dir()
            else [(old, new)]
        )
        for was, now in pairs:
            assert _content(now) == _content(was), f"regenerate: leakbench {' '.join(args)}"


def _content(path: Path):
    """A table's text; a JSON result without its top-level "seconds", the command's own wall
    time (gate's), which no two runs share and no record decides."""
    if path.suffix != ".json":
        return path.read_text()
    found = json.loads(path.read_text())
    found.pop("seconds", None)
    return found


def test_the_published_records_are_this_engines_of_these_scenario_files(committed_results):
    """The dataset a commit carries was made by the engine and the scenario files of that commit:
    an engine or scenario change lands with `leakbench publish`'s records, or this fails."""
    machine = store.published_machine(committed_results)
    done = {
        v: dataset.is_done(committed_results, machine, v, ROOT)
        for v in store.available(committed_results, machine)
    }
    assert done and all(done.values()), done
