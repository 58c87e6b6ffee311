"""The settings of one measurement (Settings), and the rules that check them.

Repetition counts are per child run; caps are in bytes, timeouts in seconds. A Settings that
cannot measure raises SettingsError (a ValueError), one line naming the setting; every face
(the CLI, the pytest plugin, calibrate, bisect) shows it. leakbench.measure runs a measurement
at these settings; this module imports only the engine and the base, never it (docs/layout.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields, replace

from leakbench.contract_rules import MIN_SERIES
from leakbench.engine import memlimit, runner
from leakbench.units import GIB, MAX_BYTES, MAX_BYTES_TEXT

# The cap where a measurement must not depend on the machine's RAM (Settings.cap_bytes 0: half
# of it): the published records (`leakbench publish`), the gate's re-measurements, `leakbench
# calibrate` and the pytest plugin. Several times the largest peak of a pair
# (docs/measurements.md, "Committed results"); the timeout is Settings.timeout_seconds.
FIXED_CAP_BYTES = 4 * GIB


# The bounds of a measurement's repetitions. A trend needs MIN_SERIES points at least
# (Mann–Kendall's smallest p for n points is 1/n!: leakbench.contract_rules); past MAX_REPS,
# a typo.
MIN_REPS = MIN_SERIES
MAX_REPS = 10_000
MIN_SECONDS = 1.0  # the least timeout: a child takes longer than that to start


class SettingsError(ValueError):
    """Settings that cannot measure: `setting` (a Settings field) and its `problem`, one line.

    Every face refuses with it, and names a setting its own way (the CLI `--heap-reps`, the
    pytest plugin `heap_reps`, its ini file `leakbench_heap_reps`): line(names) is the one message
    in a face's names (a field's own name where `names` has none), and str() is line(names).
    A problem that names another setting writes it {field}; line() names it too.
    """

    def __init__(self, setting: str, problem: str, names: Mapping[str, str] | None = None):
        self.setting = setting
        self.problem = problem
        super().__init__(self.line(names or {}))

    def line(self, names: Mapping[str, str]) -> str:
        problem = self.problem
        for field in fields(Settings):
            problem = problem.replace(f"{{{field.name}}}", names.get(field.name, field.name))
        return f"{names.get(self.setting, self.setting)}: {problem}"


@dataclass(frozen=True)
class Settings:
    """How to measure. Repetition counts are per child run; bytes and seconds as named.

    Every rule of a measurement's settings is here (check, run as one is made): the CLI, the
    pytest plugin, calibrate and bisect build a Settings and show its SettingsError, so each
    refuses a setting alike.
    """

    warmup: int = 3
    reps: int = 12
    heap_reps: int = 6
    cap_bytes: int = 0  # 0: memlimit.default_cap_bytes()
    # per step: the most a child may go without progress (runner.ChildRun)
    timeout_seconds: float = 300.0
    scales: tuple = (1, 4)  # see leakbench.measure's docstring
    # after the result is in: see runner.ChildRun
    teardown_timeout_seconds: float = runner.TEARDOWN_TIMEOUT_SECONDS
    flamegraph_dir: str | None = None  # write memray's flame graph of retained allocations here

    def __post_init__(self):
        self.check()

    def check(self) -> None:
        """Raise SettingsError (one line) for the first setting that cannot measure."""
        for name, rule in _RULES:
            problem = rule(self)
            if problem:
                raise SettingsError(name, problem)

    def stored(self) -> dict:
        """These settings as records and result files keep them: JSON types (a tuple reads back
        as a list), without flamegraph_dir (where a graph
        goes is not how the pipeline was measured)."""
        return json.loads(
            json.dumps({k: v for k, v in asdict(self).items() if k != "flamegraph_dir"})
        )

    def resolved(self) -> Settings:
        cap = self.cap_bytes or memlimit.default_cap_bytes()
        return replace(self, cap_bytes=cap, scales=tuple(self.scales))

    def child_run(
        self, env: dict | None = None, child_options: dict | None = None
    ) -> runner.ChildRun:
        """One child run at these settings (runner.ChildRun; cap_bytes as they are: resolve first),
        with the heap pass; env and child_options as runner.ChildRun takes them."""
        return runner.ChildRun(
            warmup=self.warmup,
            reps=self.reps,
            heap_reps=self.heap_reps,
            cap_bytes=self.cap_bytes,
            timeout_seconds=self.timeout_seconds,
            teardown_timeout_seconds=self.teardown_timeout_seconds,
            env=env,
            child_options=child_options,
        )


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _whole(value, least: int, most: int) -> str | None:
    """What is wrong with a repetition count, or None."""
    if not _is_int(value):
        return f"{_shown(value)} is not a whole number"
    if not least <= value <= most:
        return f"{value} is not from {least} to {most}"
    return None


def _reps(s: Settings) -> str | None:
    if _is_int(s.reps) and 0 <= s.reps < MIN_REPS:
        return f"{s.reps} is too few for a trend; use at least {MIN_REPS}"
    return _whole(s.reps, MIN_REPS, MAX_REPS)


def _heap_reps(s: Settings) -> str | None:
    if _is_int(s.heap_reps) and 0 < s.heap_reps < MIN_REPS:
        return (
            f"{s.heap_reps} is too few for a heap trend; "
            f"use 0 to skip the pass, or at least {MIN_REPS}"
        )
    return _whole(s.heap_reps, 0, MAX_REPS)


def _cap(s: Settings) -> str | None:
    if not _is_int(s.cap_bytes) or s.cap_bytes < 0:
        return f"{_shown(s.cap_bytes)} is not a whole number of bytes (0: the machine's default)"
    if s.cap_bytes > MAX_BYTES:
        return f"{s.cap_bytes} is more than {MAX_BYTES_TEXT}"
    return None


def _seconds(value) -> str | None:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return f"{_shown(value)} is not a number of seconds"
    if not math.isfinite(value):  # nan passes every comparison; inf is a deadline that never comes
        return f"{value} is not a finite number of seconds"
    if value < MIN_SECONDS:
        return f"{value:g} s is less than {MIN_SECONDS:g} s"
    return None


def _scales(s: Settings) -> str | None:
    try:
        scales = tuple(s.scales)
        shown = ",".join(f"{x:g}" for x in scales)
    except (TypeError, ValueError):
        return f"{_shown(s.scales)} is not a list of numbers"
    # nan passes every comparison below; inf overflows sizes
    if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in scales):
        return f"{shown} holds a number that is not finite"
    if (
        len(scales) < 2
        or any(x <= 0 for x in scales)
        or any(b <= a for a, b in zip(scales, scales[1:]))
    ):
        # a peak pair compares its smallest and largest size: out of order, it reads no-leak
        return f"{shown} is not two or more positive multiples in increasing order, e.g. 1,4"
    return None


def _flamegraph_dir(s: Settings) -> str | None:
    if s.flamegraph_dir is not None and s.heap_reps == 0:
        return "the flame graph is drawn from the heap pass; {heap_reps} 0 skips it"
    return None


def _shown(value) -> str:
    """A value for a message: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


# Settings.check's rules, in the fields' order: (field, rule), each None or the problem.
_RULES: tuple[tuple[str, Callable[[Settings], str | None]], ...] = (
    ("warmup", lambda s: _whole(s.warmup, 0, MAX_REPS)),
    ("reps", _reps),
    ("heap_reps", _heap_reps),
    ("cap_bytes", _cap),
    ("timeout_seconds", lambda s: _seconds(s.timeout_seconds)),
    ("scales", _scales),
    ("teardown_timeout_seconds", lambda s: _seconds(s.teardown_timeout_seconds)),
    ("flamegraph_dir", _flamegraph_dir),
)
