"""Telling a true leak from allocator fragmentation.

Designed cases in fresh, capped, timed processes: python_leak holds 1 MiB per
repetition; python_fragments frees everything yet its RSS grows, because its
environment tells glibc never to trim. The rule is also tested on its own.
Last, the allocator pair on TensorFlow (scenarios/shuffle_fragmentation.py).
"""

from pathlib import Path

import pytest
from conftest import need_system_package

from leakbench import contract
from leakbench.analysis.judge import verdict
from leakbench.catalog import Target
from leakbench.engine import preload
from leakbench.measure import measure
from leakbench.settings import Settings

DATA = Path(__file__).parent / "data"
# sonames, found as the dynamic loader finds them (leakbench.engine.preload), on any machine
JEMALLOC = "libjemalloc.so.2"
TCMALLOC = "libtcmalloc_minimal.so.4"
MIB = 1 << 20
SETTINGS = Settings(warmup=1, reps=12, heap_reps=6, cap_bytes=1 << 30, timeout_seconds=60)


def measure_allocator(name: str, env: dict | None = None) -> dict:
    target = Target(contract.read_metadata(DATA / f"{name}.py"), "file")
    return measure(target, target.scenario.params, SETTINGS, env=env)


def test_designed_fragmentation_reads_fragmentation():
    rec = measure_allocator("python_fragments")
    m = rec["metrics"]
    assert rec["verdict"] == "fragmentation", (
        rec["signals"],
        m["trim_returned_bytes"],
        m["rss_growth_bytes"],
    )
    assert rec["signals"] == ["rss"]
    blocks = rec["params"]["blocks"]
    # each block grows by 4 KiB each repetition
    assert m["rss_growth"]["slope"] > blocks * 4096 * 0.5
    assert abs(m["malloc_heap_growth"]["slope"]) < 64 * 1024  # nothing is held ...
    assert m["held_growth"]["slope"] < verdict.HELD_SLOPE_MIN  # ... and held memory says so
    assert m["trim_returned_bytes"] >= 0.5 * m["rss_growth_bytes"]
    # malloc keeps it as free bytes
    assert m["malloc_free_growth_bytes"] >= 0.5 * m["rss_growth_bytes"]


def test_designed_leak_reads_leak_not_fragmentation():
    rec = measure_allocator("python_leak")
    m = rec["metrics"]
    assert rec["verdict"] == "leak"
    assert "held" in rec["signals"] and m["growth_basis"] == "held"
    assert m["held_growth"]["slope"] == pytest.approx(1 << 20, rel=0.1)
    assert m["malloc_heap_growth"]["slope"] == pytest.approx(1 << 20, rel=0.1)
    assert m["trim_returned_bytes"] < 0.5 * m["rss_growth_bytes"]


def test_malloc_heap_is_na_under_a_preloaded_allocator():
    need_system_package(preload.missing({"LD_PRELOAD": JEMALLOC}))
    rec = measure_allocator("python_leak", env={"LD_PRELOAD": JEMALLOC})
    m = rec["metrics"]
    assert "libjemalloc" in m["malloc_heap_unavailable"]
    assert m["malloc_heap_growth"] is None and m["trim_returned_bytes"] is None
    assert m["held_growth"] is None  # no malloc free bytes to subtract
    assert rec["verdict"] == "leak" and "rss" in rec["signals"]  # falls back to RSS, and says so
    assert m["growth_basis"].startswith("rss (held memory n/a: libjemalloc")


def test_missing_preload_is_skipped_not_a_silent_glibc_run():
    rec = measure_allocator("python_leak", env={"LD_PRELOAD": "/nonexistent/libjemalloc.so.2"})
    assert rec["verdict"] == "skipped" and rec["error"] is None
    assert rec["skip_reason"].startswith("LD_PRELOAD names /nonexistent/libjemalloc.so.2, which")
    assert "apt-get install libjemalloc2" in rec["skip_reason"]
    assert rec["runs"][0]["wall_seconds"] == 0.0  # nothing was started


def frag_metrics(returned, grown, unavailable=None, freed="grown"):
    """freed: how much malloc's free bytes rose over
    the repetitions; by default as much as RSS grew."""
    return {
        "trim_returned_bytes": returned,
        "rss_growth_bytes": grown,
        "malloc_heap_unavailable": unavailable,
        "malloc_free_growth_bytes": grown if freed == "grown" else freed,
    }


@pytest.mark.parametrize(
    "returned, grown, unavailable, freed, expected",
    [
        (32 << 20, 40 << 20, None, "grown", True),
        (20 << 20, 40 << 20, None, "grown", True),  # exactly TRIM_SHARE_MIN
        # most of the growth is still resident: held
        (16 << 20, 40 << 20, None, "grown", False),
        (32 << 20, 40 << 20, "libjemalloc is loaded", "grown", False),
        (None, 40 << 20, None, "grown", False),
        (1 << 20, 0, None, "grown", False),
        # a fix's creep of a few MiB, given back by the trim: it comes and goes between runs of
        # the same fix (stateful_map's fix read fragmentation
        # in one run of three): below TRIM_HELD_MIN
        (3 << 20, 3 << 20, None, "grown", False),
        # measured (calibration, TF 2.21): 256 KiB/repetition held in tensors. RSS +2.1 MiB,
        # the trim gave back 1.2 MiB of free pages the import left, malloc's free bytes flat: held
        (1228800, 2129920, None, 4096, False),
        # no free-bytes figure (older records): no claim
        (32 << 20, 40 << 20, None, None, False),
    ],
)
def test_fragmented_rule(returned, grown, unavailable, freed, expected):
    assert verdict.fragmented(frag_metrics(returned, grown, unavailable, freed)) is expected


@pytest.mark.parametrize(
    "returned, held, grew, expected",
    [
        (511 << 20, 574 << 20, False, True),  # measured: shuffle of 1 M scalars on glibc, no trend
        (46 << 20, 140 << 20, False, False),  # the trim gave back a third: most is resident
        # below TRIM_HELD_MIN: every other pair's trim is 2.5-7 MiB
        (6 << 20, 8 << 20, False, False),
        # the held form also covers a growth that the trim returns
        (511 << 20, 574 << 20, True, True),
    ],
)
def test_fragmented_rule_on_held_rss(returned, held, grew, expected):
    metrics = {
        "trim_returned_bytes": returned,
        "rss_growth_bytes": 0,
        "rss_held_bytes": held,
        "malloc_heap_unavailable": None,
    }
    assert verdict.fragmented(metrics, grew=grew) is expected


@pytest.mark.parametrize(
    "returned, held, free, expected",
    [
        # measured: shuffle_fragmentation's leaky side on TF 2.19.1 (an earlier sweep): the trim
        # gave back 89 of 231 MiB held, and malloc kept
        # 218 MiB of them as free bytes: stranded chunks
        (89 << 20, 231 << 20, 218 << 20, True),
        (95 << 20, 300 << 20, 291 << 20, True),  # measured: the same pair on TF 2.20.0
        # measured: the most free bytes above the process before setup of any other record,
        # generator_closure's fix on TF 2.18.1 (44 MiB of 53 held): under FREE_HELD_MIN
        (3 << 20, 53 << 20, 44 << 20, False),
        (10 << 20, 400 << 20, 120 << 20, False),  # most of what is held is not free bytes: held
        (10 << 20, 231 << 20, None, False),  # no free-bytes figure (older records): no claim
    ],
)
def test_fragmented_rule_on_free_bytes(returned, held, free, expected):
    metrics = {
        "trim_returned_bytes": returned,
        "rss_growth_bytes": 0,
        "rss_held_bytes": held,
        "malloc_free_held_bytes": free,
        "malloc_heap_unavailable": None,
    }
    assert verdict.fragmented(metrics, grew=False) is expected
    assert (
        verdict.fragmented({**metrics, "malloc_heap_unavailable": "jemalloc"}, grew=False) is False
    )


def test_held_rss_given_back_without_a_trend_reads_fragmentation():
    flat = {
        "slope": 0.0,
        "low": 0.0,
        "high": 0.0,
        "p_increasing": 0.5,
        "first_half": 0.0,
        "second_half": 0.0,
    }
    metrics = {
        "rss_growth": flat,
        "trim_returned_bytes": 511 << 20,
        "rss_growth_bytes": 0,
        "rss_held_bytes": 574 << 20,
        "malloc_heap_unavailable": None,
    }
    assert verdict.decide(["ok"], metrics) == ("fragmentation", [])
    assert verdict.decide(["ok"], {**metrics, "malloc_heap_unavailable": "jemalloc"}) == (
        "no-leak",
        [],
    )


def test_fragmentation_needs_nothing_held_to_move():
    rss = {"slope": 4 << 20, "p_increasing": 1e-6, "first_half": 4 << 20, "second_half": 4 << 20}
    base = {
        "rss_growth": rss,
        "held_growth": {**rss, "slope": 0, "first_half": 0, "second_half": 0},
        **frag_metrics(40 << 20, 48 << 20),
    }
    assert verdict.decide(["ok"], base) == ("fragmentation", ["rss"])
    assert verdict.decide(["ok"], {**base, "threads_growth": {**rss, "slope": 4}})[0] == "leak"
    assert verdict.decide(["ok"], {**base, "held_growth": rss}) == ("leak", ["held"])


# --- the allocator pair, on TensorFlow ---
# Measured once per test run with every other pair (tf_records, tests/conftest.py).
# The pair has no memray pass (HEAP_REPS = 0): memray over millions of small tensors
# costs a minute; the verdict rests on held memory, RSS and the trim.


@pytest.mark.tf
def test_shuffle_on_glibc_reads_fragmentation_not_leak(tf_records):
    rec = tf_records[("shuffle_fragmentation", "leaky")]
    m = rec["metrics"]
    assert rec["verdict"] == "fragmentation", (rec["verdict"], rec["signals"], rec["error"])
    # RSS sits above the process before setup, by at least what the rule needs the trim to give
    # back (420-730 MiB on a quiet machine; 105 MiB in a CI run beside other measurements at
    # load 7: fewer of tf.data's threads ran at once, so fewer malloc arenas were spread) ...
    assert m["rss_held_bytes"] >= verdict.TRIM_HELD_MIN
    # ... while held memory does not grow at a sustained rate: it steps by ~1 MiB now and then
    # (one CI run read halves of 60 and 181 KiB/rep), which a 13 KiB bar sends to a confirmation
    # run, whose later half must show it levelled off ...
    confirmation = rec.get("confirmation")
    if confirmation:
        assert confirmation["status"] == "ok" and "held" not in confirmation["signals"], (
            confirmation["signals"]
        )
    else:
        assert verdict.rate(m["held_growth"]) < verdict.HELD_SLOPE_MIN
    # ... and the trim gives most of RSS back, or malloc keeps it as free bytes
    assert (
        m["trim_returned_bytes"] >= verdict.TRIM_SHARE_MIN * m["rss_held_bytes"]
        or m["malloc_free_held_bytes"] >= verdict.TRIM_SHARE_MIN * m["rss_held_bytes"]
    )


@pytest.mark.tf
def test_shuffle_under_tcmalloc_does_not_grow(tf_records):
    need_system_package(preload.missing({"LD_PRELOAD": TCMALLOC}))
    rec = tf_records[("shuffle_fragmentation", "fixed")]
    assert rec["verdict"] == "no-leak", (rec["verdict"], rec["signals"], rec["error"])
    assert rec["metrics"]["rss_growth"]["slope"] < verdict.RSS_SLOPE_MIN
    assert rec["metrics"]["malloc_heap_unavailable"]  # tcmalloc: glibc's counts say nothing
    # ... so RSS decides, and the record says so
    assert rec["metrics"]["growth_basis"].startswith("rss")


def test_a_missing_allocator_fails_its_tests_under_ci_and_skips_elsewhere(monkeypatch):
    """make's setup installs the allocators (scripts/system-packages): in CI their absence is a
    broken set-up, so their tests fail rather than pass by skipping, as the browser tests do."""
    missing = preload.missing({"LD_PRELOAD": "libleakbench_absent.so.1"})
    assert missing is not None
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="libleakbench_absent.so.1.*CI=true"):
        need_system_package(missing)
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="libleakbench_absent.so.1"):
        need_system_package(missing)
    need_system_package(preload.missing({"LD_PRELOAD": "libc.so.6"}))  # there: the test goes on
