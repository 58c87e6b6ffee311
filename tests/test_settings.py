"""Every rule of a measurement's settings lives in leakbench.settings.Settings, and every face
refuses alike: the same bad settings built directly, through `leakbench run`, `check`,
`calibrate` and `bisect` (click's CliRunner), and through the pytest plugin's helper, give one
SettingsError's line, each naming the setting as that face does. Nothing is measured here: a
refusal comes before any child starts."""

from __future__ import annotations

import math

import pytest
from conftest import invoke, refused

from leakbench import pytest_plugin, pytest_settings
from leakbench.check import pipeline as check
from leakbench.cli.options import OPTION_NAMES
from leakbench.settings import Settings, SettingsError

SAFE = ["--cap", "1GiB", "--timeout", "60"]  # every command line here is capped and timed

# case -> (Settings' fields, the command line's options, the plugin's keywords): one bad setting
# (or, for reps_and_heap_reps, two: the first in Settings' order is the one refused)
CASES = {
    "reps too few": ({"reps": 2}, ["--reps", "2"], {"reps": 2}),
    "reps_and_heap_reps": (  # issue 32: assert_no_leak(reps=2, heap_reps=2) was accepted
        {"reps": 2, "heap_reps": 2},
        ["--reps", "2", "--heap-reps", "2"],
        {"reps": 2, "heap_reps": 2},
    ),
    "heap_reps too few": ({"heap_reps": 2}, ["--heap-reps", "2"], {"heap_reps": 2}),
    "reps too many": ({"reps": 10**6}, ["--reps", str(10**6)], {"reps": 10**6}),
    "warmup below 0": ({"warmup": -1}, ["--warmup", "-1"], {"warmup": -1}),
    "timeout under a second": (
        {"timeout_seconds": 0.5},
        ["--timeout", "0.5"],
        {"timeout": 0.5},
    ),
    "timeout nan": (
        {"timeout_seconds": math.nan},
        ["--timeout", "nan"],
        {"timeout": math.nan},
    ),
    "teardown_timeout inf": (
        {"teardown_timeout_seconds": math.inf},
        ["--teardown-timeout", "inf"],
        {"teardown_timeout": math.inf},
    ),
}


def refusal(fields: dict) -> SettingsError:
    with pytest.raises(SettingsError) as caught:
        Settings(**fields)
    return caught.value


@pytest.mark.parametrize("case", CASES)
def test_every_face_refuses_alike(case, checkout, monkeypatch):
    fields, options, keywords = CASES[case]
    error = refusal(fields)
    assert "\n" not in str(error) and str(error) == f"{error.setting}: {error.problem}"
    expected = {  # the one message, in each face's names
        "cli": f"leakbench: error: {error.line(OPTION_NAMES)}",
        "plugin": error.line(pytest_settings.KEYWORD_NAMES),
    }
    for command in (["run", "pyleak", *SAFE], ["check", "ok.py:bounded", *SAFE]):
        line = refused(invoke(*command, *options))
        assert line == expected["cli"], (command, line)

    def measured(*args, **kwargs):
        raise AssertionError("a refused setting must not be measured")

    monkeypatch.setattr(check, "check", measured)
    with pytest.raises(SettingsError) as caught:
        pytest_plugin.settings_of(**keywords)
    assert str(caught.value) == expected["plugin"]
    assert (caught.value.setting, caught.value.problem) == (error.setting, error.problem)
    for helper in (pytest_plugin.measure_target, pytest_plugin.assert_no_leak):
        with pytest.raises(SettingsError) as caught:
            helper("ok.py:bounded", **keywords)
        assert str(caught.value) == expected["plugin"]


@pytest.mark.parametrize(
    "command",
    [
        ["calibrate", "--holders", "python", "--cap", "1GiB"],
        ["bisect", "pyleak", "--good", "2.15.1", "--bad", "2.16.2"],  # refused before the network
    ],
)
def test_calibrate_and_bisect_refuse_a_timeout_as_settings_do(command, checkout):
    error = refusal({"timeout_seconds": 0.5})
    line = refused(invoke(*command, "--timeout", "0.5"))
    assert line == f"leakbench: error: {error.line(OPTION_NAMES)}"
    assert line == "leakbench: error: --timeout: 0.5 s is less than 1 s"


def test_a_problem_naming_another_setting_names_it_in_each_face(checkout, tmp_path):
    error = refusal({"flamegraph_dir": "graphs", "heap_reps": 0})
    assert str(error) == (
        "flamegraph_dir: the flame graph is drawn from the heap pass; heap_reps 0 skips it"
    )
    line = refused(
        invoke("run", "pyleak", *SAFE, "--heap-reps", "0", "--flamegraph-dir", str(tmp_path / "g"))
    )
    assert line == (
        "leakbench: error: --flamegraph-dir: the flame graph is drawn from the heap pass; "
        "--heap-reps 0 skips it"
    )
    assert not (tmp_path / "g").exists()  # refused before the folder is made


@pytest.mark.parametrize(
    "fields",
    [
        {"reps": 5, "heap_reps": 0, "warmup": 0},
        {"reps": 10_000, "heap_reps": 10_000, "warmup": 10_000},
        {"heap_reps": 5, "timeout_seconds": 1, "teardown_timeout_seconds": 1.0},
        {"cap_bytes": 0},  # the machine's default (memlimit), as the CLI's `--cap` left out
        {"scales": (1, 2, 4)},
    ],
)
def test_the_bounds_themselves_are_settings(fields):
    Settings(**fields)


@pytest.mark.parametrize(
    "fields, problem",
    [
        ({"reps": 6.0}, "6.0 is not a whole number"),
        ({"reps": True}, "True is not a whole number"),
        ({"cap_bytes": -1}, "-1 is not a whole number of bytes (0: the machine's default)"),
        ({"cap_bytes": 1 << 64}, f"{1 << 64} is more than 8 EiB"),
        ({"timeout_seconds": "60"}, "'60' is not a number of seconds"),
        ({"scales": (4, 1)}, "4,1 is not two or more positive multiples in increasing order"),
        ({"scales": (1, math.inf)}, "1,inf holds a number that is not finite"),
    ],
)
def test_settings_say_what_is_wrong_in_one_line(fields, problem):
    error = refusal(fields)
    assert error.problem.startswith(problem), error.problem
    assert isinstance(error, ValueError)  # callers that caught ValueError still do


def test_the_plugin_takes_a_cap_as_a_size_as_the_cli_does(checkout):
    """0 is no test's cap (the machine's default, half of RAM, is the CLI's when --cap is left
    out): the plugin reads a cap as `--cap` does, and says so in the same words."""
    line = refused(invoke("check", "ok.py:bounded", "--cap", "0"))
    with pytest.raises(SettingsError) as caught:
        pytest_plugin.settings_of(cap=0)
    assert str(caught.value) == "cap: '0' is not a whole number of bytes (at least 1)"
    assert line == "leakbench: error: --cap: '0' is not a whole number of bytes (at least 1)"
    assert pytest_plugin.settings_of(cap="2GiB").cap_bytes == 2 << 30
    assert pytest_plugin.settings_of().cap_bytes == pytest_settings.DEFAULT_CAP == 4 << 30
