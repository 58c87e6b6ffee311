"""The pytest plugin's settings (leakbench.pytest_plugin): the keywords a test gives the marker
and assert_no_leak (KEYWORDS), each also a command-line option and an ini key, the plugin's
defaults, and settings_of, which reads a test's Settings from them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import pytest

from leakbench.settings import FIXED_CAP_BYTES, Settings, SettingsError
from leakbench.units import format_bytes, parse_size

# The plugin's cap, the same on every machine (docs/check.md, "The memory cap"): not half of RAM.
DEFAULT_CAP = FIXED_CAP_BYTES
DEFAULT_TIMEOUT_SECONDS = Settings.timeout_seconds


class Keyword(NamedTuple):
    """One of a test's settings: the marker's and assert_no_leak's keyword, also a command-line
    option and an ini key (--leakbench-<keyword>, leakbench_<keyword>)."""

    field: str  # its Settings field
    read: Callable[[str], Any]  # the command line's or the ini file's text, as Settings takes it
    metavar: str
    help: str


KEYWORDS = {
    "cap": Keyword(
        "cap_bytes",
        str,  # a size, read as a test's own cap is (settings_of)
        "SIZE",
        f"memory cap per child, e.g. 2GiB (default {format_bytes(DEFAULT_CAP, whole=True)})",
    ),
    "timeout": Keyword(
        "timeout_seconds",
        float,
        "SECONDS",
        f"seconds a child may go without progress (default {DEFAULT_TIMEOUT_SECONDS:g})",
    ),
    "reps": Keyword("reps", int, "N", f"measured repetitions (default {Settings.reps})"),
    "warmup": Keyword("warmup", int, "N", f"warm-up repetitions (default {Settings.warmup})"),
    "heap_reps": Keyword(
        "heap_reps",
        int,
        "N",
        f"repetitions of memray's heap pass, 0: none (default {Settings.heap_reps})",
    ),
    "teardown_timeout": Keyword(
        "teardown_timeout_seconds",
        float,
        "SECONDS",
        f"seconds a child may take to tear down (default {Settings.teardown_timeout_seconds:g})",
    ),
}
# Settings' fields as a test names them, for its refusals (SettingsError.line)
KEYWORD_NAMES = {k.field: keyword for keyword, k in KEYWORDS.items()}


def settings_of(config: pytest.Config | None = None, **given) -> Settings:
    """The Settings of a test: each keyword given (KEYWORDS; None: not given), else the command
    line's --leakbench-<keyword>, else the ini file's leakbench_<keyword>, else the default.
    Raises SettingsError (one line, naming the setting as the test or the ini file did) for
    a value Settings refuses, or a cap that is not a size; TypeError for an unknown keyword."""
    unknown = sorted(set(given) - set(KEYWORDS))
    if unknown:
        raise TypeError(f"unknown leakbench settings {unknown}; known: {sorted(KEYWORDS)}")
    fields: dict[str, Any] = {"cap_bytes": DEFAULT_CAP, "timeout_seconds": DEFAULT_TIMEOUT_SECONDS}
    names = dict(KEYWORD_NAMES)  # each setting as its value was given, for a refusal
    for keyword, (field, read, *_) in KEYWORDS.items():
        if given.get(keyword) is not None:
            value = given[keyword]
        elif config is not None and (found := _value_or_ini(config, keyword)) is not None:
            text, names[field] = found
            try:
                value = read(text)
            except ValueError:  # not a number: Settings refuses the text in its own words
                value = text
        else:
            continue
        if keyword == "cap" and not isinstance(value, bool):
            try:  # a size, as --cap takes one: 0 (half of RAM) is not a test's cap
                value = parse_size(str(value))
            except ValueError as e:
                raise SettingsError(field, str(e), names) from None
        fields[field] = value
    try:
        return Settings(**fields)
    except SettingsError as e:
        raise SettingsError(e.setting, e.problem, names) from None


def _value_or_ini(config: pytest.Config, keyword: str) -> tuple[str, str] | None:
    """(value, where it was given): the command line's --leakbench-<keyword>, else the ini file's
    leakbench_<keyword>; None where neither is (pytest-memray's value_or_ini)."""
    key = f"leakbench_{keyword}"
    value = config.getoption(key, default=None)
    if value is not None:
        return str(value).strip(), f"--{key.replace('_', '-')}"
    value = config.getini(key)
    return (str(value).strip(), key) if value else None
