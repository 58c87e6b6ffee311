"""leakbench calibrate's statistics on synthetic observations (no process started),
and its designed-leak files against the contract. The command itself, killed and
resumed, is in test_interrupts.py."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from leakbench import contract
from leakbench.calibrate import run as calibrate
from leakbench.analysis import verdict

KIB = 1 << 10


def trend(slope: float, p: float = 0.0001, halves: tuple = (None, None)) -> dict:
    first, second = (slope if h is None else h for h in halves)
    return {"slope": slope, "low": slope, "high": slope, "p_increasing": p, "first_half": first,
            "second_half": second, "unit": "bytes/repetition"}


def rec(rss: dict | None, heap: dict | None, verdict_: str = "no-leak", peak: int = 500 << 20) -> dict:
    return {"metrics": {"rss_growth": rss, "retained_heap": heap}, "runs": [
        {"seconds": {"import": 3.0, "setup": 0.1, "warm-up": 0.3, "repetitions": 2.4, "heap": 1.8},
         "high_water_mark_bytes": peak, "max_rss_bytes": peak, "heap": {"heap_source": "snapshots"}}],
        "verdict": verdict_, "signals": [], "phase": None, "error": None, "seconds": 9.0,
        "environment": {"tensorflow": "2.21.0"}}


def observations() -> list[dict]:
    found = []
    for run, noise in enumerate((0.9, 1.0, 1.1), 1):
        found.append(calibrate.observe(rec(trend(0.0, p=1.0), trend(700.0, p=0.004)),
                                       calibrate.Case("tensorflow", 0), run))
        found.append(calibrate.observe(rec(trend(noise * 1024 * KIB), trend(noise * 2 * KIB), "leak",
                                           peak=(500 << 20) + (60 << 20)),
                                       calibrate.Case("tensorflow", 1024 * KIB), run))
    return found


def test_summary_counts_detections_bias_and_cv():
    rows = {r["bytes_per_rep"]: r for r in calibrate.summarize(observations())}
    control, leak = rows[0], rows[1024 * KIB]
    assert control["rss"]["detected"]["k"] == 0 and control["heap"]["detected"]["k"] == 0
    assert control["heap"]["trend_only"]["k"] == 3  # rising, below the 64 KiB bar: not an alarm
    assert leak["rss"]["detected"] == pytest.approx(
        {"k": 3, "n": 3, "rate": 1.0, "low": 0.4385, "high": 1.0}, abs=1e-3)  # Wilson, 95 %
    assert leak["heap"]["detected"]["k"] == 0  # 2 KiB/rep seen, under HEAP_SLOPE_MIN
    assert leak["rss"]["slope"]["relative_bias"] == pytest.approx(0.0, abs=1e-9)
    assert leak["rss"]["slope"]["cv"] == pytest.approx(0.1)  # std(0.9, 1.0, 1.1) / 1.0
    assert leak["heap"]["slope"]["relative_bias"] == pytest.approx(2 / 1024 - 1)
    assert leak["asv_peakmem"]["detected"]["k"] == 3  # 560 MiB > 1.1 × 500 MiB
    assert control["asv_peakmem"]["detected"]["k"] == 0


def test_reach_is_the_largest_threshold_that_still_moves():
    t = trend(100 * KIB, halves=(30 * KIB, 120 * KIB))
    reach = calibrate._reach(t)
    assert reach == 30 * KIB  # the smaller half: verdict.rate
    assert verdict.moved(t, reach) and not verdict.moved(t, reach + 1)
    assert calibrate._reach(trend(100 * KIB, p=0.5)) is None


def test_noise_floor_from_controls_and_committed_fixes(tmp_path):
    folder = tmp_path / "records" / "vm"
    folder.mkdir(parents=True)
    fixed = {"variant": "fixed", "pair": "p", "verdict": "no-leak", "signals": [],
             "metrics": {"rss_growth": trend(200 * KIB), "retained_heap": trend(6 * KIB)}}
    (folder / "tf-2.21.0.jsonl").write_text(json.dumps(fixed) + "\n")
    floor = calibrate.noise_floor(observations(), tmp_path / "records")
    assert floor["rss"]["floor"] == 200 * KIB and floor["rss"]["set_by"] == "p fixed, vm/tf-2.21.0"
    assert floor["heap"]["floor"] == 6 * KIB


def test_targets_say_what_is_not_met():
    rows = calibrate.summarize(observations())
    found = {t["target"]: t for t in calibrate.targets(rows, {}, {"wall_over_floor": 2.0})}
    assert found["tensorflow: no false alarm on the control"]["met"] is True
    assert found["tensorflow: 64 KiB/rep caught 10/10 by held memory"]["met"] is None  # not measured
    assert found["suite <= 1.5x its floor"]["met"] is False


def test_markdown_has_a_row_per_case():
    result = {"machine": "m", "environment": {"tensorflow": "2.21.0"},
              "settings": {"warmup": 3, "reps": 12, "heap_reps": 6}, "summary": calibrate.summarize(observations()),
              "peer_summary": [], "cost": {}, "targets": []}
    text = calibrate.markdown(result)
    assert "| tensorflow | 0 (control) | 3/3 |" in text and "| tensorflow | 1 MiB | 3/3 |" in text
    # every table's header has as many columns as its rows (no peer ran here)
    for table in text.split("\n\n"):
        rows = [line for line in table.splitlines() if line.startswith("|")]
        assert len({row.count("|") for row in rows}) <= 1, rows[:3]


@pytest.mark.parametrize("holder", sorted(calibrate.HOLDERS))
def test_designed_leak_files_follow_the_contract(holder):
    scenario = contract.read_metadata(calibrate.HOLDERS[holder])
    assert scenario.kind == "growth" and scenario.size_param == "bytes_per_rep"


@pytest.mark.parametrize("args, fragment", [
    (["--holders", "perl"], "--holders: unknown perl"),
    (["--peers", "valgrind"], "--peers: unknown valgrind"),
    (["--sizes", "0,lots"], "--sizes/--cap"),
])
def test_bad_input_is_one_line_and_runs_nothing(args, fragment, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from leakbench import cli

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli.main, ["calibrate", *args, "--out", str(tmp_path / "c.json")])
    assert result.exit_code == 2 and fragment in result.stderr, result.stderr
    assert not (tmp_path / "c.json").exists()


@pytest.mark.timeout(120)
def test_a_peer_runs_in_its_own_capped_process():
    """pytest-memray's limit_leaks on a designed 1 MiB/repetition Python leak, end to
    end (its own fresh process, a cap and a timeout): it flags it (about 1 s here)."""
    import leakbench
    from leakbench.calibrate import peers

    path = Path(leakbench.__file__).parent / "calibrate" / "designs" / "python_held.py"
    found = peers.run_peer("limit_leaks", path, {"bytes_per_rep": 1 << 20}, warmup=3, reps=12,
                           cap_bytes=1 << 30, timeout_seconds=60)
    assert found["status"] == "ok" and found["leak"] is True, found
    assert 0 < found["max_rss_bytes"] < 1 << 30
