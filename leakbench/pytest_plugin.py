"""Assert in your own tests that a pipeline does not leak, with leakbench's engine and verdicts.

    from leakbench.pytest_plugin import assert_no_leak

    def test_input_pipeline_does_not_leak():
        assert_no_leak("my_project/input.py:make_dataset", cap="4GiB", timeout=300)

or with the marker, on a test whose body may be empty (the target is measured,
not the test function):

    @pytest.mark.leakbench_no_leak("my_project/input.py:make_dataset", cap="4GiB")
    def test_make_dataset(): ...

The target is what `leakbench check` takes: FILE.py:NAME or module:NAME (a
function returning a tf.data.Dataset, or a zero-argument function doing one
repetition), or a module-level function object, which is turned into
FILE.py:NAME. It runs in a fresh, capped, timed subprocess, as every
leakbench measurement does; a cap and a timeout are always passed (the
defaults below are explicit, never half of RAM). The assertion fails on any
verdict but `no-leak` (and `fragmentation`, which holds
nothing), with the verdict, slopes and hints in its message.

pytest loads the plugin (and its marker) by itself once leakbench is installed:
it is registered as a `pytest11` entry point in pyproject.toml.
"""

from __future__ import annotations

import inspect
import math
from pathlib import Path

from leakbench import expectation
from leakbench.analysis.schema import Record
from leakbench.check import run as check
from leakbench.measure import FIXED_CAP_BYTES, Settings
from leakbench.reporters import check as report
from leakbench.units import parse_size

DEFAULT_CAP = FIXED_CAP_BYTES  # explicit, not half of RAM: a test reads the same on every machine
DEFAULT_TIMEOUT_SECONDS = Settings.timeout_seconds


class LeakError(AssertionError):
    """A check target did not give `no-leak`; `record` holds the measurement."""

    def __init__(self, message: str, record: Record):
        super().__init__(message)
        self.record = record


def target_spec(target) -> str:
    """TARGET string for a spec string or a module-level function (FILE.py:NAME)."""
    if isinstance(target, str):
        return target
    if not callable(target) or "<locals>" in getattr(target, "__qualname__", "<locals>"):
        raise TypeError(
            f"{target!r}: give 'FILE.py:NAME', 'module:NAME' or a module-level function; "
            "the measured process imports it by name"
        )
    source = inspect.getsourcefile(target)
    if source is None:
        raise TypeError(f"{target!r}: no source file to load it from")
    return f"{Path(source)}:{target.__qualname__}"


def measure_target(
    target,
    *,
    cap: str | int = DEFAULT_CAP,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    reps: int = Settings.reps,
    warmup: int = Settings.warmup,
    heap_reps: int = Settings.heap_reps,
    teardown_timeout: float = Settings.teardown_timeout_seconds,
) -> Record:
    """The `leakbench check` record of `target` (cap:
    bytes or a size such as '4GiB'; timeout: seconds)."""
    cap_bytes = cap if isinstance(cap, int) else parse_size(cap)
    # nan fails too
    if cap_bytes <= 0 or not 0 < timeout < math.inf or not 0 < teardown_timeout < math.inf:
        raise ValueError("assert_no_leak needs a positive cap and finite, positive timeouts")
    settings = Settings(
        warmup=warmup,
        reps=reps,
        heap_reps=heap_reps,
        cap_bytes=cap_bytes,
        timeout_seconds=timeout,
        teardown_timeout_seconds=teardown_timeout,
    )
    return check.check(target_spec(target), settings)


def assert_no_leak(target, **settings) -> Record:
    """Measure `target` as `leakbench check` does; raise LeakError unless the record reads what a
    check target should (expectation.CHECK: `no-leak`, or `fragmentation`: RSS that malloc_trim
    gives back, nothing held by the pipeline). `skipped` (a scenario file that REQUIRES a GPU
    TensorFlow does not see, or preloads a library the machine lacks) skips the test.

    settings: cap, timeout, reps, warmup, heap_reps, teardown_timeout (see measure_target).
    Returns the record, for further assertions.
    """
    rec = measure_target(target, **settings)
    if rec["verdict"] == "skipped":  # a GPU or a preloaded library the machine lacks
        import pytest

        pytest.skip(f"leakbench: {rec['skip_reason']}")
    if not expectation.CHECK.accepts(rec):
        raise LeakError(report.check_summary(rec), rec)
    return rec


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers",
        "leakbench_no_leak(target, **settings): assert with leakbench that TARGET "
        "(FILE.py:NAME or module:NAME) does not leak, in a capped, timed subprocess",
    )


def pytest_runtest_call(item) -> None:
    marker = item.get_closest_marker("leakbench_no_leak")
    if marker is not None:
        (target,) = marker.args
        assert_no_leak(target, **marker.kwargs)
