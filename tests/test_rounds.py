"""leakbench.history.rounds, the loop repeat and calibrate share, with stub runs (no process
started): the round-robin order, observations already kept are skipped, the file is written
after every observation, and a file made otherwise is refused before anything runs."""

from __future__ import annotations

import json

import pytest

from leakbench.history import rounds


class Refused(ValueError):
    pass


def test_plan_goes_run_by_run_and_a_cell_with_fewer_runs_drops_out():
    assert rounds.plan([("a", 2), ("b", 3), ("c", 1)]) == [
        (1, "a"),
        (1, "b"),
        (1, "c"),
        (2, "a"),
        (2, "b"),
        (3, "b"),
    ]
    assert rounds.plan([]) == []


@pytest.mark.parametrize("jobs", [1, 2])
def test_measures_only_what_is_missing_and_writes_after_each(tmp_path, jobs):
    out = tmp_path / "r.json"
    result = rounds.open_result(out, {"machine": "m"}, 1, "repeat", "a test result", Refused)
    result["observations"].append({"cell": "a", "run": 1})
    written, told = [], []

    def finish(result: dict) -> dict:
        written.append(len(result["observations"]))
        return result

    def keep(run: int, cell: str, measured: str) -> dict:
        seen = {"cell": cell, "run": run, "measured": measured}
        result["observations"].append(seen)
        return seen

    rounds.measure_rounds(
        out,
        result,
        [("a", 2), ("b", 2)],
        key=lambda run, cell: (cell, run),
        done=lambda result: {(o["cell"], o["run"]) for o in result["observations"]},
        run_one=lambda run, cell: f"{cell}{run}",
        keep=keep,
        finish=finish,
        jobs=jobs,
        on_run=lambda i, total, run, cell, seen: told.append((i, total, seen["measured"])),
    )
    measured = [o.get("measured") for o in json.loads(out.read_text())["observations"]]
    assert measured[0] is None and sorted(measured[1:]) == ["a2", "b1", "b2"]
    assert written == [2, 3, 4, 4]  # after each observation, and once at the end
    assert [(i, total) for i, total, _ in told] == [(1, 3), (2, 3), (3, 3)]
    if jobs == 1:  # in order: run 1 of every cell, then run 2
        assert [m for _, _, m in told] == ["b1", "a2", "b2"]


def test_a_file_made_otherwise_is_refused_and_kept(tmp_path):
    out = tmp_path / "r.json"
    rounds.measure_rounds(
        out,
        rounds.open_result(out, {"machine": "m"}, 1, "repeat", "a test result", Refused),
        [],
        key=lambda run, cell: (cell, run),
        done=lambda result: set(),
        run_one=lambda run, cell: None,
        keep=lambda run, cell, measured: {},
        finish=lambda result: result,
    )
    before = out.read_bytes()
    with pytest.raises(Refused, match="machine m there, n here"):
        rounds.open_result(out, {"machine": "n"}, 1, "repeat", "a test result", Refused)
    assert out.read_bytes() == before
    fresh = rounds.open_result(
        out, {"machine": "n"}, 1, "repeat", "a test result", Refused, resume=False, started="now"
    )
    assert list(fresh) == ["format", "machine", "environment", "started", "observations"]


def test_a_kept_run_that_does_not_read_as_done_is_an_error(tmp_path):
    """key and done spelling one run two ways: a resume would measure it again. Caught at the
    first observation, not on a resume."""
    out = tmp_path / "r.json"
    result = rounds.open_result(out, {"machine": "m"}, 1, "repeat", "a test result", Refused)

    def keep(run: int, cell: str, measured: str) -> dict:
        seen = {"cell": cell, "run": run}
        result["observations"].append(seen)
        return seen

    with pytest.raises(RuntimeError, match="does not read as done"):
        rounds.measure_rounds(
            out,
            result,
            [("a", 1)],
            key=lambda run, cell: (cell, run),
            done=lambda result: {(o["run"], o["cell"]) for o in result["observations"]},
            run_one=lambda run, cell: "measured",
            keep=keep,
            finish=lambda result: result,
        )
