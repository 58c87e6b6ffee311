"""What one child run produced (Outcome): leakbench.engine.runner makes one per run and
leakbench.engine.messages files the child's messages into it.

Here, apart from both, so that messages can name the type it fills without importing the runner,
which imports messages. leakbench.engine.runner re-exports it: callers read runner.Outcome.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Outcome:
    """What one child run produced. status: ok, over-cap, hang, error or skipped."""

    status: str
    phase: str | None
    params: dict
    wall_seconds: float
    max_rss_bytes: int = 0  # largest RSS of the child's tree the runner saw
    # the child's own peak RSS over its life, from the kernel
    peak_rss_bytes: int | None = None
    # what held the cap: "cgroup v1", "cgroup v2" (the kernel, the poll behind it) or "poll"
    cap_enforced_by: str | None = None
    cgroup_peak_bytes: int | None = None  # the most the run's cgroup was charged (page cache too)
    killed_by_kernel: bool = False  # an OOM kill at the cgroup's limit (else the poll's, if any)
    result: dict | None = None  # the child's "result" message
    samples: list = field(default_factory=list)  # samples received, also when the run was cut short
    teardown_seconds: float | None = None
    error: str | None = None
    # the child's "device" message (leakbench.engine.child._device)
    device: dict | None = None
    versions: dict | None = None  # ... and the versions it sent with it
    # why nothing was measured: REQUIRES a GPU and the child sees none, or (set by
    # leakbench.measure, with no child started) a library LD_PRELOAD names is missing
    skipped: str | None = None
