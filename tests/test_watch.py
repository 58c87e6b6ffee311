"""leakbench.watch and leakbench.online: the engine's verdict, online, in the job's own process.

The pure tests feed the judge series whose verdict the engine's rules fix, and run a watch on a
plain-Python loop in this process (small: a few MiB at most). The `tf` tests run three non-Keras
pairs' leaky and fixed sides under the loop watcher, each in a capped, timed child
(tests/watched.py), and compare with `leakbench run`'s committed verdict on the same release.
"""

from __future__ import annotations

import random

import pytest
from watched import assert_reads_as_run

from leakbench import metrics as registry
from leakbench.analysis.judge import sequential
from leakbench.analysis.judge.sequential import SAMPLED, Judge
from leakbench.settings import Settings, SettingsError
from leakbench.units import KIB, MIB
from leakbench.watch import Watch, watch

REPS = Settings().reps


def flat(i: int, held: float = 0.0, objects: float = 0.0) -> dict:
    """Sample i of a job growing by `held` bytes and `objects` objects per sample."""
    base = {name: 100 for name in SAMPLED}
    noise = (i * 7919) % 5 * KIB  # a few KiB of wander, no trend
    return {
        **base,
        "held_bytes": 10**8 + i * held + noise,
        "rss_bytes": 2 * 10**8 + noise,
        "malloc_used_bytes": 10**7 + i * held,
        "python_objects": 10**5 + int(i * objects),
    }


def feed(judge: Judge, samples: int, **growth) -> list:
    return [r for r in (judge.add(flat(i, **growth)) for i in range(samples)) if r is not None]


def test_a_count_signal_decides_at_the_first_look():
    done = feed(Judge(REPS), REPS, objects=100)
    assert [(r.verdict, r.samples) for r in done] == [("leak", REPS)]
    assert "python objects" in done[0].signals and done[0].decision["source"] == sequential.SOURCE


def test_a_steady_leak_of_four_bars_is_decided_within_24_samples():
    # the sequential rule (issue 42): a leak on bytes alone is no longer measured over the
    # engine's fixed 36 + 72 more samples, it is decided once its interval clears the bar
    bar = registry.HELD.threshold
    done = feed(Judge(REPS), 24, held=4 * bar)
    assert [r.verdict for r in done] == ["leak"] and done[0].signals == ["held"]
    assert done[0].samples <= 24 and "over the bar" in done[0].why


def wandering_samples(n: int, seed: int, shape) -> list[dict]:
    """n samples of a flat job with a few KiB of random wander, plus shape(i) bytes."""
    rng = random.Random(seed)
    return [
        flat(0)
        | {
            "held_bytes": 10**8 + rng.uniform(0, 8 * KIB) + shape(i),
            "malloc_used_bytes": 10**7 + rng.uniform(0, 8 * KIB) + shape(i),
        }
        for i in range(n)
    ]


def test_one_step_is_no_leak_over_500_samples():
    judge = Judge(REPS)
    shape = lambda i: 4 * MIB * (i >= 40)  # noqa: E731
    done = [r for r in map(judge.add, wandering_samples(500, 7, shape)) if r is not None]
    assert done and all(r.verdict == "no-leak" for r in done)


# a tooth is a leak until its drop: no rule can tell a tooth longer than the samples it reads a
# leak from, so a watch that must not read teeth of up to 200 samples waits for 270 (3/4 of it)
LONG_TEETH = 270


@pytest.mark.parametrize("period", [10, 30, 60, 120])
def test_a_sawtooth_is_never_a_leak_over_500_samples(period):
    judge = Judge(REPS, span=LONG_TEETH)
    shape = lambda i: 64 * KIB * (i % period)  # noqa: E731  a buffer grown, then cleared
    done = [r for r in map(judge.add, wandering_samples(500, 7, shape)) if r is not None]
    assert all(r.verdict == "no-leak" for r in done)


def test_a_leak_that_starts_late_is_read_within_the_window():
    judge = Judge(REPS)
    bar = registry.HELD.threshold
    shape = lambda i: 4 * bar * max(0, i - 300)  # noqa: E731  300 flat samples, then 4 bars
    samples = wandering_samples(300 + sequential.WINDOW, 7, shape)
    done = [(r.verdict, i) for i, r in enumerate(map(judge.add, samples)) if r is not None]
    first = next(i for word, i in done if word == "leak")  # a leak is final: the watch stops
    assert first - 300 < sequential.WINDOW  # its bound: WINDOW samples after the leak began
    assert all(word == "no-leak" for word, i in done if i < first)


def cheap(i: int, held: float, malloc: float) -> dict:
    """Sample i as a cheap sample takes it (pymalloc, allocated bytes and objects unread):
    held memory and malloc's bytes in use moving by `held` and `malloc` bytes a sample."""
    noise = (i * 7919) % 5 * KIB
    unread = {"pymalloc_used_bytes": None, "allocated_bytes": None, "python_objects": None}
    return (
        flat(i)
        | unread
        | {
            "held_bytes": 10**8 + i * held + noise,
            "malloc_used_bytes": 10**7 + i * malloc,
        }
    )


def test_held_memory_falling_under_an_allocating_job_is_no_no_leak():
    # a custom loop at 4 bars a step (scripts/watch-table): its tf.data buffers freed pages that
    # its kept arrays then reused, so held memory fell -83 KiB/rep over the first 12 samples
    # while malloc's bytes in use rose +54 KiB a sample; it read no-leak, and leak at 44
    bar = registry.HELD.threshold
    judge = Judge(REPS)
    done = [r for r in (judge.add(cheap(i, -6 * bar, 4 * bar)) for i in range(24)) if r]
    assert [r.verdict for r in done] == ["leak"] and done[0].samples <= 24
    assert done[0].decision["label"] == registry.MALLOC.label


def test_malloc_alone_never_settles_a_no_leak():
    # it misses pymalloc's small objects: where held memory has no trend, only allocated bytes
    # (read at a full sample) may settle the round
    judge = Judge(REPS)
    rng = random.Random(3)
    samples = [cheap(i, 0, 0) | {"held_bytes": 10**8 + rng.uniform(0, 4 * MIB)} for i in range(36)]
    assert [r for r in map(judge.add, samples) if r is not None] == []
    assert "bar of 13 KiB/rep" in (judge.pending or "")  # sampling on: neither way decided


def test_a_leak_read_between_full_samples_stands_only_after_a_collection():
    # a fixed Keras fit under load: cyclic garbage the collector had not reached grew held
    # memory about 16 KiB an epoch until a full sample's collection dropped it
    bar = registry.HELD.threshold
    garbage = [cheap(i, 2 * bar, 0) for i in range(60)]
    assert any(r.verdict == "leak" for r in map(Judge(REPS).add, garbage) if r)
    judge, level, collections, done = Judge(REPS), [0], [], []

    def collect() -> dict:  # the collector frees every cycle: held memory back to its start
        collections.append(level[0])
        level[0] = 0
        return flat(0) | {"held_bytes": 10**8}

    for _ in range(60):  # the garbage grows again from where the collection left it
        level[0] += 1
        found = judge.add(cheap(level[0], 2 * bar, 0) | {"python_objects": None}, collect)
        done += [found] if found else []
    assert collections and not any(r.verdict == "leak" for r in done)
    # a kept buffer is not garbage: the full sample still reads it, and the leak stands
    judge = Judge(REPS)
    kept = [cheap(i, 2 * bar, 0) for i in range(60)]
    done = [r for r in (judge.add(k, lambda k=k: k) for k in kept) if r]
    assert [r.verdict for r in done][-1:] == ["leak"] and done[-1].samples <= 24


def test_a_step_early_in_a_round_is_read_over_the_rounds_later_half():
    # a Keras predict loop: +28 MiB once near its 10th sample, then a creep under the bar; the
    # whole round's interval held over the bar for 206-258 samples after the growth stopped
    rng = random.Random(5)
    jump = [
        flat(i) | {"held_bytes": 10**8 + 28 * MIB * (i >= 6) + rng.uniform(0, 8 * KIB)}
        for i in range(60)
    ]
    done = [r for r in map(Judge(REPS).add, jump) if r is not None]
    assert done[0].verdict == "no-leak" and done[0].samples <= 2 * REPS + 2
    assert "later" in done[0].why and "over the whole round" in done[0].why
    # a leak goes on in the later half: never read no-leak there
    bar = registry.HELD.threshold
    done = feed(Judge(REPS), 4 * REPS, held=2 * bar)
    assert done[0].verdict == "leak" and "no-leak" not in [r.verdict for r in done]


def test_a_span_under_two_rounds_is_refused():
    with pytest.raises(ValueError):
        Judge(REPS, span=REPS)


def test_the_alpha_spent_over_every_look_is_at_most_alpha():
    assert sum(sequential.look_alpha(k) for k in range(1, 10**6)) <= sequential.ALPHA
    with pytest.raises(ValueError):
        sequential.look_alpha(0)


def test_flat_series_read_no_leak_and_a_new_round_starts():
    judge = Judge(REPS)
    done = feed(judge, 2 * REPS)
    assert [r.verdict for r in done] == ["no-leak", "no-leak"]  # each at its first look
    assert done[0].decision["bar"] == registry.HELD.threshold  # the registry's bar, per sample


def test_growth_under_the_bar_is_no_leak():
    assert [r.verdict for r in feed(Judge(REPS), REPS, held=4 * KIB, objects=2)] == ["no-leak"]


def test_a_watch_skips_its_warm_up_and_states_its_cost():
    w = Watch(every=2, budget=None)
    with w:
        for _ in range(2 * (Settings().warmup + REPS)):
            w.step()
    found = w.result()
    assert (found.samples, found.warmup, found.rounds) == (REPS, 3, 1)
    assert found.verdict == "no-leak" and found.sample == "2 steps"
    assert found.cost_per_sample_seconds > 0 and 0 < found.cost_share <= 1
    assert "s per sample" in found.text() and "no-leak" in found.text()


def test_the_decorator_steps_per_call_and_the_budget_spaces_full_samples_not_samples():
    """The judge's bars are per sample: a sample stays one boundary's work, however little work
    that is; the budget only makes full samples rarer."""
    w = watch(every=1, budget=0.01)

    @w
    def one_step():
        return 1  # no work: a full sample costs far more than 1 % of it

    for _ in range(Settings().warmup + 5):
        one_step()
    found = w.result()
    assert one_step.watch is w and found.sample == "1 step" and found.samples == 5
    assert w.full_every > 1


def test_a_kept_buffer_reads_leak_in_this_process():
    kept = []
    w = Watch(budget=None, causes=False)
    # the sequential rule stops once the evidence suffices; 120 samples give a busy pytest
    # process's wander room (the engine's fixed protocol took 12 + 36 + 72)
    protocol = 120
    for _ in range(Settings().warmup + protocol):
        kept.append(bytearray(256 * KIB))  # 256 KiB a sample
        w.step()
        if w.result().verdict is not None:
            break
    assert w.result().verdict == "leak" and "held" in w.result().signals


@pytest.mark.parametrize("bad", [{"every": 0}, {"budget": 2}, {"reps": 2}])
def test_settings_are_refused_in_one_line(bad):
    with pytest.raises((ValueError, SettingsError)) as err:
        Watch(**bad)
    assert "\n" not in str(err.value)


PAIRS = ["stateful_map", "dataset_per_step", "retracing"]


@pytest.mark.tf
@pytest.mark.parametrize("variant", ["leaky", "fixed"])
@pytest.mark.parametrize("pair", PAIRS)
def test_the_loop_watcher_reads_what_leakbench_run_reads(pair, variant, tmp_path):
    assert_reads_as_run("loop", pair, variant, tmp_path)


def test_a_look_keeps_no_memory_that_grows_with_the_samples():
    """Each look's Theil–Sen pairs are freed after it: the watch's process is the one measured.
    A cache of the last 64 sizes of pairs kept n(n-1)/2 pairs of 16 bytes each, so held memory
    rose about n KiB a sample and a fixed Keras fit read `leak` (scripts/watch-table)."""
    import tracemalloc

    from leakbench import metrics as registry
    from leakbench.analysis.judge import interval

    values = [13 * 1024 * i for i in range(interval.THIN)]
    interval.read(values, registry.HELD, 13 * 1024, 1e-3, 2)  # what a first look imports
    tracemalloc.start()
    try:
        for n in range(20, interval.THIN + 1):
            interval.read(values[:n], registry.HELD, 13 * 1024, 1e-3, 2)
        kept, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert kept < 64 * 1024, kept
