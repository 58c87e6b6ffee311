"""The default cap reads the memory cgroup's limit (containers, CI runners),
cgroup v1 and v2, from fake cgroup files (no process started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from leakbench.engine import cgroup, memlimit

GIB = 1 << 30


def test_v2_limit_minus_usage(fake_cgroup):
    fake_cgroup(
        "0::/ci/job", "ci/job", {"memory.max": str(3 * GIB), "memory.current": str(1 * GIB)}
    )
    assert memlimit.cgroup_bytes_left() == 2 * GIB
    assert memlimit.default_cap_bytes() <= 0.8 * 2 * GIB


def test_v1_memory_controller(fake_cgroup):
    fake_cgroup(
        "5:cpu:/x\n4:memory:/docker/abc",
        "memory/docker/abc",
        {"memory.limit_in_bytes": str(4 * GIB), "memory.usage_in_bytes": str(GIB // 2)},
    )
    assert memlimit.cgroup_bytes_left() == 4 * GIB - GIB // 2


@pytest.mark.parametrize(
    "line, folder, files",
    [
        # v2, no limit
        ("0::/", "", {"memory.max": "max", "memory.current": "123"}),
        (
            "4:memory:/",
            "memory",
            {
                "memory.limit_in_bytes": "9223372036854771712",  # v1, no limit
                "memory.usage_in_bytes": "123",
            },
        ),
        # files missing
        ("0::/gone", "elsewhere", {}),
    ],
)
def test_no_limit_leaves_the_host_figures(fake_cgroup, line, folder, files):
    fake_cgroup(line, folder, files)
    assert memlimit.cgroup_bytes_left() is None
    assert memlimit.default_cap_bytes() > 0


def test_the_fake_leaves_the_run_cgroup_its_own_paths(fake_cgroup):
    """memlimit reads the files the fixture fakes; the run's cgroup (leakbench.engine.cgroup) is
    made in the real hierarchy, from its own names, never in the fake."""
    fake_cgroup("4:memory:/job", "memory/job", {})
    assert memlimit.CGROUP_ROOT != cgroup.ROOT == Path("/sys/fs/cgroup")
    assert memlimit.PROC_CGROUP != cgroup.PROC_SELF == Path("/proc/self/cgroup")
