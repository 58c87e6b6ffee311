"""Every scenario pair on TensorFlow: the leaky variant shows its effect, the fix does not.

Each variant runs through the real engine (fresh process, memory cap,
timeout) at its default parameters. Margins are generous but real: a leak
must grow by at least half of what its scenario retains by construction.
"""
import importlib.util

import pytest

from leakbench import catalog, report
from leakbench.measure import Settings, measure

pytestmark = [
    pytest.mark.tf,
    pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="TensorFlow is not installed"),
]

MIB = 1 << 20
# Every run is capped and timed: a leak must never take the machine down.
SETTINGS = Settings(warmup=3, reps=12, heap_reps=6, cap_bytes=3 << 30, timeout_seconds=240)
ROOT = catalog.find_root()


def run(name: str, variant: str) -> dict:
    (target,) = catalog.targets(ROOT, [name], variant)
    rec = measure(target, target.scenario.params, SETTINGS)
    assert rec["metrics"], f"no measurement: {rec['verdict']} in {rec['phase']}: {rec['error']}"
    return rec


def leaks(rec: dict) -> bool:
    """leak, or a hang in teardown after the signals moved (freeing live
    iterators can stall on TF 2.21): see report.expected_ok."""
    return report.expected_ok(rec, "leak") and rec["verdict"] != "over-cap"


def slope(rec: dict, metric: str) -> float:
    return rec["metrics"][metric]["slope"]


def test_pairs_cover_the_seed_sources():
    sources = {t.scenario.source for t in catalog.targets(ROOT, [], "both")}
    assert sources == {"caching", "dangling references", "chaining/parallelism", "stateful functions"}


# Growth pairs: (name, signal that must move, bytes retained per repetition by construction)
GROWTH = [
    ("dataset_per_step", "rss", 2 * MIB),                 # one 2 MiB array copy per step
    ("stateful_map", "rss", 256 * 16 * 1024),             # 256 elements of 16 KiB per epoch
    ("kept_iterators", "threads", None),                  # live iterators hold threads
    ("retracing", "rss", None),                           # a new concrete function per step
]


@pytest.mark.parametrize("name, signal, retained", GROWTH, ids=[g[0] for g in GROWTH])
def test_growth_pair(name, signal, retained):
    leaky = run(name, "leaky")
    assert leaks(leaky) and signal in leaky["signals"], (leaky["verdict"], leaky["signals"])
    if retained:
        assert 0.5 * retained <= slope(leaky, "rss_growth") <= 2 * retained
    if name == "kept_iterators":  # 4 peeks per repetition, each iterator holding threads
        assert slope(leaky, "threads_growth") >= 4
    if name == "retracing":
        assert slope(leaky, "python_objects_growth") > 100
    fixed = run(name, "fixed")
    assert fixed["verdict"] == "no-leak", fixed["signals"]
    assert slope(fixed, "rss_growth") < slope(leaky, "rss_growth") / 4


# Peak pairs: (name, bytes the leaky buffer holds per unit of the size parameter)
PEAK = [
    ("unbounded_cache", 64 * 1024),          # one cached element per unit of num_elements
    ("oversized_prefetch", 256 * 1024),      # one buffered element per unit of buffer_size
    ("unbounded_interleave", 16 * 256 * 1024),  # a full inner prefetch buffer per input
]


@pytest.mark.parametrize("name, bytes_per_unit", PEAK, ids=[p[0] for p in PEAK])
def test_peak_pair(name, bytes_per_unit):
    leaky = run(name, "leaky")
    scaling = leaky["metrics"]["peak_scaling"]
    assert leaks(leaky) and "peak" in leaky["signals"], (leaky["verdict"], leaky["signals"])
    rise = scaling["peaks_bytes"][-1] - scaling["peaks_bytes"][0]
    expected = (scaling["sizes"][-1] - scaling["sizes"][0]) * bytes_per_unit
    assert rise >= 0.5 * expected, (rise, expected)
    fixed = run(name, "fixed")
    assert fixed["verdict"] == "no-leak", fixed["signals"]
    assert fixed["metrics"]["peak_scaling"]["exponent"] < 0.3
