"""scripts/check-vs-peer's tables from fake runs (nothing measured, no process started), and the
scenario file it writes per case against the contract (read, never run)."""

from __future__ import annotations

import importlib.util
from importlib.machinery import SourceFileLoader
from pathlib import Path

from leakbench.calibrate.shape_library import DESIGNS, params_for
from leakbench.contract import read_metadata

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "check-vs-peer"
KIB = 1 << 10


def load_script():
    """The script as a module (it has no .py suffix, so a loader is named for it)."""
    loader = SourceFileLoader("check_vs_peer", str(SCRIPT))
    spec = importlib.util.spec_from_loader("check_vs_peer", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def a_run(verdict: str | None, wall: float, status: str = "ok", looks: tuple = ()) -> dict:
    return {"status": status, "verdict": verdict, "wall_seconds": wall, "looks": list(looks)}


def case(name: str, leaks: bool, leakbench: list[dict], limit_leaks: list[dict]) -> dict:
    return {
        "design": name,
        "holder": name.split("-")[0],
        "shape": "steady" if leaks else "bounded cache",
        "bytes_per_rep": 64 * KIB,
        "params": {"bytes_per_rep": 64 * KIB},
        "leaks": leaks,
        "runs": {"leakbench": leakbench, "limit_leaks": limit_leaks},
    }


def fake_result() -> dict:
    return {
        "machine": "vm-test-2c",
        "cpu": "Test CPU, 2 cores",
        "tensorflow": "2.21.0",
        "pytest_memray": "1.11.0",
        "engine": "leakbench 0.4.0 (engine 000000000000)",
        "load_average": [1.0, 0.5, 0.25],
        "load_average_end": [2.0, 1.0, 0.5],
        "limit_leaks": "64 KB",
        "settings": {
            "warmup": 3,
            "reps": 12,
            "heap_reps": 6,
            "cap": "2GiB",
            "timeout_seconds": 300.0,
            "outer_timeout_seconds": 3600.0,
            "rounds": 3,
        },
        "cases": [
            # both right every round
            case(
                "python",
                True,
                [
                    a_run("leak", 10.0, looks=("confirmation",)),
                    a_run("leak", 12.0),
                    a_run("leak", 14.0),
                ],
                [a_run("leak", 5.0), a_run("leak", 6.0), a_run("leak", 7.0)],
            ),
            # limit_leaks calls a bounded cache a leak; leakbench hangs once
            case(
                "tensorflow-cache6",
                False,
                [a_run("no-leak", 20.0), a_run(None, 300.0, "timeout"), a_run("no-leak", 22.0)],
                [a_run("leak", 8.0), a_run("leak", 9.0), a_run("hang", 300.0, "hang")],
            ),
        ],
    }


def test_a_verdict_is_right_only_where_it_decides_as_the_design_leaks():
    m = load_script()
    assert m.right("leak", True) and m.right("no-leak", False) and m.right("fragmentation", False)
    assert not m.right("leak", False) and not m.right("no-leak", True)
    for other in ("hang", "over-cap", "error", None):
        assert not m.right(other, True) and not m.right(other, False)


def test_totals_count_right_runs_and_cases_and_sum_the_wall():
    t = load_script().totals(fake_result()["cases"])
    a, b = t["leakbench"], t["limit_leaks"]
    assert (a["runs_right"], a["runs"], a["cases_right"], a["cases"]) == (5, 6, 1, 2)
    assert (b["runs_right"], b["runs"], b["cases_right"], b["cases"]) == (3, 6, 1, 2)
    assert a["wall_seconds"] == 378.0 and b["wall_seconds"] == 335.0
    # medians per case: leakbench 12 and 22, limit_leaks 6 and 9
    assert a["median_case_seconds"] == 17.0 and b["median_case_seconds"] == 7.5
    assert a["median_case_seconds_by_holder"] == {"python": 12.0, "tensorflow": 22.0}
    assert (a["looked_again"], b["looked_again"]) == (1, 0)
    assert t["ratio"] == 378.0 / 335.0


def test_markdown_has_the_header_a_row_per_case_and_the_totals():
    text = load_script().markdown(fake_result())
    for part in (
        "vm-test-2c (Test CPU, 2 cores)",
        "TensorFlow 2.21.0",
        "leakbench 0.4.0 (engine 000000000000)",
        "at start: 1.00, 0.50, 0.25; at the end: 2.00, 1.00, 0.50",
        "limit_leaks('64 KB')",
        "warm-up 3, 12 measured repetitions, cap 2GiB, timeout 300 s",
    ):
        assert part in text, part
    rows = [ln for ln in text.splitlines() if ln.startswith(("| python", "| tensorflow"))]
    assert rows == [
        "| python | python | steady | 64 KiB | leak | leak ×3 (right) | 12.0 [10.0–14.0] "
        "| leak ×3 (right) | 6.0 [5.0–7.0] |",
        "| tensorflow-cache6 | tensorflow | bounded cache | 64 KiB | no-leak "
        "| no-leak ×2, timeout ×1 (2/3 right) | 22.0 [20.0–300.0] "
        "| leak ×2, hang ×1 (wrong) | 9.0 [8.0–300.0] |",
    ]
    assert "| cases right in every round | 1/2 | 1/2 |" in text
    assert "| runs right | 5/6 | 3/6 |" in text
    assert "| total wall (s) | 378.0 | 335.0 |" in text
    assert "| median per case (s) | 17.0 | 7.5 |" in text
    assert "| median per case, python holder (s) | 12.0 | 6.0 |" in text
    assert "| median per case, tensorflow holder (s) | 22.0 | 9.0 |" in text
    assert "| runs measured again (a confirmation or extension child) | 1/6 | - |" in text
    assert "Total wall, leakbench / limit_leaks: 1.13." in text


def test_the_wrapper_is_a_scenario_of_the_case(tmp_path):
    m = load_script()
    for name in m.CASES:
        params = params_for(DESIGNS[name], 16 * KIB)
        scenario = read_metadata(m.wrapper(tmp_path, name, params))
        design = read_metadata(DESIGNS[name].path)
        assert scenario.params == params
        assert (scenario.kind, scenario.size_param, scenario.env) == (
            design.kind,
            design.size_param,
            design.env,
        )
