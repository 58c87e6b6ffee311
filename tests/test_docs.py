"""The docs are reference (issue 32): the README and docs/ name no commit. History, with its
commits and dates, is CHANGELOG.md's."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# a word of 7 to 40 hex digits with a digit and a letter in it: a commit (abbreviated or whole)
HASH = re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")


def test_no_page_names_a_commit():
    found = [
        f"{page.relative_to(ROOT)}:{n}: {match}"
        for page in PAGES
        for n, line in enumerate(page.read_text().splitlines(), 1)
        for match in HASH.findall(line)
    ]
    assert found == [], "name the result or the release, not the commit (CHANGELOG.md may)"


def test_the_check_finds_a_commit():
    assert HASH.findall("a clean clone of a828ef8, compare/89b7abdba72...4e09fc1f951") == [
        "a828ef8",
        "89b7abdba72",
        "4e09fc1f951",
    ]
    assert HASH.findall("decade 1234567 acceded deadbeef sha256 2.16.0rc0") == []
