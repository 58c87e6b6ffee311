"""Fixtures shared by several test files."""
from __future__ import annotations

import pytest

from leakbench import memlimit


@pytest.fixture
def fake_cgroup(tmp_path, monkeypatch):
    """Point leakbench.memlimit at a fake /proc/self/cgroup and /sys/fs/cgroup.

    Returns write(proc_line, folder, files): proc_line is /proc/self/cgroup's
    text, folder the cgroup's directory under the fake root, files name -> text.
    """
    monkeypatch.setattr(memlimit, "CGROUP_ROOT", tmp_path / "sys")
    monkeypatch.setattr(memlimit, "PROC_CGROUP", tmp_path / "cgroup")

    def write(proc_line: str, folder: str, files: dict) -> None:
        (tmp_path / "cgroup").write_text(proc_line + "\n")
        where = tmp_path / "sys" / folder
        where.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (where / name).write_text(text + "\n")
    return write
