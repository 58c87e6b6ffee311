"""Verdicts: turn measured trends and peaks into one word of a closed set.

VERDICTS, spelled the same in code, JSON, CLI and asv:
    leak      a deciding signal grew with repetitions (held memory, memray's
              heap, threads, open files, Python objects, the GPU's bytes in
              use), or the peak scaled with size
    no-leak   every signal stayed within its threshold
    over-cap  the child's RSS passed the memory cap and it was killed
    fragmentation  RSS grew, but nothing was held: held memory stayed flat
              and malloc_trim gave at least half of it back
    hang      the child passed its timeout (the record names the phase); a run
              that stalls in teardown after its measurement is in keeps the
              measurement's verdict, the stall in record["teardown_stalled"]
    error     the scenario raised or the child crashed
    skipped   the scenario needs a device this machine lacks (REQUIRES = "GPU"
              and no GPU visible to TensorFlow): nothing measured, nothing
              wrong; the record's skip_reason says why

Thresholds, and why:
- A growth signal counts only if its rate passes a size threshold, the
  one-sided Mann–Kendall test gives p < TREND_P_MAX, and the growth is
  sustained. The rate is the least of the Theil–Sen slope of the whole series
  and of each of its halves (`rate`): a leak grows at its rate in both halves,
  while a single step (a buffer allocated once, a lazily created thread pool,
  a thread stack or an arena touched deeper once) lifts one half, not both,
  and lifts the whole series' slope too. The test alone flags a creep of a
  few pages an allocator makes. Measured (TF 2.21, tests' two children at
  once): the fixes of stateful_map and generator_epochs each stepped once by
  about 1 MiB in held memory, reading 110 and 233 KiB/repetition over the
  whole series against halves of 1.9-2.3; unbounded_interleave's fix read 239
  with halves of 151 and 21, oversized_prefetch's 228 with 28 and 54. A rule
  of half the threshold per half (the rule before) called the last two leaks.
- Held memory (probes.held_bytes: anonymous RSS less malloc's free bytes) is
  the memory signal the verdict rests on, HELD_SLOPE_MIN per repetition. RSS
  itself wanders with what glibc keeps free: on the fixes here it moved -3.4
  to +8.0 MiB/repetition between runs, and malloc's free bytes moved with it
  to within 26 KiB, while held memory moved 1.4-14 KiB/repetition and every
  leak kept its whole size in it (docs/measurements.md, "Held memory").
  The bar is set from measured noise (results/calibration and
  results/repeatability, made by `leakbench calibrate` and `leakbench repeat`).
- RSS_SLOPE_MIN, 256 KiB/repetition, is the RSS rule the verdict falls back
  to where held memory is n/a (jemalloc or tcmalloc preloaded: mallinfo2 does
  not describe their heap); the record says so in metrics["growth_basis"].
  Elsewhere RSS growth is context: it names fragmentation, never a leak.
- HEAP_SLOPE_MIN, 64 KiB/repetition: memray's heap excludes allocator slack
  but its pass has few repetitions (Settings.heap_reps).
- COUNT_SLOPE_MIN, 0.5 per repetition, for threads and open files: counts are
  exact, so any steady rise of one every two repetitions is real; each live
  tf.data iterator holds about 4 threads on TF 2.21 (docs/measurements.md, "TensorFlow").
- OBJECT_SLOPE_MIN, 8 per repetition, for the objects Python's collector
  tracks: exact too, but a bounded pipeline may keep a few (TensorFlow's
  function registries). Every fix and calibration control read 0.0
  objects/repetition on TF 2.21, py_function_map's scenario 2.0 (a release
  where #61344 is fixed); the leaks read 25 (dataset_per_step) to 1,260
  (retracing), and tensorflow/tensorflow#37653 133 in generator_per_step (4
  datasets per repetition, ~33 each). TensorFlow's own MemoryChecker and
  assert_no_new_pyobjects_executing_eagerly decide on the same counts.
- GPU_SLOPE_MIN, 64 KiB/repetition, for the GPU allocator's bytes in use
  (tf.config.experimental.get_memory_info("GPU:0")["current"], read only
  where TensorFlow sees a GPU): like memray's heap it counts live tensors'
  bytes, not the memory TensorFlow reserved from the driver, so it takes the
  same bar. Untested: no GPU here; the number is a reasoned start.
- Confirmation (psleak retests with more calls when memory grew): a leak
  that rests only on byte signals, either one alone or all with a rate within
  CONFIRM_MARGIN of their bar, is measured again in a fresh process with CONFIRM_REPS_FACTOR times the
  repetitions (leakbench.engine.measure), and stays a leak only if the same signal
  moves there too. Count signals are exact and never need it.
- Fragmentation (tensorflow/tensorflow#44176 and many threads like it):
  nothing that holds memory moved (held memory, memray's heap, threads, open
  files, Python objects), glibc's counters are measurable, and malloc_trim at
  the end gave back either at least TRIM_SHARE_MIN of the RSS growth over the
  measured repetitions, where RSS moved as a growth signal (RSS_SLOPE_MIN,
  the trend test) by at least TRIM_HELD_MIN and malloc's free bytes
  (mallinfo2 fordblks) rose by TRIM_SHARE_MIN of that growth too, or at least
  TRIM_SHARE_MIN of the RSS held above the process before setup and at least
  TRIM_HELD_MIN bytes. The second form is what glibc does under a per-epoch
  shuffle of small tensors on TF 2.21: RSS jumps up and down by a hundred MiB
  between epochs (glibc trims its main heap now and then) at a plateau
  hundreds of MiB above what is in use, so no per-repetition trend passes the
  test, yet the trim gives most of it back: 317.7 of 417 MiB (76 %) in the
  TF 2.21.0 record (results/records/vm/tf-2.21.0.jsonl), 172-463 MiB across
  releases. TRIM_HELD_MIN, 32 MiB like PEAK_RISE_MIN: the trim gives back
  0-16 MiB in every other pair of that record, leaky or fixed, and the fixes'
  RSS creeps by a few MiB over 12 repetitions in some runs and not in others. Freed memory the
  allocator kept is not a leak: the trim proves the pages were free.
- Peak scaling: the peak above baseline (the kernel's VmHWM through the
  measured repetitions, exact, spikes included) is measured at SIZE_PARAM ×
  SCALES (1 and 4; leakbench.engine.measure says why two sizes), each in a fresh
  child. A peak of setup and warm-up alone was weighed and left out: it
  made group_by_window_keys' leak flip (see leakbench.engine.measure). A held-memory peak, sampled
  on a thread every 10 ms, was weighed and left out: it missed most of
  full_shuffle_buffer's peak (10 -> 36 MiB against VmHWM's 39 -> 152 MiB),
  and spikes made while Python code holds the GIL, and each of its reads
  walks every free chunk under the arena's lock. oversized_prefetch's flip
  was the scenario's, not VmHWM's: see its docstring. The pair scales if
  the log–log exponent is >= PEAK_EXPONENT_MIN (0 bounded, 1 proportional) and the peak rose by >= PEAK_RISE_MIN between the
  smallest and the largest size, so that noise on a small peak cannot pass.
"""
from __future__ import annotations

from leakbench import metrics as registry
from leakbench.metrics import (COUNT_SLOPE_MIN, GPU_SLOPE_MIN, HEAP_SLOPE_MIN, HELD_SLOPE_MIN,  # noqa: F401
                               OBJECT_SLOPE_MIN, PEAK_RISE_MIN, RSS_SLOPE_MIN)
from leakbench.units import MIB

# The closed set of verdicts, each with what it means: the one text every view shows.
VERDICTS = {
    "leak": "a signal grew with every repetition, or the peak grew with the data",
    "no-leak": "every signal stayed within its threshold",
    "fragmentation": "RSS grew but nothing was held (held memory, memray's heap, threads, open files and "
                     "Python objects stayed flat) and malloc_trim gave the memory back: freed memory the "
                     "allocator kept, not a leak",
    "over-cap": "killed past the memory cap",
    "hang": "killed past the timeout",
    "error": "the scenario raised or its process crashed",
    "skipped": "not measured: the scenario needs a device this machine lacks (REQUIRES)",
}

TREND_P_MAX = 0.01
PEAK_EXPONENT_MIN = 0.5
TRIM_SHARE_MIN = 0.5
TRIM_HELD_MIN = 32 * MIB
CONFIRM_MARGIN = 2.0
CONFIRM_REPS_FACTOR = 1.5

# metric key -> (signal name, threshold in the metric's unit), from the registry (leakbench.metrics).
# These decide; with glibc's counters n/a, RSS_FALLBACK takes held memory's place.
GROWTH_SIGNALS = {m.key: (m.signal, m.threshold) for m in registry.METRICS if m.signal and not m.fallback}
RSS_FALLBACK = {m.key: (m.signal, m.threshold) for m in registry.METRICS if m.fallback}
# Signals counted in objects (exact): a move of theirs is never marginal.
COUNT_SIGNALS = tuple(m.signal for m in registry.METRICS if m.signal and m.counts)


def deciding_signals(metrics: dict) -> dict:
    """The growth signals that decide for these metrics: GROWTH_SIGNALS, with RSS
    (RSS_FALLBACK) in place of held memory where glibc's counters are n/a."""
    if not metrics.get("malloc_heap_unavailable"):
        return GROWTH_SIGNALS
    return {**RSS_FALLBACK, **{k: v for k, v in GROWTH_SIGNALS.items() if k != "held_growth"}}


def growth_basis(metrics: dict) -> str:
    """Which memory series the verdict rests on, in words, for the record and reports."""
    if metrics.get("malloc_heap_unavailable"):
        return f"rss (held memory n/a: {metrics['malloc_heap_unavailable']})"
    return "held"


def rate(trend: dict) -> float:
    """A trend's sustained rate of growth, in its unit per repetition: the least of the
    slope of the whole series and of each half (a step lifts one half only)."""
    return min(trend["slope"], trend["first_half"], trend["second_half"])


def moved(trend: dict | None, threshold: float) -> bool:
    """True if a trend (as in estimate.Trend.as_dict) passes both its rate threshold and its test."""
    if not trend:
        return False
    return rate(trend) >= threshold and trend["p_increasing"] < TREND_P_MAX


def peak_scales(exponent: float | None, peaks: list) -> bool:
    """True if the peak above baseline (bytes, one per size) scales with the size parameter."""
    known = [p for p in peaks if p is not None]
    if exponent is None or len(known) < 2:
        return False
    return exponent >= PEAK_EXPONENT_MIN and known[-1] - known[0] >= PEAK_RISE_MIN


def moved_signals(metrics: dict) -> list[str]:
    """Names of the deciding signals that moved, and "peak" if the peak scaled."""
    signals = [name for key, (name, threshold) in deciding_signals(metrics).items()
               if moved(metrics.get(key), threshold)]
    scaling = metrics.get("peak_scaling")
    if scaling and peak_scales(scaling["exponent"], scaling["peaks_bytes"]):
        signals.append("peak")
    return signals


def decide(statuses: list[str], metrics: dict) -> tuple[str, list[str]]:
    """Verdict and the signals that moved, from run statuses and computed metrics.

    statuses: status of each child run in order ("ok", "over-cap", "hang", "error").
    metrics: as built by leakbench.analysis.record; trends under GROWTH_SIGNALS' keys,
    "peak_scaling" with "exponent" and "peaks_bytes".

    The verdict is the first status that is not "ok" (over-cap, hang, error,
    skipped), else leak, fragmentation or no-leak. A fragmentation's signals
    are ["rss"] when RSS grew by its rule (what grew, though nothing held).
    Signals are given whenever metrics are, so a run that hung in teardown
    after its measurement still says what moved.
    """
    signals = moved_signals(metrics)
    failed = next((status for status in statuses if status != "ok"), None)
    if failed:
        return failed, signals
    if signals:
        return "leak", signals
    rss_grew = "held_growth" in deciding_signals(metrics) and moved(metrics.get("rss_growth"), RSS_SLOPE_MIN)
    if fragmented(metrics, grew=rss_grew):
        return "fragmentation", ["rss"] if rss_grew else []
    return "no-leak", []


def needs_confirmation(metrics: dict, signals: list[str]) -> bool:
    """True if a leak rests only on byte signals, and either on one of them alone or
    on rates all within CONFIRM_MARGIN of their bars.

    A count signal (exact), a peak that scales, or two byte signals (held memory
    and memray's heap) that moved, one of them past twice its bar, are evidence
    enough; anything less is measured again (leakbench.engine.measure). One byte signal
    alone, however far past its bar, is not: oversized_prefetch's fix, whose prefetch(AUTOTUNE) buffer
    widens by a batch now and then, read held memory +381 KiB/repetition in both
    halves in 1 of 6 runs with three TF processes on the 2 cores (TF 2.21; heap
    +2.0), against 1.7-19.5 in the other five.
    """
    if not signals or "peak" in signals or any(s in COUNT_SIGNALS for s in signals):
        return False
    if len(signals) == 1:
        return True
    table = {name: (key, threshold) for key, (name, threshold) in deciding_signals(metrics).items()}
    return all(rate(metrics[table[s][0]]) < CONFIRM_MARGIN * table[s][1] for s in signals)


def confirmed(first: list[str], again: list[str]) -> list[str]:
    """The signals that moved in a run and in its confirmation: a leak only if any remain."""
    return [s for s in first if s in again]


def fragmented(metrics: dict, grew: bool = True) -> bool:
    """True if malloc_trim gave back most of what RSS gained (bytes), on glibc.

    grew: RSS moved as a growth signal; then the trim must give back
    TRIM_SHARE_MIN of the growth over the measured repetitions, malloc's
    free bytes (mallinfo2 fordblks) must have risen by TRIM_SHARE_MIN of it
    too, and the growth must reach TRIM_HELD_MIN: a creep of a few MiB comes
    and goes between runs of the same fix. Either way, giving back TRIM_SHARE_MIN of the RSS held
    above the process before setup, and at least TRIM_HELD_MIN, counts (see
    the module docstring).
    """
    returned = metrics.get("trim_returned_bytes")
    if metrics.get("malloc_heap_unavailable") or returned is None:
        return False
    grown, held = metrics.get("rss_growth_bytes"), metrics.get("rss_held_bytes")
    freed = metrics.get("malloc_free_growth_bytes")
    if (grew and grown and grown >= TRIM_HELD_MIN and freed is not None
            and min(returned, freed) >= TRIM_SHARE_MIN * grown):
        return True
    return bool(held) and returned >= TRIM_HELD_MIN and returned >= TRIM_SHARE_MIN * held
