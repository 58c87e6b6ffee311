"""How much memory a measured child may take by default: the default cap.

Half of physical RAM, 80 % of what is available now, and 80 % of what the
cgroup this process runs in has left, whichever is least. The cgroup matters
in containers and CI runners: there the kernel kills the whole group (runner
and records included) at the group's limit, long before half of the host's
RAM. psutil reports the host's RAM only, so the limit is read from the
cgroup files (kernel Documentation/admin-guide/cgroup-v2.rst, memory.max and
memory.current; cgroup-v1/memory.rst, memory.limit_in_bytes and
memory.usage_in_bytes).
"""

from __future__ import annotations

from pathlib import Path

import psutil

from leakbench.engine import cgroup

# its own names, read at each call: tests point them at fake files (the run cgroup keeps its own)
CGROUP_ROOT = cgroup.ROOT
PROC_CGROUP = cgroup.PROC_SELF
UNLIMITED = 1 << 60  # cgroup v1 writes "no limit" as a number near 2**63


def default_cap_bytes() -> int:
    """The default cap, in bytes (see the module docstring)."""
    mem = psutil.virtual_memory()
    caps = [0.5 * mem.total, 0.8 * mem.available]
    left = cgroup_bytes_left()
    if left is not None:
        caps.append(0.8 * left)
    return int(min(caps))


def cgroup_bytes_left() -> int | None:
    """Bytes this process's memory cgroup may still charge (limit − usage), or
    None where there is no limit, no memory cgroup, or its files cannot be read."""
    try:
        folders = cgroup.memory_folders(PROC_CGROUP.read_text(), CGROUP_ROOT)
    except (OSError, ValueError):
        return None
    for version, folder in folders:
        if version == 2:  # one unified hierarchy
            found = _read(folder, "memory.max", "memory.current")
        else:
            found = _read(folder, "memory.limit_in_bytes", "memory.usage_in_bytes")
        if found is not None:
            return found
    return None


def _read(folder: Path, limit_file: str, usage_file: str) -> int | None:
    try:
        limit = (folder / limit_file).read_text().strip()
        usage = int((folder / usage_file).read_text().strip())
    except (OSError, ValueError):
        return None
    if limit == "max" or not limit.isdigit() or int(limit) >= UNLIMITED:
        return None
    return max(int(limit) - usage, 0)
