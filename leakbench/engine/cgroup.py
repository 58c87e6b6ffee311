"""A memory cgroup per child run: the cap held by the kernel, not by a poll that a busy machine
can make late (docs/protocol.md, "How the cap is enforced").

RunGroup.create makes a cgroup under the one this process's memory is charged to, limited to the
cap; the supervisor starts the child inside it (leakbench.engine.supervise), so every page the
child's tree touches is charged to it from the first. Past the limit the kernel reclaims page cache
first, then OOM-kills in the group: oom_killed reads that it did. Where the group's own code pages
are what it reclaims, the kernel can go on reclaiming them without a kill: `full` reads a group
whose anonymous memory has reached the limit, and the supervisor kills it as over its cap.
Both hierarchies (kernel Documentation/admin-guide/cgroup-v1/memory.rst, cgroup-v2.rst):
- v1: the memory controller's own hierarchy, memory.limit_in_bytes (and
  memory.memsw.limit_in_bytes where swap is accounted, so that swap does not escape the limit);
- v2: the unified hierarchy, memory.max (and memory.swap.max 0), only where this process's cgroup
  delegates the memory controller to its children (cgroup.subtree_control names it).
Nowhere else (not Linux, no such hierarchy, not writable): create returns None, and the poll alone
holds the cap.
"""

from __future__ import annotations

import errno
import os
import time
import uuid
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")  # where the hierarchies are mounted (memlimit reads it too)
PROC_SELF = Path("/proc/self/cgroup")
# "poll": make no cgroup, the supervisor's poll alone holds the cap (the overshoot table, tests)
CAP_BY_VARIABLE = "LEAKBENCH_CAP_BY"
POLL = "poll"  # Supervised.cap_enforced_by where no cgroup holds the cap
RMDIR_TRIES = 40  # rmdir is refused (EBUSY) until the kernel has taken the group's last process out
RMDIR_PAUSE_SECONDS = 0.05
PREFIX = "leakbench-"  # of a run's cgroup's name
# An empty run cgroup this old was left by a runner killed before it could remove it (SIGKILL):
# a live run's group is empty only between its mkdir and its shell's move, and after its last kill.
STALE_SECONDS = 60.0
# A group whose anonymous memory is within this of its limit is full: with no swap, what is left
# to reclaim is the page cache of the code it runs, and the kernel can reclaim and re-read those
# pages for minutes without an OOM kill (measured: unbounded_cache at 10x under a 1 GiB cap
# thrashed 2 min at 1,068,728,320 bytes of rss, 4.8 MiB under the limit, 1 MB of cache).
FULL_SLACK_BYTES = 16 * 1024 * 1024


def memory_folders(text: str, root: Path) -> list[tuple[int, Path]]:
    """(version 1 or 2, folder under `root`) of each memory cgroup `text` (the text of
    /proc/PID/cgroup) names: v2 for "0::/path", v1 for a line whose controllers include memory."""
    found = []
    for line in text.splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            found.append((2, root / path.lstrip("/")))
        elif "memory" in controllers.split(","):
            found.append((1, root / "memory" / path.lstrip("/")))
    return found


class RunGroup:
    """One run's memory cgroup (version 1 or 2) at `path`."""

    def __init__(self, version: int, path: Path):
        self.version, self.path = version, path

    @property
    def name(self) -> str:
        return f"cgroup v{self.version}"

    @classmethod
    def create(cls, limit_bytes: int) -> RunGroup | None:
        """A new cgroup limited to `limit_bytes` under this process's memory cgroup; None where
        none can be made (see the module docstring) or CAP_BY_VARIABLE is "poll". Never raises."""
        if os.environ.get(CAP_BY_VARIABLE) == POLL:
            return None
        try:
            folders = memory_folders(PROC_SELF.read_text(), ROOT)
        except (OSError, ValueError):
            return None
        # v1 first: on a hybrid machine the memory controller is v1's, and v2's tree has none
        for version, parent in sorted(folders):
            if version == 2 and "memory" not in _text(parent / "cgroup.subtree_control").split():
                continue
            _sweep(parent)
            group = cls(version, parent / f"{PREFIX}{uuid.uuid4().hex[:12]}")
            try:
                group.path.mkdir()
            except OSError:
                continue
            try:
                group._limit(limit_bytes)
            except OSError:
                group.remove()
                continue
            return group
        return None

    def _limit(self, limit_bytes: int) -> None:
        if self.version == 1:
            # memsw (memory + swap) may never be below the memory limit: set after it
            (self.path / "memory.limit_in_bytes").write_text(str(limit_bytes))
            if (self.path / "memory.memsw.limit_in_bytes").exists():
                (self.path / "memory.memsw.limit_in_bytes").write_text(str(limit_bytes))
        else:
            (self.path / "memory.max").write_text(str(limit_bytes))
            if (self.path / "memory.swap.max").exists():
                (self.path / "memory.swap.max").write_text("0")

    @property
    def procs_file(self) -> Path:
        """The file a process writes its pid to, to move into the group."""
        return self.path / "cgroup.procs"

    def move(self, pid: int) -> None:
        """Move process `pid` into the group (its later children are born in it). Raises OSError."""
        self.procs_file.write_text(str(pid))

    def pids(self) -> list[int]:
        """The processes in the group now; [] once it cannot be read."""
        return [int(p) for p in _text(self.procs_file).split()]

    def oom_killed(self) -> bool:
        """Whether the kernel OOM-killed a process of the group at its limit. v1: oom_control's
        oom_kill count (Linux 4.13), or under_oom before it; not failcnt, which counts every time
        the limit was reached, page cache reclaimed without a kill included. v2: memory.events'
        oom_kill."""
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        fields = dict(line.split()[:2] for line in _text(self.path / name).splitlines() if line)
        if "oom_kill" in fields:
            return int(fields["oom_kill"]) > 0
        return fields.get("under_oom", "0") != "0"

    def full(self, limit_bytes: int) -> bool:
        """Whether the group's anonymous memory (v1 memory.stat rss, v2 anon) is within
        FULL_SLACK_BYTES of `limit_bytes`: it can only go on by re-reading its own code's pages
        (see FULL_SLACK_BYTES), so the run is over its cap whether or not the kernel kills it."""
        name = "rss" if self.version == 1 else "anon"
        fields = dict(
            line.split()[:2] for line in _text(self.path / "memory.stat").splitlines() if line
        )
        value = fields.get(name, "")
        return value.isdigit() and int(value) >= limit_bytes - FULL_SLACK_BYTES

    def peak_bytes(self) -> int | None:
        """The most the group was charged at once (bytes): v1 memory.max_usage_in_bytes, v2
        memory.peak (Linux 5.19); None where it cannot be read."""
        name = "memory.max_usage_in_bytes" if self.version == 1 else "memory.peak"
        text = _text(self.path / name).strip()
        return int(text) if text.isdigit() else None

    def remove(self) -> None:
        """Remove the group, once its processes are gone (kill them first). The kernel refuses
        (EBUSY) while it still takes the last killed process out: retried RMDIR_TRIES times, then
        left in place. Never raises."""
        for _ in range(RMDIR_TRIES):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError as e:
                if e.errno != errno.EBUSY:
                    return
            time.sleep(RMDIR_PAUSE_SECONDS)


def _sweep(parent: Path) -> None:
    """Remove the run cgroups under `parent` left empty for STALE_SECONDS (see there); a group
    that still holds a process cannot be removed (EBUSY), so none in use ever is."""
    try:
        stale = [
            p
            for p in parent.glob(f"{PREFIX}*")
            if time.time() - p.stat().st_mtime > STALE_SECONDS and not _text(p / "cgroup.procs")
        ]
    except OSError:
        return
    for path in stale:
        try:
            path.rmdir()
        except OSError:
            pass


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
