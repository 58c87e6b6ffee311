"""The pytest plugin (leakbench.pytest_plugin), as pytest-memray's markers work: the marker measures
the test's own call (or the target it names) once the body has passed, its result renders into the
report's `leakbench` section and, on a failure, the one-line longrepr with the decision; defaults
come from the command line, then the ini file.

Each session here is a pytest of its own (pytester, in a subprocess, loading the plugin by its
pytest11 entry point as a user's pytest does), whose targets are pure Python (no TensorFlow), each
child capped at 1 GiB and timed at 60 s per step by the session's ini file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from leakbench import pytest_plugin, pytest_settings
from leakbench.settings import Settings, SettingsError

pytest_plugins = ["pytester"]

DATA = Path(__file__).parent / "data"
CHECK = DATA / "check_python.py"  # leaky: 1 MiB kept per call
# Short runs: 1 warm-up, 6 repetitions, no heap pass; every child capped and timed.
FAST_INI = """
[pytest]
leakbench_cap = 1GiB
leakbench_timeout = 60
leakbench_warmup = 1
leakbench_reps = 6
leakbench_heap_reps = 0
"""

MEASURED = f"""
import pytest
from leakbench.pytest_plugin import assert_no_leak

KEPT = []


@pytest.mark.leakbench_no_leak
def test_own_call_leaks():
    KEPT.append(bytearray(1 << 20))


@pytest.mark.leakbench_no_leak()
def test_own_call_is_fixed():
    bytearray(1 << 20)


@pytest.mark.leakbench_no_leak({str(CHECK) + ":leaky"!r})
def test_target_leaks():
    pass


@pytest.mark.leakbench_no_leak({str(CHECK) + ":bounded"!r}, reps=5)
def test_target_is_fixed():
    pass


def test_helper_reads_the_ini_file():
    rec = assert_no_leak({str(CHECK) + ":bounded"!r})
    assert rec["verdict"] == "no-leak"
    assert (rec["settings"]["reps"], rec["settings"]["cap_bytes"]) == (6, 1 << 30)
"""


@pytest.mark.timeout(240)
def test_leaky_fails_with_its_decision_and_fixed_passes_with_a_section(pytester):
    pytester.makeini(FAST_INI)
    pytester.makepyfile(test_measured=MEASURED)
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_subprocess("-rA", f"--junitxml={junit}", timeout=220)
    result.assert_outcomes(passed=3, failed=2)
    out = result.stdout.str()
    for name in ("test_own_call_leaks", "test_target_leaks"):
        # the longrepr: one line, the decision (verdict · the number it rests on)
        result.stdout.fnmatch_lines(
            [
                f"_*_ {name} _*_",
                "leakbench: *:* reads leak · held +* KiB/rep; "
                "a test passes on no-leak or fragmentation",
                "-*- leakbench -*-",  # the report's section: slopes and hints below
                "*: leak · held +* KiB/rep",
                "signals: held",
            ]
        )
    assert "Traceback" not in out and "LeakError" not in out
    result.stdout.fnmatch_lines(  # the terminal's section, one line per measured test
        [
            "=*= leakbench =*=",
            "test_measured.py::test_own_call_leaks: leak · held +* KiB/rep",
            "test_measured.py::test_target_leaks: leak · held +* KiB/rep",
            "test_measured.py::test_own_call_is_fixed: no-leak · held *",
            "test_measured.py::test_target_is_fixed: no-leak · held *",
        ],
        consecutive=True,
    )
    result.stdout.fnmatch_lines(["*PASSED test_measured.py::test_own_call_is_fixed*"])
    assert '<property name="leakbench" value="leak · held +' in junit.read_text()


def test_a_marker_that_cannot_measure_fails_its_test_in_one_line(pytester):
    """Nothing is measured: the test takes a fixture (the child calls it with no arguments), the
    marker's settings are refused (Settings' own line), it names two targets, or the body fails
    first. A target that needs a GPU the machine lacks skips the test."""
    pytester.makeini(FAST_INI)
    pytester.makepyfile(
        test_refused=f"""
        import pytest

        @pytest.mark.leakbench_no_leak
        def test_takes_a_fixture(tmp_path):
            pass

        @pytest.mark.leakbench_no_leak(reps=2, heap_reps=2)
        def test_too_few():
            pass

        @pytest.mark.leakbench_no_leak({str(CHECK) + ":leaky"!r}, "other.py:f")
        def test_two_targets():
            pass

        @pytest.mark.leakbench_no_leak
        def test_body_fails_first():
            assert 1 == 2

        @pytest.mark.leakbench_no_leak({str(DATA / "python_requires_gpu.py")!r})
        def test_needs_a_gpu():
            pass
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs", timeout=120)
    result.assert_outcomes(failed=4, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "leakbench_no_leak: without a target it measures the test itself, called with no "
            "arguments in a fresh process; test_takes_a_fixture takes tmp_path: give it a target",
            "leakbench_no_leak: reps: 2 is too few for a trend; use at least 5",
            "leakbench_no_leak: takes one target, got 2",
            "E       assert 1 == 2",
            "SKIPPED * leakbench: no GPU visible to TensorFlow*",
        ]
    )
    assert "=== leakbench ===" not in result.stdout.str()  # nothing was measured


def test_defaults_come_from_the_test_then_the_command_line_then_the_ini_file(pytester):
    pytester.makeini(FAST_INI + "leakbench_teardown_timeout = 5\n")
    config = pytester.parseconfig("--leakbench-reps=7", "--leakbench-cap=2GiB")
    assert pytest_plugin.settings_of(config) == Settings(
        warmup=1,
        reps=7,
        heap_reps=0,
        cap_bytes=2 << 30,
        timeout_seconds=60,
        teardown_timeout_seconds=5,
    )
    assert pytest_plugin.settings_of(config, reps=8, cap="3GiB").reps == 8
    assert pytest_plugin.settings_of(config, cap="3GiB").cap_bytes == 3 << 30
    # without an ini file or options: the plugin's own defaults, a fixed cap (not half of RAM)
    assert pytest_plugin.settings_of() == Settings(
        cap_bytes=pytest_settings.DEFAULT_CAP,
        timeout_seconds=pytest_settings.DEFAULT_TIMEOUT_SECONDS,
    )
    with pytest.raises(SettingsError, match=r"^--leakbench-reps: 3 is too few for a trend"):
        pytest_plugin.settings_of(pytester.parseconfig("--leakbench-reps=3"))


def test_a_bad_ini_value_stops_pytest_before_any_test(pytester):
    pytester.makeini(FAST_INI.replace("leakbench_heap_reps = 0", "leakbench_heap_reps = 2"))
    pytester.makepyfile(test_never="def test_never():\n    raise AssertionError('ran')\n")
    result = pytester.runpytest_subprocess(timeout=120)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    with pytest.raises(SettingsError) as caught:
        Settings(heap_reps=2)
    named = caught.value.line({"heap_reps": "leakbench_heap_reps"})
    assert named.startswith("leakbench_heap_reps: 2 is too few for a heap trend")
    assert result.stderr.lines[0] == f"ERROR: leakbench: {named}"
