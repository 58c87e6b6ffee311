"""Measure one scenario variant: one child run per size, then the record.

A "growth" scenario is run once at its parameters. A "peak" scenario is run
at SIZE_PARAM × each of `scales` (default 1, 2, 4), every size in a fresh
process, so the record can say how the peak above baseline scales with size.
The heap pass (memray) runs only at the first size: it is the costly pass.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

from leakbench import record, runner
from leakbench.catalog import Target


@dataclass(frozen=True)
class Settings:
    """How to measure. Repetition counts are per child run; bytes and seconds as named."""

    warmup: int = 3
    reps: int = 12
    heap_reps: int = 6
    cap_bytes: int = 0            # 0: runner.default_cap_bytes()
    timeout_seconds: float = 300.0
    scales: tuple = (1, 2, 4)
    teardown_timeout_seconds: float = 30.0  # after the result is in: see runner.run_child

    def resolved(self) -> "Settings":
        cap = self.cap_bytes or runner.default_cap_bytes()
        return replace(self, cap_bytes=cap, scales=tuple(self.scales))


def sizes(target: Target, params: dict, scales) -> list[dict]:
    """Parameter sets to run: one for growth scenarios, one per scale for peak scenarios."""
    if target.scenario.kind != "peak":
        return [params]
    key = target.scenario.size_param
    kind = type(params[key])
    return [{**params, key: kind(params[key] * s)} for s in scales]


def measure(target: Target, params: dict, settings: Settings, env: dict | None = None,
            on_message: Callable[[dict], None] | None = None, child_options: dict | None = None) -> dict:
    """Run `target` under `settings` and return its record (see leakbench.record).

    child_options: passed to every child run (runner.run_child); `leakbench check` uses it.

    Stops at the first size whose run is not ok (over-cap, hang, error): a
    larger size would only fail the same way, slower.
    """
    settings = settings.resolved()
    env = {**target.scenario.env, **(env or {})}
    missing = [lib for lib in env.get("LD_PRELOAD", "").replace(":", " ").split() if not Path(lib).exists()]
    if missing:  # the dynamic loader would only warn, and the run would measure the wrong allocator
        problem = runner.Outcome("error", "import", params, 0.0, error=(
            f"LD_PRELOAD names {', '.join(missing)}, which is not installed "
            "(Debian: apt-get install libjemalloc2 libtcmalloc-minimal4)"))
        return record.build(target.scenario, target.variant, params, asdict(settings), [problem])
    outcomes = []
    for i, run_params in enumerate(sizes(target, params, settings.scales)):
        outcome = runner.run_child(
            target.scenario.path, run_params, warmup=settings.warmup, reps=settings.reps,
            heap_reps=settings.heap_reps if i == 0 else 0, cap_bytes=settings.cap_bytes,
            timeout_seconds=settings.timeout_seconds,
            teardown_timeout_seconds=settings.teardown_timeout_seconds, env=env, on_message=on_message,
            child_options=child_options)
        outcomes.append(outcome)
        if outcome.status != "ok":
            break
    return record.build(target.scenario, target.variant, params, asdict(settings), outcomes)
