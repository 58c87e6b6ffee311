"""scripts/watch-table's table, made from fake replicates: no TensorFlow, no child started."""

import importlib.machinery
import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "watch-table"


def load():
    """The script as a module (its name has no .py: a loader of its own)."""
    loader = importlib.machinery.SourceFileLoader("watch_table", str(SCRIPT))
    spec = importlib.util.spec_from_loader("watch_table", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def replicate(kind, k, leak_at=None, status="ok", rounds=None, **more):
    """One replicate as the child writes it, run_one's keys around it."""
    found = {
        "kind": kind,
        "k": k,
        "status": status,
        "replicate": 0,
        "load_average": [1.0, 1.0, 1.0],
        "cap_bytes": 2 << 30,
        "child_seconds": 30.0,
    }
    if status != "ok":
        return {**found, "log": "killed"}
    rounds = rounds if rounds is not None else ([leak_at] if leak_at else [])
    verdict = "leak" if leak_at else (rounds[-1]["verdict"] if rounds else None)
    return {
        **found,
        "verdict": verdict,
        "leak_at": leak_at,
        "rounds": rounds,
        "samples": leak_at["samples"] if leak_at else 500,
        "units": leak_at["units"] if leak_at else 503,
        "sample": "1 epoch",
        "full_every": 800,
        "unit_seconds": 0.05,
        "cost_share": 0.004,
        **more,
    }


def leak(samples, units):
    return {"verdict": "leak", "samples": samples, "units": units}


def data(runs):
    return {
        "machine": "box-cpu-2c",
        "cpu": "CPU, 2 cores",
        "tf_version": "2.21.0",
        "leakbench": "leakbench 0.4.0 (engine abc)",
        "load_average": [1.0, 0.5, 0.25],
        "bar_bytes": 13312,
        "replicates": 3,
        "samples": 500,
        "minutes_budget": 25,
        "warmup": 3,
        "fit_shape": [3072, 64, 128, 256],
        "loop_shape": [8192, 256, 512, 2048],
        "minutes": 20.5,
        "replicates_run": runs,
    }


def test_a_row_counts_leaks_at_their_samples_and_the_rest_by_how_they_ended():
    wt = load()
    no_leak = {"verdict": "no-leak", "samples": 12, "units": 15}
    runs = [
        replicate("fit", 4, leak(24, 27)),
        replicate("fit", 4, leak(30, 33), rounds=[no_leak, leak(30, 33)]),
        replicate("fit", 4, rounds=[no_leak]),
        replicate("fit", 4, rounds=[]),
        replicate("fit", 4, status="hang"),
        replicate("loop", 4, leak(25, 53)),  # another watcher: not this row's
    ]
    s = wt.summary(runs, "fit", 4)
    assert (s["replicates"], s["leak"], s["leak_samples"], s["leak_units"]) == (
        5,
        2,
        [24, 30],
        [27, 33],
    )
    assert (s["no_leak"], s["undecided"], s["first_no_leak"]) == (1, 1, 2)
    assert (s["not_finished"], s["not_finished_count"]) == (["hang"], 1)
    assert wt._spread(s["leak_samples"]) == "27 [24–30]" and wt._spread([24, 24]) == "24"
    assert wt._spread([]) == "—" and wt._spread([27, 33], "epochs") == "30 [27–33] epochs"


def test_the_table_has_a_row_per_watcher_and_leak_and_counts_false_alarms():
    wt = load()
    runs = [replicate(kind, k, leak(24, 27)) for kind in wt.KINDS for k in (1, 2, 4, 8)]
    runs += [replicate("fit", 0), replicate("fit", 0, leak(200, 203)), replicate("loop", 0)]
    text = wt.markdown(data(runs))
    assert text.startswith("# The watchers on a Keras fit and a custom loop, box-cpu-2c\n")
    assert "13,312 bytes (13 KiB) per sample" in text and "TensorFlow 2.21.0" in text
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    leaks = [r for r in rows if "× |" in r and "watcher" not in r]
    assert len(leaks) == len(wt.KINDS) * 4
    fixed = {r.split(" | ")[0]: r.split(" | ") for r in rows if r.count("|") == 14}
    assert fixed["| Keras `fit`, `LeakWatch()`"][3:5] == ["1", "200"]  # one false alarm, at 200
    assert fixed["| custom loop, `watch(every=1)`"][3:5] == ["0", "—"]
    assert "`LeakWatch(budget=None)`" not in "".join(fixed)  # no fixed side of it ran
    assert "decided leak in 1 of 1, 1 of them within 100 epochs (largest: 27 epochs" in text
    assert "4× and 8× the bar: decided leak in 2 of 2, 2 within 24 samples" in text


def test_a_replicate_that_did_not_finish_is_named_in_its_row():
    wt = load()
    text = wt.markdown(data([replicate("loop", 8, status="over-cap")]))
    (row,) = [line for line in text.splitlines() if line.startswith("| custom loop")]
    assert "| 1 | 0 | — | — | 0 | 0 | 0 | 1 (over-cap) |" in row
