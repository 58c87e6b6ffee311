"""The online judge: the engine's protocol over a stream of samples taken in the user's process.

Used by leakbench.watch (custom loops) and leakbench.keras (the callback). It joins the engine's
probes (leakbench.engine.probes) and the analysis's rules, as leakbench.measure joins the
engine's child runs and the analysis (docs/layout.md).

What a sample reads (`sample`), after a full garbage collection as the engine's child does
(leakbench.engine.probes.sample): held memory (RssAnon less glibc malloc's free bytes,
probes.held_bytes; RssAnon is psutil's rss - shared, /proc/self/statm), RSS, malloc's bytes in
use (psutil.heap_info), threads, open file descriptors and Python objects (the objects the
collector tracks, frozen ones included). USS (it walks smaps, 3-14 ms) and memray's heap are
not read: neither decides alone.

How it decides (`Judge`): the engine's protocol, with one sample in place of one repetition.
A round of `reps` samples (settings.Settings.reps, 12) is read by the verdict's own rules
(analysis.verdict.moved_signals); a leak on a count signal is decided there; one on bytes
alone, or a no-leak that did not settle (looks.unsettled), is looked at again over
looks.confirmation_reps(reps) more samples (36) and, where that does not decide,
looks.extension_reps(reps) more (72), by looks.confirm and looks.extended. Every bar is the
registry's (leakbench.metrics), per sample. `fragmentation` is not read online (it needs a
malloc_trim and the process before setup): growth that malloc keeps free reads no-leak.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import Any

import psutil

from leakbench import metrics as registry
from leakbench.analysis import decision, estimate, looks, record, verdict
from leakbench.engine import probes

# The series a sample reads: each the name of a registry series (leakbench.metrics.SERIES).
SAMPLED = (
    "held_bytes",
    "rss_bytes",
    "malloc_used_bytes",
    "pymalloc_used_bytes",
    "allocated_bytes",
    "threads",
    "open_files",
    "python_objects",
)
FIRST, CONFIRMATION, EXTENSION = decision.SOURCES  # the phases of a round, as the record's looks


def sample(process: psutil.Process, objects: bool = True) -> dict:
    """One sample of SAMPLED, after a full garbage collection (gc.collect): bytes and counts.

    held_bytes: RssAnon (psutil rss − shared) less mallinfo2's fordblks (probes.held_bytes),
    None under another allocator; malloc_used_bytes: heap_used + mmap_used (psutil.heap_info),
    None likewise; pymalloc_used_bytes and allocated_bytes: probes.allocated; python_objects:
    len(gc.get_objects()) + gc.get_freeze_count(), None where `objects` is False.
    """
    gc.collect()
    mem = process.memory_info()
    unavailable = probes.malloc_heap_unavailable()
    free = None if unavailable else probes.heap_free_bytes()
    info = None if unavailable else psutil.heap_info()
    malloc_used = info.heap_used + info.mmap_used if info else None
    return {
        "held_bytes": probes.held_bytes(mem.rss - mem.shared, free),
        "rss_bytes": mem.rss,
        "malloc_used_bytes": malloc_used,
        **probes.allocated(malloc_used),
        "threads": process.num_threads(),
        "open_files": process.num_fds(),
        "python_objects": len(gc.get_objects()) + gc.get_freeze_count() if objects else None,
    }


def series_metrics(series: dict, unavailable: str | None) -> dict:
    """The metrics the verdict reads, from series of samples (one value per sample): the trend
    (estimate.trend, its unit per sample) of every registry metric whose series was sampled."""
    out: dict[str, Any] = {}
    for metric in registry.METRICS:
        values = series.get(metric.series) if metric.series else None
        found = estimate.trend(values) if values else None
        out[metric.key] = {**found.as_dict(), "unit": metric.unit} if found else None
    out["malloc_heap_unavailable"] = unavailable
    return out


@dataclass(frozen=True)
class Round:
    """One decided round: its verdict, the signals kept, the decision (analysis.decision's dict,
    its numbers per sample), the longer look's sentence (None without one) and its samples."""

    verdict: str
    signals: list[str]
    decision: dict
    why: str | None
    samples: int


class Judge:
    """The engine's protocol over a stream of samples (see the module docstring).

    reps: samples in a round's first look (the engine's repetitions); unavailable: why glibc's
    counters do not describe the heap (probes.malloc_heap_unavailable), None where they do.
    """

    def __init__(self, reps: int, unavailable: str | None = None):
        self.reps = reps
        self.unavailable = unavailable
        self._start_round()

    def _start_round(self) -> None:
        self.phase = FIRST
        self.series: dict[str, list] = {name: [] for name in SAMPLED}
        self.first: dict = {}
        self.candidates: list[str] = []
        self.taken = 0  # samples in this round so far, every phase

    def needed(self) -> int:
        """Samples the current phase needs before it decides."""
        if self.phase == FIRST:
            return self.reps
        if self.phase == CONFIRMATION:
            return looks.confirmation_reps(self.reps)
        return looks.extension_reps(self.reps)

    def left(self) -> int:
        """Samples still to take before the current phase decides."""
        return self.needed() - len(self.series[SAMPLED[0]])

    def add(self, taken: dict) -> Round | None:
        """Take one sample (as `sample` returns); a Round where it decided one, else None."""
        for name in SAMPLED:
            self.series[name].append(taken.get(name))
        self.taken += 1
        if self.left() > 0:
            return None
        series, self.series = self.series, {name: [] for name in SAMPLED}
        if self.phase == FIRST:
            return self._first(series)
        n = len(series[SAMPLED[0]])
        later = series_metrics(
            {k: looks.later_half(v) for k, v in series.items()}, self.unavailable
        )
        look: dict
        found: looks.Decision
        if self.phase == CONFIRMATION:
            found = looks.confirm(self.candidates, "ok", later, self.first, n)
            look = {"key": CONFIRMATION}
            if found.extend:
                self.phase = EXTENSION
                return None
        else:
            envelope = record.envelope_of({"series": series}, later)
            found = looks.extended(self.candidates, "ok", later, envelope, self.first, n)
            look = {"key": EXTENSION, "envelope": envelope}
        look.update(why=found.why, signals=found.again)
        return self._done(found.verdict, found.signals, self.first, later, look)

    def _first(self, series: dict) -> Round | None:
        metrics = series_metrics(series, self.unavailable)
        signals = verdict.moved_signals(metrics)
        if signals and not looks.needs_confirmation(signals):
            return self._done("leak", signals, metrics)
        unsettled = None if signals else looks.unsettled(metrics, signals)
        candidates = signals or ([unsettled] if unsettled else [])
        if not candidates:
            return self._done("no-leak", [], metrics)
        self.first, self.candidates, self.phase = metrics, candidates, CONFIRMATION
        return None

    def _done(self, word: str, signals: list[str], metrics: dict, later=None, look=None) -> Round:
        rec = {"verdict": word, "signals": signals, "metrics": metrics, "kind": "growth"}
        done = Round(
            word,
            list(signals),
            decision.decide(rec, later, look),
            (look or {}).get("why"),
            self.taken,
        )
        self._start_round()  # the next round starts afresh
        return done
