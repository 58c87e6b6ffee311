"""Samples taken in the user's process, for the online judge (analysis.judge.sequential), and
what the judged samples found (WatchResult).

Used by leakbench.watch (custom loops) and leakbench.keras (the callback), which hand each sample
to the judge and report a WatchResult. It joins the engine's probes (leakbench.engine.probes)
and the analysis's judge, as leakbench.measure joins the engine's child runs and the analysis
(docs/layout.md).

What a sample reads (`sample`): held memory (RssAnon less glibc malloc's free bytes,
probes.held_bytes; RssAnon is psutil's rss - shared, /proc/self/statm), RSS, malloc's bytes in
use (psutil.heap_info), threads and open file descriptors: the cheap reads, about 0.1 ms. A full
sample also runs a full garbage collection first, reads pymalloc's bytes (and so the bytes
malloc and pymalloc handed out, probes.allocated) and counts Python objects (the objects the
collector tracks, frozen ones included): 0.1-0.6 s with TensorFlow imported, so the watcher
takes it only as often as its budget allows (leakbench.watch); the series it alone fills are
read over the samples that have them, per sample. USS and memray's heap are not read.
"""

from __future__ import annotations

import gc
from dataclasses import asdict, dataclass, field

import psutil

from leakbench.analysis.judge import in_words
from leakbench.engine import probes

_NOT_READ = {"pymalloc_used_bytes": None, "allocated_bytes": None}


def sample(process: psutil.Process, objects: bool = True, full: bool = True) -> dict:
    """One sample of SAMPLED: bytes and counts. full: run a full garbage collection first
    (gc.collect), read pymalloc's bytes (sys._debugmallocstats, 0.5-25 ms) and count Python
    objects (where `objects`); else those three are None, and the sample costs about 0.1 ms.

    held_bytes: RssAnon (psutil rss − shared) less mallinfo2's fordblks (probes.held_bytes),
    None under another allocator; malloc_used_bytes: heap_used + mmap_used (psutil.heap_info),
    None likewise; pymalloc_used_bytes and allocated_bytes: probes.allocated; python_objects:
    len(gc.get_objects()) + gc.get_freeze_count().
    """
    if full:
        gc.collect()
    mem = process.memory_info()
    unavailable = probes.malloc_heap_unavailable()
    free = None if unavailable else probes.heap_free_bytes()
    info = None if unavailable else psutil.heap_info()
    malloc_used = info.heap_used + info.mmap_used if info else None
    counted = full and objects
    return {
        "held_bytes": probes.held_bytes(mem.rss - mem.shared, free),
        "rss_bytes": mem.rss,
        "malloc_used_bytes": malloc_used,
        **(probes.allocated(malloc_used) if full else _NOT_READ),
        "threads": process.num_threads(),
        "open_files": process.num_fds(),
        "python_objects": len(gc.get_objects()) + gc.get_freeze_count() if counted else None,
    }


@dataclass(frozen=True)
class WatchResult:
    """What a watch found so far, as data; `text` renders it.

    verdict: "leak", "no-leak" (every round so far), or None (no round decided yet). signals:
    the signals kept. decision: analysis.decision's dict of the deciding round (a leak's, else
    the last), its value per sample in its unit. why: the longer look's sentence. sample: what one
    sample is ("100 steps"). samples: taken, each judged;
    warmup: warm-up boundaries gone by, timed, not sampled; rounds:
    decided; left: samples before the judge's next look (1 once it looks at every sample: it
    stops as soon as the evidence decides, leakbench.online); pending: what the last look lacked,
    in words (each interval and the bar it spans), None before the first. cost_seconds:
    sampling's (and judging's) own wall time in all; cost_per_sample_seconds: its mean;
    watched_seconds: wall time since the watch started,
    sampling included. series: every sample's values by series name (SAMPLED), warm-ups included.
    causes: the known causes nearest a leak (leakbench.watch.name_causes, by
    leakbench.check.causes where that module is there), None where not looked for;
    causes_error: why the lookup failed.
    """

    verdict: str | None
    signals: list[str]
    decision: dict | None
    why: str | None
    sample: str
    samples: int
    warmup: int
    rounds: int
    left: int
    cost_seconds: float
    cost_per_sample_seconds: float | None
    watched_seconds: float
    series: dict = field(repr=False)
    causes: list | None = None
    causes_error: str | None = None
    pending: str | None = None

    @property
    def cost_share(self) -> float | None:
        """cost_seconds over watched_seconds (0.01 is 1 %), None before any time passed."""
        return self.cost_seconds / self.watched_seconds if self.watched_seconds > 0 else None

    def as_dict(self) -> dict:
        return {**asdict(self), "causes": [str(c) for c in self.causes or []] or self.causes}

    def text(self) -> str:
        """The report, a few lines: verdict and its number, what a sample is, the cost."""
        head = (
            in_words.words(self.decision)
            if self.decision and self.verdict
            else f"undecided · {self.pending}; sampling on"
            if self.pending
            else f"undecided · {self.left} more samples before the first look"
        )
        lines = [f"leakbench watch: {head} (a rep is one sample: {self.sample})"]
        if self.signals:
            lines.append(f"  signals: {', '.join(self.signals)}")
        if self.why:
            lines.append(f"  {self.why}")
        lines.append(
            f"  {self.samples} samples after {self.warmup} warm-ups, {self.rounds} rounds decided"
        )
        per = self.cost_per_sample_seconds
        share = self.cost_share
        lines.append(
            f"  cost: {per or 0:.3f} s per sample, {self.cost_seconds:.2f} s in all"
            + (f" ({share:.2%} of {self.watched_seconds:.1f} s watched)" if share else "")
        )
        for cause in self.causes or []:
            lines.append(f"  nearest known cause: {getattr(cause, 'pair', cause)}")
        return "\n".join(lines)

    __str__ = text
