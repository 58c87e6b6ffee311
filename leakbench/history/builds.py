"""TensorFlow builds as columns: releases, release candidates and dated nightlies.

A nightly's pip version carries its build date (`tf-nightly` 2.23.0.dev20261026,
whose `tf.__version__` is "2.23.0-dev20261026"), so its column is named by that
date. Builds sort by PEP 440 (packaging.version): 2.21.0 < 2.22.0.dev20260204 <
2.22.0rc0 < 2.22.0 < 2.23.0.dev20261026. Nothing here imports TensorFlow.
"""

from __future__ import annotations

import datetime as dt
import re

from packaging.version import InvalidVersion, Version

NIGHTLY = "nightly"  # the alias of the newest nightly in the results (compare, make run)
# The release measured by default: what `make` installs (the Makefile's TF_VERSION ?=, which
# cannot import this: tests/test_one_helper.py keeps the two equal) and what the views name
# where the records do not say (the site's lessons, report-back's other release).
DEFAULT_RELEASE = "2.21.0"
# The releases the published dataset measures (leakbench publish): the newest patch of each
# minor release from 2.12 (the first to install for Python 3.11) on; the newest dated nightly
# is measured beside them.
RELEASES = (
    "2.12.1",
    "2.13.1",
    "2.14.1",
    "2.15.1",
    "2.16.2",
    "2.17.1",
    "2.18.1",
    "2.19.1",
    "2.20.0",
    DEFAULT_RELEASE,
)
_DATE = re.compile(r"(\d{4})(\d{2})(\d{2})")


def parse(version: str) -> Version | None:
    """The PEP 440 version of a build's version string, or None when it is not one. The one
    parser of TensorFlow versions (with `pep440`): tests/test_one_helper.py checks it."""
    try:
        return pep440(version)
    except InvalidVersion:
        return None


def pep440(version: str) -> Version:
    """The PEP 440 version of a version string known to be one (a wheel's, a registry build's).
    Raises InvalidVersion (a ValueError) when it is not."""
    return Version(version)


def same_build(a: str | None, b: str | None) -> bool:
    """True when two spellings name one build: a nightly's tf.__version__ is
    "2.23.0-dev20261026" where pip says "2.23.0.dev20261026" (PEP 440 normalizes both)."""
    if a is None or b is None or a == b:
        return a == b
    pa, pb = parse(a), parse(b)
    return pa is not None and pa == pb


def is_nightly(version: str) -> bool:
    """True for a dated development build (2.23.0.dev20261026 or 2.23.0-dev20261026)."""
    v = parse(version)
    return bool(v and v.is_devrelease)


def build_date(version: str) -> dt.date | None:
    """A nightly's build date, from the YYYYMMDD of its dev number; None for anything else."""
    v = parse(version)
    if not (v and v.is_devrelease):
        return None
    m = _DATE.fullmatch(str(v.dev))
    try:
        return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None
    except ValueError:
        return None


def label(version: str) -> str:
    """A column's name: the release ("2.21.0"), or "nightly 2026-10-26" for a dated nightly."""
    day = build_date(version)
    return f"{NIGHTLY} {day.isoformat()}" if day else version


def sort_key(version: str) -> tuple:
    """Order builds by PEP 440; a string that is not a version sorts after, by its text."""
    v = parse(version)
    return (0, v, "") if v is not None else (1, Version("0"), version)


def newest_nightly(versions) -> str | None:
    """The newest dated nightly among `versions` (strings), or None."""
    found = [v for v in versions if is_nightly(v)]
    return max(found, key=sort_key) if found else None
