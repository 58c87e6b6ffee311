"""leakbench calibrate's statistics on synthetic observations (no process started),
its resume rules with a stub measure, and its designed-leak files against the
contract. The command itself, killed and resumed, is in test_interrupts.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import invoke

from leakbench import bars, contract, expectation, metrics
from leakbench.analysis.judge import verdict
from leakbench.analysis.record_type import SCHEMA
from leakbench.calibrate import calibration as calibrate
from leakbench.calibrate import committed, cost, stats, targets
from leakbench.calibrate.shape_library import DESIGNS, FOLDER, GROUPS, params_for, resolve
from leakbench.reporters.calibration import markdown
from leakbench.settings import Settings

KIB = 1 << 10


def trend(slope: float, p: float = 0.0001, halves: tuple = (None, None)) -> dict:
    first, second = (slope if h is None else h for h in halves)
    return {
        "slope": slope,
        "low": slope,
        "high": slope,
        "p_increasing": p,
        "first_half": first,
        "second_half": second,
        "unit": "bytes/repetition",
    }


def calibration_record(
    rss: dict | None,
    heap: dict | None,
    verdict_: str = "no-leak",
    peak: int = 500 << 20,
    phase: str | None = None,
) -> dict:
    return {
        "metrics": {"rss_growth": rss, "retained_heap": heap},
        "runs": [
            {
                "seconds": {
                    "import": 3.0,
                    "setup": 0.1,
                    "warm-up": 0.3,
                    "repetitions": 2.4,
                    "heap": 1.8,
                },
                "high_water_mark_bytes": peak,
                "max_rss_bytes": peak,
                "heap": {"heap_source": "snapshots"},
            }
        ],
        "verdict": verdict_,
        "signals": [],
        "phase": phase,
        "error": None,
        "seconds": 9.0,
        "environment": {"tensorflow": "2.21.0"},
    }


def observations() -> list[dict]:
    found = []
    for run, noise in enumerate((0.9, 1.0, 1.1), 1):
        found.append(
            calibrate.observe(
                calibration_record(trend(0.0, p=1.0), trend(700.0, p=0.004)),
                calibrate.Case("tensorflow", 0),
                run,
            )
        )
        found.append(
            calibrate.observe(
                calibration_record(
                    trend(noise * 1024 * KIB),
                    trend(noise * 2 * KIB),
                    "leak",
                    peak=(500 << 20) + (60 << 20),
                ),
                calibrate.Case("tensorflow", 1024 * KIB),
                run,
            )
        )
    return found


def test_summary_counts_detections_bias_and_cv():
    rows = {r["bytes_per_rep"]: r for r in stats.summarize(observations())}
    control, leak = rows[0], rows[1024 * KIB]
    assert control["rss"]["detected"]["k"] == 0 and control["heap"]["detected"]["k"] == 0
    assert control["heap"]["trend_only"]["k"] == 3  # rising, below the 64 KiB bar: not an alarm
    assert leak["rss"]["detected"] == pytest.approx(
        {"k": 3, "n": 3, "rate": 1.0, "low": 0.4385, "high": 1.0}, abs=1e-3
    )  # Wilson, 95 %
    assert leak["heap"]["detected"]["k"] == 0  # 2 KiB/rep seen, under HEAP_SLOPE_MIN
    assert leak["rss"]["slope"]["relative_bias"] == pytest.approx(0.0, abs=1e-9)
    assert leak["rss"]["slope"]["cv"] == pytest.approx(0.1)  # std(0.9, 1.0, 1.1) / 1.0
    assert leak["heap"]["slope"]["relative_bias"] == pytest.approx(2 / 1024 - 1)
    assert leak["asv_peakmem"]["detected"]["k"] == 3  # 560 MiB > 1.1 × 500 MiB
    assert control["asv_peakmem"]["detected"]["k"] == 0


def test_reach_is_the_largest_threshold_that_still_moves():
    t = trend(100 * KIB, halves=(30 * KIB, 120 * KIB))
    reach = stats.reach(t)
    assert reach == 30 * KIB  # the smaller half: verdict.rate
    assert verdict.moved(t, reach) and not verdict.moved(t, reach + 1)
    assert stats.reach(trend(100 * KIB, p=0.5)) is None


def committed_record(
    variant: str = "fixed", verdict_: str = "no-leak", pair: str = "p", **metrics_
) -> dict:
    """A record as results/records keeps it, at this leakbench's schema."""
    return {
        "schema": SCHEMA,
        "pair": pair,
        "variant": variant,
        "verdict": verdict_,
        "signals": [],
        "phase": None,
        "metrics": metrics_ or None,
        "environment": {"tensorflow": "2.21.0"},
        "reported": None,
        "expects": None,
        "requires": None,
    }


def write_records(folder: Path, name: str, records: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in records))


def test_signals_and_thresholds_come_from_the_registry():
    assert list(calibrate.SIGNALS) == ["held", "rss", "heap"]
    for name, key in (("held", "held_growth"), ("rss", "rss_growth"), ("heap", "retained_heap")):
        assert calibrate.SIGNALS[name] is metrics.BY_KEY[key] and metrics.BY_KEY[key].signal == name
    assert calibrate.SIGNALS["rss"].fallback and not calibrate.SIGNALS["held"].fallback


def test_noise_floor_from_controls_and_committed_fixes(tmp_path):
    write_records(
        tmp_path / "records" / "vm",
        "tf-2.21.0.jsonl",
        [
            committed_record(rss_growth=trend(200 * KIB), retained_heap=trend(6 * KIB)),
            # a fix that reads leak is an alarm, not noise; a leaky variant is no fix
            committed_record(verdict_="leak", pair="q", rss_growth=trend(900 * KIB)),
            committed_record(variant="leaky", verdict_="leak", rss_growth=trend(800 * KIB)),
        ],
    )
    fixes, unreadable = committed.fixed_records(tmp_path / "records")
    assert [label for label, _ in fixes] == ["vm/tf-2.21.0", "vm/tf-2.21.0"] and unreadable == []
    floor = committed.noise_floor(observations(), fixes)
    assert floor["rss"]["floor"] == 200 * KIB and floor["rss"]["set_by"] == "p fixed, vm/tf-2.21.0"
    assert floor["heap"]["floor"] == 6 * KIB and floor["heap"]["fix_records"] == 1
    assert floor["held"]["threshold"] == bars.HELD_SLOPE_MIN


def test_a_fix_is_a_false_alarm_where_the_expectation_refuses_it(tmp_path):
    write_records(
        tmp_path / "vm",
        "tf-2.21.0.jsonl",
        [
            committed_record(),
            committed_record(verdict_="fragmentation", pair="frag"),
            committed_record(verdict_="error", pair="broken"),
            committed_record(verdict_="skipped", pair="gpu"),
        ],
    )
    (tmp_path / "vm" / "tf-2.20.0.jsonl").write_text("{not json\n")
    found = committed.committed_fix_verdicts(*committed.fixed_records(tmp_path))
    assert found["records"] == 3 and found["skipped"] == 1  # skipped measured nothing
    assert found["false_alarms"] == 2 and [a.split(":")[1].split()[0] for a in found["alarms"]] == [
        "frag",
        "broken",
    ]
    assert len(found["unreadable"]) == 1 and found["unreadable"][0].startswith("vm/tf-2.20.0: ")


def test_a_control_alarm_is_any_verdict_no_leak_does_not_accept():
    seen = observations() + [
        calibrate.observe(
            calibration_record(trend(0.0, p=1.0), None, "over-cap", phase="repetitions"),
            calibrate.Case("tensorflow", 0),
            4,
        )
    ]
    assert not expectation.NO_LEAK.accepts(seen[-1])
    control = next(r for r in stats.summarize(seen) if r["bytes_per_rep"] == 0)
    assert control["false_alarms"]["k"] == 1 and control["false_alarms"]["n"] == 4
    found = {t["target"]: t for t in targets.targets(stats.summarize(seen), {}, None)}
    assert found["tensorflow: no false alarm on the control"]["met"] is False
    assert (
        found["tensorflow: no false alarm on the control"]["measured"]
        == "1/4 runs read other than no-leak"
    )


def test_targets_say_what_is_not_met():
    rows = stats.summarize(observations())
    found = {t["target"]: t for t in targets.targets(rows, {}, {"wall_over_floor": 2.0})}
    assert found["tensorflow: no false alarm on the control"]["met"] is True
    # not measured
    assert found["tensorflow: 64 KiB/rep caught 10/10 by held memory"]["met"] is None
    assert found["suite <= 1.5x its floor"]["met"] is False


def test_cost_compares_tracked_repetitions_and_shows_the_fixed_cost_beside():
    settings = Settings(cap_bytes=1 << 30, timeout_seconds=60)  # 12 repetitions, a heap pass of 6
    timed = {"import": 3.0, "setup": 0.1, "warm-up": 0.3, "repetitions": 0.6}  # plain: 0.05 s/rep
    split = [
        {
            "holder": "tensorflow",
            "wall_seconds": 9.0,
            "seconds": {**timed, "heap": 0.06 * k, "heap_tracker": 0.3, "heap_analysis": 0.12},
        }
        for k in (1, 1, 2)
    ]
    c = cost.cost(split, settings)["tensorflow"]
    assert c["heap_seconds_per_rep"] == pytest.approx(0.01) and c[
        "heap_over_plain"
    ] == pytest.approx(0.2)
    assert c["heap_tracker_seconds"] == pytest.approx(0.3) and c[
        "heap_analysis_seconds"
    ] == pytest.approx(0.12)
    assert c["heap_total_seconds_per_rep"] == pytest.approx(0.08)  # (0.06 + 0.3 + 0.12) / 6
    assert c["heap_total_over_plain"] == pytest.approx(1.6)
    target = next(
        t
        for t in targets.targets(stats.summarize(observations()), {"tensorflow": c}, None)
        if "memray pass" in t["target"]
    )
    # judged on the whole pass: 1.6x misses the 1.5x aim although its tracked repetitions cost 0.2x
    assert (
        target["met"] is False
        and target["measured"] == "1.60x (its tracked repetitions alone 0.20x)"
    )
    # a child from before the split: seconds["heap"] is the whole pass, no per-repetition figure
    whole = cost.cost(
        [{"holder": "tensorflow", "wall_seconds": 9.0, "seconds": {**timed, "heap": 0.9}}], settings
    )["tensorflow"]
    assert whole["heap_seconds_per_rep"] is None and whole["heap_tracker_seconds"] is None
    assert whole["heap_total_over_plain"] == pytest.approx(3.0)
    text = markdown(
        {
            "machine": "m",
            "environment": {"tensorflow": "2.21.0"},
            "settings": {"warmup": 3, "reps": 12, "heap_reps": 6},
            "summary": [],
            "peer_summary": [],
            "cost": {"tensorflow": c, "old": whole},
            "targets": [],
        }
    )
    table = [
        line
        for line in text.split("### Cost")[1].split("###")[0].splitlines()
        if line.startswith("|")
    ]
    assert len({row.count("|") for row in table}) == 1
    assert "| 0.050 | 0.010 | 0.20 | 0.30 | 0.12 | 0.080 | 1.60 |" in table[2]
    assert table[3].endswith("| 0.050 | — | — | — | — | 0.150 | 3.00 |")


def test_markdown_has_a_row_per_case():
    result = {
        "machine": "m",
        "environment": {"tensorflow": "2.21.0"},
        "settings": {"warmup": 3, "reps": 12, "heap_reps": 6},
        "summary": stats.summarize(observations()),
        "peer_summary": [],
        "cost": {},
        "targets": [],
    }
    text = markdown(result)
    assert "| steady | tensorflow | leak | 0 (control) | 3/3 | false alarms 0/3 |" in text
    assert "| steady | tensorflow | leak | 1 MiB | 3/3 | caught 3/3 |" in text
    # every table's header has as many columns as its rows (no peer ran here)
    for table in text.split("\n\n"):
        rows = [line for line in table.splitlines() if line.startswith("|")]
        assert len({row.count("|") for row in rows}) <= 1, rows[:3]


@pytest.mark.parametrize("name", sorted(DESIGNS))
def test_designed_leak_files_follow_the_contract(name):
    design = DESIGNS[name]
    assert design.name == name and design.path.parent == FOLDER and design.path.is_file()
    scenario = contract.read_metadata(design.path)
    assert scenario.kind == "growth" and scenario.size_param == "bytes_per_rep"
    # the design's own parameters are the file's: setup() takes them
    assert set(design.params) <= set(scenario.params) - {"bytes_per_rep"}
    assert design.path.name.startswith(f"{design.holder}_")  # python_*.py, tensorflow_*.py
    assert design.shape in stats.SHAPES


CONTROL_SHAPES = {"bounded cache", "sawtooth", "one-off jump"}


def test_the_design_table_names_every_file_and_shape():
    designs = DESIGNS.values()
    # every file in designs/ is measured by some design; every shape has one of each holder but
    # "moves" (a Python bytearray beside a hole glibc moves it into)
    assert {d.path for d in designs} == set(FOLDER.glob("*.py"))
    for shape in stats.SHAPES:
        holders = {"python"} if shape == "moves" else {"python", "tensorflow"}
        assert {d.holder for d in designs if d.shape == shape} == holders, shape
    # a control shape is a control at every size; every other shape is a designed leak
    assert all(d.leaks == (d.shape not in CONTROL_SHAPES) for d in designs)
    # the holders of results made before the shape library read as they did
    old = {"python": "python_held.py", "tensorflow": "tensorflow_held.py"}
    old["tensorflow-system-allocator"] = "tensorflow_system_allocator.py"
    for name, file in old.items():
        assert DESIGNS[name].path.name == file and DESIGNS[name].shape == "steady"
    assert {n: d.params for n, d in DESIGNS.items() if d.params} == {
        "python-rare4": {"every": 4},
        "python-rare8": {"every": 8},
        "tensorflow-rare4": {"every": 4},
        "tensorflow-rare8": {"every": 8},
        **{
            f"{h}-cache{n}": {"entries": n}
            for h in ("python", "tensorflow")
            for n in (3, 6, 12, 24)
        },
        "python-sawtooth": {"every": 8},
        "tensorflow-sawtooth": {"every": 8},
    }


def test_groups_and_names_resolve_and_an_unknown_name_is_refused():
    groups = GROUPS
    every = [n for n in DESIGNS if n != "tensorflow-system-allocator"]
    assert groups["shapes"] == every and len(every) == 24
    for holder in ("python", "tensorflow"):
        assert groups[f"{holder}-shapes"] == [n for n in every if DESIGNS[n].holder == holder]
    assert sorted(groups["python-shapes"] + groups["tensorflow-shapes"]) == sorted(every)
    # each name once, in the order given; a group stands for its designs
    assert resolve(["python-jump", "python-shapes", "python"]) == [
        "python-jump",
        *(n for n in groups["python-shapes"] if n != "python-jump"),
    ]
    assert resolve(["tensorflow-system-allocator"]) == ["tensorflow-system-allocator"]
    for words, named in ((["python", "perl", "cobol"], "unknown perl, cobol"), ([], "none given")):
        with pytest.raises(ValueError) as e:
            resolve(words)
        assert named in str(e.value) and "\n" not in str(e.value)
        assert "python-cache12" in str(e.value) and "tensorflow-shapes" in str(e.value)


def test_a_run_gets_the_files_params_then_the_designs_then_the_size(tmp_path, monkeypatch):
    assert params_for(DESIGNS["python-cache12"], KIB) == {
        "bytes_per_rep": KIB,
        "entries": 12,  # the file's PARAMS say 6
    }
    assert params_for(DESIGNS["python"], 0) == {"bytes_per_rep": 0}
    got = []

    def measure(target, params, settings):
        got.append((target.scenario.path.name, params))
        return calibration_record(trend(0.0, p=1.0), trend(0.0, p=1.0))

    monkeypatch.setattr(calibrate, "measure", measure)
    out = tmp_path / "c.json"
    result = calibrate.calibrate(
        ["python-rare8", "python-jump"], [KIB], 1, SETTINGS, out, machine="m"
    )
    assert got == [
        ("python_rare_steps.py", {"bytes_per_rep": KIB, "every": 8}),
        ("python_jump.py", {"bytes_per_rep": KIB}),
    ]
    assert [(o["holder"], o["shape"], o["leaks"]) for o in result["observations"]] == [
        ("python-rare8", "rare steps", True),
        ("python-jump", "one-off jump", False),
    ]
    # the file with them resumes (its schema reads them): nothing is measured again
    calibrate.calibrate(["python-rare8", "python-jump"], [KIB], 1, SETTINGS, out, machine="m")
    assert len(got) == 2


def test_holders_takes_a_group_word(tmp_path, monkeypatch):
    from leakbench import cli

    got = []

    def measure(target, params, settings):
        got.append(target.scenario.path.name)
        return calibration_record(trend(0.0, p=1.0), trend(0.0, p=1.0))

    monkeypatch.setattr(calibrate, "measure", measure)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "c.json"
    args = ["calibrate", "--holders", "python-shapes", "--sizes", "0", "--runs", "1"]
    result = invoke(*args, "--machine", "m", "--out", str(out))
    assert result.exit_code == 0, result.stderr
    found = json.loads(out.read_text())
    assert [o["holder"] for o in found["observations"]] == GROUPS["python-shapes"]
    assert len(got) == 14 and "| bounded cache | python-cache24 | control | 0 (control) |" in (
        out.with_suffix(".md").read_text()
    )
    option = next(o for o in cli.main.commands["calibrate"].params if o.name == "holders")
    assert all(f" {word}" in option.help for word in GROUPS)


def shaped(name: str, size: int, verdicts: list[str]) -> list[dict]:
    """Observations of one case of a design, a run per verdict (flat signals)."""
    return [
        calibrate.observe(
            calibration_record(trend(0.0, p=1.0), None, v), calibrate.Case(name, size), run
        )
        for run, v in enumerate(verdicts, 1)
    ]


def shape_library() -> list[dict]:
    found = shaped("python-cache12", 16 * KIB, ["no-leak", "leak", "no-leak"])
    found += shaped("python-rare4", 16 * KIB, ["leak", "no-leak", "leak"])
    found += shaped("python-cache3", 16 * KIB, ["no-leak"] * 3)
    found += shaped("python-rare4", 0, ["no-leak", "leak", "no-leak"])
    found += shaped("python", 16 * KIB, ["leak"] * 3) + shaped("python", 0, ["no-leak"] * 3)
    return found


def test_rows_are_grouped_by_shape_with_caught_or_false_alarms():
    rows = stats.summarize(shape_library())
    assert [(r["shape"], r["holder"], r["bytes_per_rep"]) for r in rows] == [
        ("steady", "python", 0),
        ("steady", "python", 16 * KIB),
        ("rare steps", "python-rare4", 0),
        ("rare steps", "python-rare4", 16 * KIB),
        ("bounded cache", "python-cache3", 16 * KIB),  # 3 before 12: numbers read as numbers
        ("bounded cache", "python-cache12", 16 * KIB),
    ]
    found = {(r["holder"], r["bytes_per_rep"]): r for r in rows}
    rare = found["python-rare4", 16 * KIB]
    assert rare["leaks"] and not rare["control"] and rare["caught"]["k"] == 2
    assert rare["false_alarms"] is None
    # a control shape is a control at any size: its leak verdicts are false alarms
    cache = found["python-cache12", 16 * KIB]
    assert not cache["leaks"] and cache["control"] and cache["caught"] is None
    assert (cache["false_alarms"]["k"], cache["false_alarms"]["n"]) == (1, 3)
    assert found["python-rare4", 0]["false_alarms"]["k"] == 1  # 0 bytes: every design's control
    text = markdown(
        {
            "machine": "m",
            "tensorflow": "2.21.0",  # installed; a Python-held design's child never imports it
            "environment": {"tensorflow": None},
            "settings": {"warmup": 3, "reps": 12, "heap_reps": 6},
            "summary": rows,
            "peer_summary": [],
            "cost": {},
            "targets": [],
        }
    )
    assert text.startswith("## Calibration: m, TensorFlow 2.21.0\n")
    for row in (
        "| steady | python | leak | 16 KiB | 3/3 | caught 3/3 |",
        "| rare steps | python-rare4 | leak | 0 (control) | 3/3 | false alarms 1/3 |",
        "| rare steps | python-rare4 | leak | 16 KiB | 3/3 | caught 2/3 |",
        "| bounded cache | python-cache3 | control | 16 KiB | 3/3 | false alarms 0/3 |",
        "| bounded cache | python-cache12 | control | 16 KiB | 3/3 | false alarms 1/3 |",
    ):
        assert row in text, row
    # the verdicts by shape first: a design a row, a size a column
    assert "| rare steps | python-rare4 | leak | false alarms 1/3 | caught 2/3 |" in text
    assert "| bounded cache | python-cache3 | control | — | false alarms 0/3 |" in text
    detection = [line for line in text.split("\n\n")[4].splitlines() if line.startswith("|")]
    assert len(detection) == 2 + len(rows) and len({line.count("|") for line in detection}) == 1


def test_targets_read_the_steady_designs_and_the_smallest_leak_caught_every_leak_shape():
    library = shape_library()  # three runs a case: twelve, as the smallest size caught needs ten
    rows = stats.summarize([{**o, "run": o["run"] + 3 * i} for o in library for i in range(4)])
    named = {t["target"].split(":")[0] for t in targets.targets(rows, {}, None)}
    assert named == {"python", "suite <= 1.5x its floor"}
    # python-rare4 caught 8 of 12 at 16 KiB: no size is caught in every leak shape
    assert targets.smallest_caught(rows) is None
    # without it, the steady python's 16 KiB; python-cache12's false alarms are a control's
    assert targets.smallest_caught([r for r in rows if r["holder"] != "python-rare4"]) == 16 * KIB


def test_results_from_before_the_shape_library_read_as_steady_leaks():
    old = [{k: v for k, v in o.items() if k not in ("shape", "leaks")} for o in observations()]
    rows = stats.summarize(old)
    assert {(r["shape"], r["leaks"]) for r in rows} == {("steady", True)}
    stored = [{k: v for k, v in r.items() if k not in ("shape", "leaks", "caught")} for r in rows]
    text = markdown(
        {
            "machine": "m",
            "environment": {"tensorflow": "2.21.0"},
            "settings": {"warmup": 3, "reps": 12, "heap_reps": 6},
            "summary": stored,  # a summary as older result files keep it
            "peer_summary": [],
            "cost": {},
            "targets": [],
        }
    )
    assert "| steady | tensorflow | leak | 1 MiB | 3/3 | caught 3/3 |" in text


def test_the_docs_describe_every_design():
    page = (Path(__file__).parents[1] / "docs" / "calibration.md").read_text()
    table = page.split("## The shape library")[1].split("\n## ")[0]
    for name, design in DESIGNS.items():
        line = next(x for x in table.splitlines() if x.startswith(f"| `{name}` |"))
        cells = [c.strip() for c in line.split("|")[1:-1]]
        assert cells[1:4] == [
            f"`{design.holder}`",
            design.shape,
            "leak" if design.leaks else "control",
        ], line
    for word in GROUPS:
        assert f"`{word}`" in page


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--holders", "perl"], "--holders: unknown perl"),
        (["--peers", "valgrind"], "--peers: unknown valgrind"),
        (["--sizes", "0,lots"], "--sizes: 'lots'"),
        (["--cap", "lots"], "--cap: 'lots'"),
    ],
)
def test_bad_input_is_one_line_and_runs_nothing(args, fragment, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("calibrate", *args, "--out", str(tmp_path / "c.json"))
    assert result.exit_code == 2 and fragment in result.stderr, result.stderr
    assert not (tmp_path / "c.json").exists()


@pytest.mark.timeout(120)
def test_a_peer_runs_in_its_own_capped_process():
    """pytest-memray's limit_leaks on a designed 1 MiB/repetition Python leak, end to
    end (its own fresh process, a cap and a timeout): it flags it (about 1 s here)."""
    import leakbench
    from leakbench.calibrate import peers

    path = Path(leakbench.__file__).parent / "calibrate" / "designs" / "python_held.py"
    found = peers.run_peer(
        "limit_leaks",
        path,
        {"bytes_per_rep": 1 << 20},
        warmup=3,
        reps=12,
        cap_bytes=1 << 30,
        timeout_seconds=60,
    )
    assert found["status"] == "ok" and found["leak"] is True, found
    assert 0 < found["max_rss_bytes"] < 1 << 30


# --- resume: a file made otherwise is never overwritten --------------------------------------

SETTINGS = Settings(cap_bytes=1 << 30, timeout_seconds=60)


@pytest.fixture
def stub_measure(monkeypatch):
    """calibrate's measure replaced by a record of a flat run; the calls it got, in a list."""
    calls = []

    def measure(target, params, settings):
        calls.append(params["bytes_per_rep"])
        return calibration_record(trend(0.0, p=1.0), trend(0.0, p=1.0))

    monkeypatch.setattr(calibrate, "measure", measure)
    return calls


def test_resume_measures_only_the_missing_runs(tmp_path, stub_measure):
    out = tmp_path / "c.json"
    calibrate.calibrate(["python"], [0], 1, SETTINGS, out, machine="m")
    result = calibrate.calibrate(["python"], [0, KIB], 2, SETTINGS, out, machine="m")
    assert stub_measure == [0, KIB, 0, KIB]  # run 1 of the control was kept, not measured again
    assert sorted((o["bytes_per_rep"], o["run"]) for o in result["observations"]) == [
        (0, 1),
        (0, 2),
        (KIB, 1),
        (KIB, 2),
    ]


@pytest.mark.parametrize(
    "change, named",
    [
        (
            {"settings": Settings(cap_bytes=1 << 30, timeout_seconds=60, reps=6)},
            "reps 12 there, 6 here",
        ),
        ({"machine": "other"}, "machine m there, other here"),
    ],
)
def test_resume_with_other_settings_raises_and_keeps_the_file(
    tmp_path, stub_measure, change, named
):
    out = tmp_path / "c.json"
    calibrate.calibrate(["python"], [0], 1, SETTINGS, out, machine="m")
    before = out.read_bytes()
    args = {"settings": SETTINGS, "machine": "m", **change}
    with pytest.raises(calibrate.CalibrateError) as e:
        calibrate.calibrate(
            ["python"], [0], 2, args["settings"], out, resume=True, machine=args["machine"]
        )
    message = str(e.value)
    assert "\n" not in message and named in message and str(out) in message and "--fresh" in message
    assert out.read_bytes() == before and stub_measure == [0]  # untouched, and nothing measured
    # --fresh replaces it
    result = calibrate.calibrate(
        ["python"], [0], 1, args["settings"], out, resume=False, machine=args["machine"]
    )
    assert json.loads(out.read_text())["machine"] == result["machine"] == args["machine"]


@pytest.mark.parametrize(
    "content, named",
    [
        (b'{"format": 2, "observ', "cannot be read as JSON"),
        (b"\xff\xfe", "cannot be read as JSON"),
        (b"[1, 2]", "is not a calibration result of format 2"),
        (
            json.dumps({"format": 2, "machine": "m", "jobs": 1, "observations": {}}).encode(),
            "is not a calibration result",
        ),  # a repeatability result, say
        (
            json.dumps({"format": 1, "machine": "m", "settings": {}, "observations": []}).encode(),
            "is not a calibration result of format 2",
        ),
    ],
)
def test_a_corrupt_or_foreign_out_raises_and_is_kept(tmp_path, stub_measure, content, named):
    out = tmp_path / "c.json"
    out.write_bytes(content)
    with pytest.raises(calibrate.CalibrateError, match=named):
        calibrate.calibrate(["python"], [0], 1, SETTINGS, out, machine="m")
    assert out.read_bytes() == content and stub_measure == []


def caught_row(holder: str, size: int, k: int, n: int = 10) -> dict:
    return {"holder": holder, "bytes_per_rep": size, "leak": {"k": k, "n": n}}


def test_smallest_caught_needs_every_holder_every_run_and_every_larger_size():
    rows = [
        caught_row(h, s, 10)
        for h in ("python", "tensorflow")
        for s in (16 << 10, 32 << 10, 64 << 10)
    ]
    rows += [caught_row("python", 8 << 10, 10), caught_row("tensorflow", 8 << 10, 3)]
    rows += [caught_row(h, 0, 0) for h in ("python", "tensorflow")]
    assert targets.smallest_caught(rows) == 16 << 10  # 8 KiB: caught 3/10 with TF tensors
    # a miss at 32 KiB: 16 KiB no longer counts
    rows[1] = caught_row("python", 32 << 10, 9)
    assert targets.smallest_caught(rows) == 64 << 10
    # fewer than 10 runs
    assert targets.smallest_caught([caught_row("python", 16 << 10, 5, 5)]) is None


def test_run_output_says_what_no_leak_means(tmp_path):
    rows = [caught_row(h, s, 10) for h in ("python", "tensorflow") for s in (16 << 10, 64 << 10)]
    (tmp_path / "vm-tf-2.21.0.json").write_text(json.dumps({"summary": rows}))
    line = committed.sensitivity(tmp_path, "vm", "2.21.0")
    assert "less than 16 KiB/repetition" in line and "vm-tf-2.21.0.json" in line
    assert "not calibrated on vm for TensorFlow 2.15.1" in committed.sensitivity(
        tmp_path, "vm", "2.15.1"
    )
    (tmp_path / "vm-tf-2.20.0.json").write_text("[1")  # not a calibration result: says nothing
    assert "not calibrated" in committed.sensitivity(tmp_path, "vm", "2.20.0")
    # a shape table beside it counts too: a lumpy leak missed once at 16 KiB moves the line to 32
    shapes = [caught_row("python-list", s, 10) for s in (32 << 10, 64 << 10)]
    shapes += [caught_row("python-list", 16 << 10, 9)]
    (tmp_path / "vm-tf-2.21.0-shapes-python.json").write_text(json.dumps({"summary": shapes}))
    (tmp_path / "vm-tf-2.21.0-broken.json").write_text("{}")  # says nothing
    line = committed.sensitivity(tmp_path, "vm", "2.21.0")
    assert "less than 32 KiB/repetition" in line and "vm-tf-2.21.0*.json: 2 tables" in line
    # another version's tables never count
    assert "not calibrated" in committed.sensitivity(tmp_path, "vm", "2.21")


# --- the longer looks on real series (Python-held shapes: no TensorFlow, ~1 s each) ----------


@pytest.mark.parametrize(
    "design, size, word, looks",
    [
        # a block every 8 repetitions: the first run's halves read nothing, its net rise does;
        # the confirmation rises in lumps; the extension's malloc lows rise in both windows
        ("python-rare8", 16 * KIB, "leak", ["extension"]),
        ("python-bytearray", 16 * KIB, "leak", ["confirmation", "extension"]),
        # a cache of 24 entries of 512 KiB passes every bar while it fills, then holds
        ("python-cache24", 512 * KIB, "no-leak", ["extension"]),
        ("python-jump", 64 * KIB, "no-leak", ["confirmation"]),
        # where the first run ends on a tooth, its net rise asks for a look; else none
        ("python-sawtooth", 64 * KIB, "no-leak", [None, "confirmation", "extension"]),
    ],
)
def test_a_shape_reads_its_verdict_through_the_engines_looks(design, size, word, looks):
    """Measured, capped and timed like any variant: a leak shape reads leak and a control shape
    no-leak, and the record says which look decided and why."""
    from leakbench.catalog import Target
    from leakbench.measure import measure

    found = DESIGNS[design]
    scenario = contract.read_metadata(found.path)
    calibration_record = measure(Target(scenario, "file"), params_for(found, size), SETTINGS)
    made = [k for k in ("confirmation", "extension") if k in calibration_record]
    assert calibration_record["verdict"] == word, [calibration_record[k]["why"] for k in made]
    assert (made[-1] if made else None) in looks  # the look that decided
    assert all(
        calibration_record[k]["why"] and calibration_record[k]["status"] == "ok" for k in made
    )


def test_a_leak_missed_under_every_bar_says_which_measured_reach_forbids_a_lower_bar():
    """8 KiB is under held memory's and memray heap's bars: the table says why it is missed,
    from the controls' reaches at 0 and 8 KiB and the committed fixes' floor; a size caught in
    every run, or at or over a bar, says nothing."""
    found = shaped("python", 8 * KIB, ["no-leak"] * 3) + shaped("python", 16 * KIB, ["leak"] * 3)
    found += [
        calibrate.observe(
            calibration_record(None, trend(10 * KIB)), calibrate.Case("python-cache6", 8 * KIB), 1
        )
    ]
    floor = {"threshold": 13 * KIB, "floor": 5 * KIB, "set_by": "retracing fixed, vm/tf-2.16.2"}
    result = {"summary": stats.summarize(found), "observations": found, "noise_floor": {}}
    result["noise_floor"]["held"] = floor
    (entry,) = stats.under_the_bars(result)
    assert entry["size"] == 8 * KIB and entry["missed"] == ["python"]
    heap, held = entry["signals"]["heap"], entry["signals"]["held"]
    assert heap["controls"] == {"reach": 10 * KIB, "set_by": "python-cache6 at 8 KiB, run 1"}
    assert heap["fixes"] is None and held["controls"] is None
    assert held["fixes"] == {"reach": 5 * KIB, "set_by": "retracing fixed, vm/tf-2.16.2"}
    text = markdown(
        {
            "machine": "m",
            "environment": {"tensorflow": None},
            "settings": {"warmup": 3, "reps": 12, "heap_reps": 6},
            "peer_summary": [],
            "cost": {},
            "targets": [],
            **result,
        }
    )
    assert "Why 8 KiB/rep is missed: it is under every deciding bar" in text
    assert "the controls reach 10.0 KiB/rep (python-cache6 at 8 KiB, run 1; over 8 KiB)" in text
    assert "the fixes reach 5.0 KiB/rep (retracing fixed, vm/tf-2.16.2; under 8 KiB)" in text
    caught = stats.summarize(shaped("python", 8 * KIB, ["leak"] * 3))
    assert stats.under_the_bars({"summary": caught, "observations": []}) == []
