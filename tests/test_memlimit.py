"""The default cap reads the memory cgroup's limit (containers, CI runners),
cgroup v1 and v2, from fake cgroup files (no process started)."""
from __future__ import annotations

import pytest

from leakbench import memlimit

GIB = 1 << 30


@pytest.fixture
def cgroup(tmp_path, monkeypatch):
    """Point memlimit at a fake /proc/self/cgroup and /sys/fs/cgroup; returns a writer."""
    monkeypatch.setattr(memlimit, "CGROUP_ROOT", tmp_path / "sys")
    monkeypatch.setattr(memlimit, "PROC_CGROUP", tmp_path / "cgroup")

    def write(proc_line: str, folder: str, files: dict) -> None:
        (tmp_path / "cgroup").write_text(proc_line + "\n")
        where = tmp_path / "sys" / folder
        where.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (where / name).write_text(text + "\n")
    return write


def test_v2_limit_minus_usage(cgroup):
    cgroup("0::/ci/job", "ci/job", {"memory.max": str(3 * GIB), "memory.current": str(1 * GIB)})
    assert memlimit.cgroup_bytes_left() == 2 * GIB
    assert memlimit.default_cap_bytes() <= 0.8 * 2 * GIB


def test_v1_memory_controller(cgroup):
    cgroup("5:cpu:/x\n4:memory:/docker/abc", "memory/docker/abc",
           {"memory.limit_in_bytes": str(4 * GIB), "memory.usage_in_bytes": str(GIB // 2)})
    assert memlimit.cgroup_bytes_left() == 4 * GIB - GIB // 2


@pytest.mark.parametrize("line, folder, files", [
    ("0::/", "", {"memory.max": "max", "memory.current": "123"}),                       # v2, no limit
    ("4:memory:/", "memory", {"memory.limit_in_bytes": "9223372036854771712",        # v1, no limit
                              "memory.usage_in_bytes": "123"}),
    ("0::/gone", "elsewhere", {}),                                                       # files missing
])
def test_no_limit_leaves_the_host_figures(cgroup, line, folder, files):
    cgroup(line, folder, files)
    assert memlimit.cgroup_bytes_left() is None
    assert memlimit.default_cap_bytes() > 0
