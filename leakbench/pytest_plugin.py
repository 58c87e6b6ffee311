"""Assert in your own tests that a pipeline does not leak, with leakbench's engine and verdicts.

    from leakbench.pytest_plugin import assert_no_leak

    def test_input_pipeline_does_not_leak():
        assert_no_leak("my_project/input.py:make_dataset", cap="4GiB", timeout=300)

or with the marker, on the test whose own call is measured (its body is one repetition):

    @pytest.mark.leakbench_no_leak(cap="4GiB")
    def test_one_step():
        step(batch)

or on a test that names what to measure (a target, as `leakbench check` takes it):

    @pytest.mark.leakbench_no_leak("my_project/input.py:make_dataset", cap="4GiB")
    def test_make_dataset(): ...

A target is FILE.py:NAME or module:NAME (a function returning a tf.data.Dataset, or a
zero-argument function doing one repetition), or a module-level function object, which is turned
into FILE.py:NAME. It runs in a fresh, capped, timed subprocess, as every leakbench measurement
does: a cap and a timeout are always passed, the plugin's defaults (leakbench.pytest_settings:
DEFAULT_CAP, 4 GiB, not half of RAM; DEFAULT_TIMEOUT_SECONDS) unless a test or the ini file gives
others. The check fails on any verdict but `no-leak` (and `fragmentation`, which holds nothing).

In the manner of pytest-memray's markers: the marker's check runs in the test's call, once the
body has passed, and gives a small result (Measured) that renders itself into the test's report
section ("leakbench": the verdict, the number it rests on, slopes and hints) and, when it fails,
into the report's one-line longrepr; the terminal summary lists every measured test's verdict.
Defaults come from the command line (--leakbench-cap, ...) or the ini file (leakbench_cap, ...),
read as pytest-memray's value_or_ini reads them; a test's own keywords come first.

pytest loads the plugin (and its marker) by itself once leakbench is installed:
it is registered as a `pytest11` entry point in pyproject.toml.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from leakbench import expectation
from leakbench.analysis.judge import decision, in_words
from leakbench.analysis.record_type import Record
from leakbench.check import pipeline as check
from leakbench.pytest_settings import KEYWORDS, settings_of
from leakbench.reporters import check as report
from leakbench.settings import SettingsError

MARKER = "leakbench_no_leak"
SECTION = "leakbench"

# The sessions' configs, innermost last (pytester runs pytest inside pytest): assert_no_leak reads
# its defaults from the ini file of the session it runs in, and takes the built-in ones outside one.
_CONFIGS: list[pytest.Config] = []
_MEASURED = pytest.StashKey["Measured"]()


class LeakError(AssertionError):
    """A check target did not give `no-leak`; `record` holds the measurement."""

    def __init__(self, message: str, record: Record):
        super().__init__(message)
        self.record = record


@dataclass(frozen=True)
class Measured:
    """One target's measurement in a test, and how the report shows it."""

    target: str
    record: Record

    @property
    def passed(self) -> bool:
        """The verdict a check target should read (expectation.CHECK), or `skipped`."""
        return expectation.CHECK.accepts(self.record)

    @property
    def words(self) -> str:
        """The verdict and the number it rests on: "leak · held +1,028 KiB/rep"."""
        return in_words.words(decision.of(self.record))

    def as_section(self) -> tuple[str, str]:
        """The test report's section: the verdict and its number, signals, slopes and hints."""
        return SECTION, report.check_summary(self.record)

    def as_longrepr(self) -> str:
        """Why the test failed, in one line."""
        return (
            f"leakbench: {self.target} reads {self.words}; "
            f"a test passes on {expectation.CHECK.label}"
        )


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


def measure_target(target, *, config: pytest.Config | None = None, **settings) -> Record:
    """The `leakbench check` record of `target` (settings: KEYWORDS, as settings_of reads them;
    cap: bytes or a size such as '4GiB'; timeout: seconds). config: the session's, whose command
    line and ini file give the defaults (by default the running session's, if any)."""
    if config is None and _CONFIGS:
        config = _CONFIGS[-1]
    return check.check(target_spec(target), settings_of(config, **settings))


def assert_no_leak(target, **settings) -> Record:
    """Measure `target` as `leakbench check` does; raise LeakError unless the record reads what a
    check target should (expectation.CHECK: `no-leak`, or `fragmentation`: RSS that malloc_trim
    gives back, nothing held by the pipeline). `skipped` (a scenario file that REQUIRES a GPU
    TensorFlow does not see, or preloads a library the machine lacks) skips the test.

    settings: cap, timeout, reps, warmup, heap_reps, teardown_timeout (see settings_of).
    Returns the record, for further assertions.
    """
    rec = measure_target(target, **settings)
    _skip_if_skipped(rec)
    if not expectation.CHECK.accepts(rec):
        raise LeakError(report.check_summary(rec), rec)
    return rec


def _skip_if_skipped(rec: Record) -> None:
    if rec["verdict"] == "skipped":  # a GPU or a preloaded library the machine lacks
        pytest.skip(f"leakbench: {rec['skip_reason']}")


def _own_target(item: pytest.Function, function: Callable) -> str:
    """The test function itself as a target (FILE.py:NAME); TypeError where the child cannot
    call it: a method, or a function that takes fixtures."""
    takes = list(inspect.signature(function).parameters)
    if item.cls is not None or takes or "<locals>" in function.__qualname__:
        why = f"takes {', '.join(takes)}" if takes else "is not a module-level function"
        raise TypeError(
            "without a target it measures the test itself, called with no arguments in a fresh "
            f"process; {item.name} {why}: give it a target"
        )
    return target_spec(function)


def _check(item: pytest.Function, marker: pytest.Mark, function: Callable) -> Measured:
    """The marker's check: its target (or the test `function` itself) measured at its settings.
    A marker that cannot measure fails the test in one line, before anything runs."""
    try:
        if len(marker.args) > 1:
            raise TypeError(f"takes one target, got {len(marker.args)}")
        spec = target_spec(marker.args[0]) if marker.args else _own_target(item, function)
        settings = settings_of(item.config, **marker.kwargs)
    except (SettingsError, TypeError) as e:
        refused = f"{MARKER}: {e}"
    else:
        refused = ""
    if refused:  # outside the except: the line alone, not the exception it was made from
        pytest.fail(refused, pytrace=False)
    rec = check.check(spec, settings)
    _skip_if_skipped(rec)
    return Measured(spec, rec)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("leakbench", "leakbench (the leakbench_no_leak marker, assert_no_leak)")
    for keyword, k in KEYWORDS.items():
        name = f"leakbench_{keyword}"
        group.addoption(
            f"--{name.replace('_', '-')}", dest=name, default=None, metavar=k.metavar, help=k.help
        )
        parser.addini(name, k.help, default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(target=None, **settings): fail unless leakbench reads no-leak for TARGET "
        "(FILE.py:NAME or module:NAME), or without one for the test itself, "
        "in a capped, timed subprocess",
    )
    try:  # a bad default is refused once, before any test runs
        settings_of(config)
    except SettingsError as e:
        raise pytest.UsageError(f"leakbench: {e}") from None
    _CONFIGS.append(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    if config in _CONFIGS:
        _CONFIGS.remove(config)


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function):
    """With the marker, the test's call is its body, then the check (pytest-memray's manner)."""
    marker = pyfuncitem.get_closest_marker(MARKER)
    if marker is None:
        return (yield)
    body = pyfuncitem.obj

    @functools.wraps(body)
    def checked(*args, **kwargs):
        returned = body(*args, **kwargs)  # its own assertions first: a failing body is not measured
        measured = pyfuncitem.stash[_MEASURED] = _check(pyfuncitem, marker, body)
        # as record_property does: the call's report, the terminal summary and JUnit XML show it
        pyfuncitem.user_properties.append((SECTION, measured.words))
        return returned

    pyfuncitem.obj = checked
    try:
        return (yield)
    finally:
        pyfuncitem.obj = body


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """The call's report: the check's section, and a failure where its verdict is not one a test
    passes on."""
    rep = yield
    measured = item.stash.get(_MEASURED, None)
    if call.when == "call" and measured is not None:
        rep.sections.append(measured.as_section())
        if rep.passed and not measured.passed:
            rep.outcome = "failed"
            rep.longrepr = measured.as_longrepr()
    return rep


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    """One line per measured test: its verdict and the number it rests on."""
    lines = [
        f"{rep.nodeid}: {value}"
        for reports in terminalreporter.stats.values()
        for rep in reports
        if getattr(rep, "when", None) == "call"
        for name, value in rep.user_properties
        if name == SECTION
    ]
    if lines:
        terminalreporter.write_sep("=", SECTION)
        for line in lines:
            terminalreporter.write_line(line)
