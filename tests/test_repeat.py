"""leakbench repeat: every variant measured N times through the real engine, without
TensorFlow (tests/data's python_leak.py and python_bounded.py, each run capped at
1 GiB and timed at 60 s), the JSON written after every run, resume, the refusal of
a file made with other settings, and the markdown of a synthetic summary.

Metric names are never written here: which growth signals decide is the engine's
table (leakbench.analysis.judge.verdict), read by leakbench.repeat.repeatability when it runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import psutil
import pytest
from conftest import held_decision, invoke, pair_checkout

from leakbench import expectation
from leakbench.analysis.judge import verdict
from leakbench.catalog import Target
from leakbench.contract import read_metadata
from leakbench.engine import children
from leakbench.repeat import repeatability as repeat
from leakbench.reporters import repeatability as repeat_report
from leakbench.settings import Settings
from leakbench.units import KIB, MIB

DATA = Path(__file__).parent / "data"
SETTINGS = Settings(
    warmup=1,
    reps=6,
    heap_reps=0,
    cap_bytes=1 << 30,
    timeout_seconds=60,
    teardown_timeout_seconds=10,
)
FAST = ["--cap", "1GiB", "--timeout", "60", "--warmup", "1", "--reps", "6", "--heap-reps", "0"]


def targets() -> list[Target]:
    return [
        Target(read_metadata(DATA / "python_leak.py"), "leaky"),
        Target(read_metadata(DATA / "python_bounded.py"), "fixed"),
    ]


@pytest.mark.timeout(120)
def test_runs_round_robin_writes_json_and_resumes(tmp_path):
    out = tmp_path / "r.json"
    result = repeat.repeat(targets(), 2, SETTINGS, out, jobs=2, machine="m")
    assert json.loads(out.read_text()) == json.loads(json.dumps(result))
    assert [(o["run"], o["pair"]) for o in result["observations"]] == [
        (1, "python_bounded"),
        (1, "python_leak"),
        (2, "python_bounded"),
        (2, "python_leak"),
    ]
    rows = {r["pair"]: r for r in result["summary"]["rows"]}
    leak, bounded = rows["python_leak"], rows["python_bounded"]
    assert (
        leak["verdicts"] == {"leak": 2}
        and leak["expected"] == "leak"
        and leak["agrees"]
        and leak["as_expected"]
    )
    assert bounded["verdicts"] == {"no-leak": 2} and bounded["agrees"] and bounded["as_expected"]
    # a slope per run for every decisive metric the engine named, 1 MiB/rep in one of its byte
    # signals held memory is measured here (glibc): it decides, not RSS
    decisive = set(verdict.GROWTH_SIGNALS)
    for o in result["observations"]:
        assert set(o["slopes"]) == decisive and o["cap_bytes"] == 1 << 30 and o["wall_seconds"] > 0
    bytes_ = [s for s in leak["slopes"].values() if s["unit"] and s["unit"].startswith("bytes")]
    assert any(s["n"] == 2 and 0.9 * MIB <= s["median"] <= 1.1 * MIB for s in bytes_), leak[
        "slopes"
    ]
    assert result["summary"]["agree"] == 2 and result["summary"]["runs"] == 4
    assert result["runs_requested"] == 2 and result["jobs"] == 2

    seen = []
    again = repeat.repeat(
        targets(),
        3,
        SETTINGS,
        out,
        jobs=2,
        machine="m",
        on_run=lambda i, total, o: seen.append((i, total, o["pair"], o["run"])),
    )
    assert sorted((pair, run, total) for _, total, pair, run in seen) == [
        ("python_bounded", 3, 2),
        ("python_leak", 3, 2),
    ]
    assert again["observations"][:4] == result["observations"]  # kept, not measured again
    assert again["summary"]["runs"] == 6 and again["runs_requested"] == 3
    assert again["elapsed_seconds"] > result["elapsed_seconds"]


@pytest.mark.timeout(120)
def test_a_file_made_with_other_settings_is_refused_and_kept(tmp_path):
    out = tmp_path / "r.json"
    repeat.repeat(targets()[:1], 1, SETTINGS, out, machine="m")
    before = out.read_bytes()
    for settings, jobs, machine, fragment in [
        (replace(SETTINGS, reps=7), 1, "m", "reps 6 there, 7 here"),
        (SETTINGS, 2, "m", "jobs 1 there, 2 here"),
        (SETTINGS, 1, "other", "machine m there, other here"),
    ]:
        with pytest.raises(repeat.RepeatError, match=fragment) as found:
            repeat.repeat(targets(), 2, settings, out, jobs=jobs, machine=machine)
        assert "\n" not in str(found.value) and out.read_bytes() == before
    out.write_text("{torn")
    with pytest.raises(repeat.RepeatError, match="cannot be read as JSON"):
        repeat.repeat(targets(), 1, SETTINGS, out, machine="m")
    assert out.read_text() == "{torn"
    # --fresh replaces
    fresh = repeat.repeat(targets()[1:], 1, SETTINGS, out, machine="m", resume=False)
    assert [o["pair"] for o in fresh["observations"]] == ["python_bounded"]


@pytest.mark.timeout(120)
def test_command_writes_json_and_table_by_default_and_refuses_bad_input(tmp_path, monkeypatch):
    monkeypatch.setenv("LEAKBENCH_ROOT", str(pair_checkout(tmp_path)))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").mkdir()
    found = invoke("repeat", "--runs", "1", "--jobs", "2", "--machine", "m", *FAST)
    assert found.exit_code == 0, (found.output, found.exception)
    (out,) = (tmp_path / "results" / "repeatability").glob("m-tf-*-jobs2.json")
    table = out.with_suffix(".md").read_text()
    assert table in found.stdout
    # each row says what its verdict rests on: the leak's 1 MiB a repetition in held memory
    assert "| pyleak | leaky | leak | leak 1/1 | held +1,024 KiB/rep | yes | yes |" in table
    assert re.search(
        r"\| pyleak \| fixed \| no-leak \| no-leak 1/1 \| held [-+]\d KiB/rep \|", table
    )
    before = out.read_bytes()
    for args, fragment in [
        (["--reps", "7"], "other settings (reps 6 there, 7 here)"),
        (["--out", str(tmp_path / "r.md")], "--out"),
        (["--scales", "1,0"], "--scales"),
    ]:
        found = invoke("repeat", "--runs", "2", "--jobs", "2", "--machine", "m", *FAST, *args)
        assert found.exit_code == 2 and found.stdout == "", found.output
        assert len(found.stderr.splitlines()) == 1 and fragment in found.stderr, found.stderr
    assert out.read_bytes() == before


@pytest.mark.timeout(120)
@pytest.mark.parametrize("jobs", [1, 2])
def test_ctrl_c_stops_every_child_and_records_nothing_more(tmp_path, jobs):
    """`jobs` children at once (one: measured in the command's own thread; two: in a pool), each
    hanging for an hour: SIGINT ends the command at once (not after the 60 s timeout), its
    children gone, the file as it was."""
    root = tmp_path / "root"
    for sub in ("scenarios", "fixes"):
        (root / sub).mkdir(parents=True)
        shutil.copy(DATA / "python_hang.py", root / sub / "hang.py")
    out = tmp_path / "r.json"
    leakbench = Path(sys.executable).with_name("leakbench")
    cli_ = subprocess.Popen(
        [str(leakbench), "repeat", "--runs", "1", "--jobs", str(jobs), "--out", str(out), *FAST],
        cwd=tmp_path,
        env={**os.environ, "LEAKBENCH_ROOT": str(root)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 60  # a safety net: the command starts in seconds
        while len(children.measured_children(cli_.pid)) < jobs and time.monotonic() < deadline:
            assert cli_.poll() is None, cli_.communicate()
            time.sleep(0.1)
        measured = children.measured_children(cli_.pid)
        assert len(measured) == jobs
        time.sleep(1)  # both in their repetitions
        start = time.monotonic()
        cli_.send_signal(signal.SIGINT)
        cli_.communicate(timeout=20)
    finally:
        if cli_.poll() is None:
            cli_.kill()
            cli_.wait()
    assert cli_.returncode == 130 and time.monotonic() - start < 10
    _, alive = psutil.wait_procs(measured, timeout=5)
    assert not alive
    assert not out.exists()  # nothing finished: nothing recorded


def observation(
    pair, variant, run, verdict_, slope, count=0.0, exponent=None, expected="leak", ok=True
):
    """One run as repeat.observe keeps it; `slope` is the held rate, and the whole series' slope is
    three times it (a step), so the summary's figures show it spreads the rate."""
    whole = slope and 3 * slope
    return {
        "pair": pair,
        "variant": variant,
        "run": run,
        "verdict": verdict_,
        "signals": [],
        "expected": expected,
        "expected_ok": ok,
        "tensorflow": "2.21.0",
        "cap_bytes": 1 << 30,
        "wall_seconds": 10.0,
        "slopes": {
            "bytes_metric": {
                "signal": "held",
                "slope": whole,
                "rate": slope,
                "unit": "bytes/repetition",
                "moved": False,
            },
            "count_metric": {
                "signal": "threads",
                "slope": count,
                "rate": count,
                "unit": "threads/repetition",
                "moved": False,
            },
            "absent_metric": {
                "signal": "gpu",
                "slope": None,
                "rate": None,
                "unit": None,
                "moved": False,
            },
        },
        "decision": held_decision(verdict_, slope) if slope is not None else None,
        "peak_exponent": exponent,
        "confirmation_seconds": 4.0 if run == 1 else None,
        "phase": None,
        "error": None,
    }


def synthetic() -> dict:
    found = []
    for run, noise in enumerate((0.9, 1.0, 1.1), 1):
        found.append(
            observation(
                "a", "leaky", run, "leak", noise * 1024 * KIB, count=4.0 * noise, exponent=0.8
            )
        )
        found.append(
            observation(
                "a",
                "fixed",
                run,
                "leak" if run == 2 else "no-leak",
                2 * KIB * run,
                exponent=0.05,
                expected="no-leak",
                ok=run != 2,
            )
        )
        found.append(
            observation("gpu", "leaky", run, "skipped" if run < 3 else "leak", None, count=None)
        )
    summary = repeat.summarize(found)
    return {
        "machine": "vm",
        "jobs": 2,
        "tensorflow": "2.21.0",
        "runs_requested": 3,
        "updated": "2026-12-01T10:00:00",
        "elapsed_seconds": 50.0,
        "summary": summary,
        "settings": {
            "warmup": 3,
            "reps": 12,
            "heap_reps": 6,
            "cap_bytes": 0,
            "timeout_seconds": 300.0,
            "scales": [1, 2, 4],
            "teardown_timeout_seconds": 30.0,
        },
    }


def test_summary_counts_agreement_and_spread():
    rows = {(r["pair"], r["variant"]): r for r in synthetic()["summary"]["rows"]}
    leaky, fixed, gpu = rows["a", "leaky"], rows["a", "fixed"], rows["gpu", "leaky"]
    assert leaky["verdicts"] == {"leak": 3} and leaky["agrees"] and leaky["as_expected"]
    assert (
        fixed["verdicts"] == {"no-leak": 2, "leak": 1}
        and not fixed["agrees"]
        and not fixed["as_expected"]
    )
    assert gpu["agrees"]  # skipped counts as agreeing
    spread = leaky["slopes"]["bytes_metric"]
    assert spread["median"] == pytest.approx(MIB) and spread["min"] == pytest.approx(0.9 * MIB)
    assert spread["cv"] == pytest.approx(0.1)  # std(0.9, 1.0, 1.1) / 1.0, ddof 1
    assert leaky["peak_exponent"]["median"] == pytest.approx(0.8)
    assert gpu["slopes"]["bytes_metric"]["n"] == 0 and gpu["slopes"]["bytes_metric"]["cv"] is None
    assert leaky["confirmation_seconds"] == 4.0
    # the number each verdict rests on: the middle run's decision, and the range
    (middle,) = leaky["decided"]
    assert middle["runs"] == 3 and middle["median"]["value"] == pytest.approx(MIB)
    assert (middle["min"], middle["max"]) == pytest.approx((0.9 * MIB, 1.1 * MIB))
    assert [(e["median"]["verdict"], e["runs"]) for e in fixed["decided"]] == [
        ("no-leak", 2),
        ("leak", 1),
    ]
    assert gpu["decided"] == []  # no run kept a decision: nothing to show


def test_markdown_of_a_synthetic_summary():
    text = repeat_report.markdown(synthetic())
    assert (
        "## Repeatability: vm, TensorFlow 2.21.0" in text
        and "2 children at a time; 2026-12-01" in text
    )
    assert "3 runs per variant" in text and "cap default (1 GiB)" in text
    assert (
        "| a | leaky | leak | leak 3/3 | held +1,024 KiB/rep (+922 KiB/rep to +1,126 KiB/rep) "
        "| yes | yes | 1,024 (922–1,126) | 4.0 (3.6–4.4) | 0.80 (0.80–0.80) |" in text
    )
    assert (
        "| a | fixed | no-leak | no-leak 2, leak 1 | no-leak · held +2 KiB/rep (+2 KiB/rep to "
        "+6 KiB/rep), 2 runs; leak · held +4 KiB/rep, 1 run | NO | NO | 4.0 (2.0–6.0) | "
        "0.0 (0.0–0.0) |" in text
    )
    assert "| gpu | leaky | leak | skipped 2, leak 1 | — | yes | yes | — | — | — |" in text
    header = next(line for line in text.splitlines() if line.startswith("| pair"))
    assert "held KiB/rep" in header and "threads/rep" in header and "peak ∝ size^k" in header
    assert "gpu" not in header  # a metric never measured gets no column
    assert (
        "2 of 3 variants agree over all runs; 2 of 3 gave an expected verdict in every run. 9 runs"
        in text
    )
    rows = [line for line in text.splitlines() if line.startswith("|")]
    assert len({row.count("|") for row in rows}) == 1


def test_decisive_metrics_come_from_the_engine(monkeypatch):
    monkeypatch.setattr(verdict, "GROWTH_SIGNALS", {"new_growth": ("new", 5.0)})
    trend = {
        "slope": 12.0,
        "p_increasing": 0.0001,
        "first_half": 10.0,
        "second_half": 11.0,
        "unit": "things/repetition",
    }
    rec = {
        "pair": "p",
        "variant": "leaky",
        "verdict": "leak",
        "signals": ["new"],
        "phase": None,
        "error": None,
        # held memory measured: it decides, so the engine's GROWTH_SIGNALS are the decisive ones
        "metrics": {"new_growth": trend, "held_growth": trend, "malloc_heap_unavailable": None},
        "environment": {"tensorflow": None},
        "settings": {"cap_bytes": 1},
        "seconds": 3.0,
        "confirmation": {"seconds": 1.5},
    }
    seen = repeat.observe(rec, expectation.LEAK, 1)
    assert seen["slopes"] == {
        "new_growth": {
            "signal": "new",
            "slope": 12.0,
            "rate": 10.0,
            "unit": "things/repetition",
            "moved": True,
        }
    }
    assert seen["confirmation_seconds"] == 1.5 and seen["expected_ok"]


@pytest.mark.timeout(120)
def test_cpu_hog_keeps_every_core_busy_during_the_runs_and_ends_with_them(tmp_path):
    from leakbench.repeat import hog

    with hog.cpu_hog(2) as pids:
        assert len(pids) == 2
        time.sleep(1.0)
        spent = [psutil.Process(p).cpu_times().user for p in pids]
        # each spins (how fast is the machine's load, not ours)
        assert all(s > 0.05 for s in spent), spent
    assert not any(
        psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in pids
    )
    out = tmp_path / "hog.json"
    result = repeat.repeat(targets()[:1], 1, SETTINGS, out, machine="m", cpu_hog=1)
    assert result["cpu_hog"] == 1 and result["summary"]["load_average"]["n"] == 1
    assert "with a CPU hog of 1 busy processes beside them (load average" in repeat_report.about(
        result
    )
    assert repeat.default_out(tmp_path, "m", 1, 2).name.endswith("-hog2.json")
    with pytest.raises(repeat.RepeatError):  # another condition: never mixed into the same file
        repeat.repeat(targets()[:1], 1, SETTINGS, out, machine="m", cpu_hog=0)


@pytest.mark.timeout(120)
def test_cpu_hog_ends_by_itself_when_its_run_is_killed():
    """A run killed with SIGTERM runs no `finally`: its busy processes must not outlive it."""
    code = "import time; from leakbench.repeat import hog\nwith hog.cpu_hog(2) as pids:\n"
    code += "    print(*pids, flush=True); time.sleep(600)\n"
    run = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    pids = [int(p) for p in run.stdout.readline().split()]
    assert len(pids) == 2 and all(psutil.pid_exists(p) for p in pids)
    run.terminate()
    run.wait(timeout=30)
    _, alive = psutil.wait_procs([psutil.Process(p) for p in pids if psutil.pid_exists(p)], 30)
    for p in alive:  # the test's own safety net; the assertion says they stayed
        p.kill()
    assert not alive, [p.pid for p in alive]


def _peak_row(variant: str, values: list[float]) -> dict:
    decision = {"verdict": "x", "signal": "peak", "value": sorted(values)[1], "bar": 32 * MIB}
    return {
        "pair": "p",
        "variant": variant,
        "decided": [{"runs": 3, "median": decision, "min": min(values), "max": max(values)}],
    }


@pytest.mark.parametrize(
    ("leaky", "fixed", "words"),
    [
        ([48, 60, 90], [1, 2, 16], ["1.50 × the bar (≥ 1.5)", "0.50 × the bar (≤ 0.5)"]),
        ([47, 60, 90], [1, 2, 17], ["1.47 × the bar (UNDER 1.5)", "0.53 × the bar (OVER 0.5)"]),
    ],
)
def test_peak_margins_give_each_sides_worst_run_against_its_bar(leaky, fixed, words):
    result = {
        "summary": {
            "rows": [
                _peak_row("leaky", [x * MIB for x in leaky]),
                _peak_row("fixed", [x * MIB for x in fixed]),
            ]
        }
    }
    (line,) = repeat_report.peak_margins(result)
    assert line.startswith("- p (bar 32 MiB): leaky lowest ")
    assert all(w in line for w in words), line
    assert repeat_report.peak_margins(synthetic()) == []  # no run decided on the peak
