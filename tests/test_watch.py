"""leakbench.watch and leakbench.online: the engine's verdict, online, in the job's own process.

The pure tests feed the judge series whose verdict the engine's rules fix, and run a watch on a
plain-Python loop in this process (small: a few MiB at most). The `tf` tests run three non-Keras
pairs' leaky and fixed sides under the loop watcher, each in a capped, timed child
(tests/watched.py), and compare with `leakbench run`'s committed verdict on the same release.
"""

from __future__ import annotations

import pytest
from watched import assert_reads_as_run

from leakbench import metrics as registry
from leakbench.analysis import looks
from leakbench.online import SAMPLED, Judge
from leakbench.settings import Settings, SettingsError
from leakbench.units import KIB
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
    assert "python objects" in done[0].signals and done[0].decision["source"] == "first run"


def test_bytes_alone_are_confirmed_over_the_engines_longer_look():
    judge = Judge(REPS)
    assert feed(judge, REPS, held=64 * KIB) == []  # moved: measured again, as the engine does
    assert judge.left() == looks.confirmation_reps(REPS)
    done = feed(judge, looks.confirmation_reps(REPS), held=64 * KIB)
    assert [r.verdict for r in done] == ["leak"] and done[0].signals == ["held"]
    assert done[0].decision["source"] == "confirmation" and "steadily" in done[0].why


def test_flat_series_read_no_leak_and_a_new_round_starts():
    judge = Judge(REPS)
    done = feed(judge, 2 * REPS)
    assert [r.verdict for r in done] == ["no-leak", "no-leak"]
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


def test_the_decorator_steps_per_call_and_the_budget_widens_the_stride():
    w = watch(every=1, budget=0.01)

    @w
    def one_step():
        return 1  # no work: a sample costs far more than 1 % of it

    for _ in range(Settings().warmup + 5):
        one_step()
    assert one_step.watch is w and w.stride > 1 and w.result().sample == f"{w.stride} steps"


def test_a_kept_buffer_reads_leak_in_this_process():
    kept = []
    w = Watch(budget=None, causes=False)
    # the whole protocol: a confirmation that does not decide asks for the extension (a CI run
    # in a busy pytest process stopped after the confirmation, undecided, with 72 samples left)
    protocol = REPS + looks.confirmation_reps(REPS) + looks.extension_reps(REPS)
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
