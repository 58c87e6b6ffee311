"""Kill every process of a supervised run, and only those: the pieces of
leakbench.engine.supervise's `kill` that find the run's processes and signal them.

No process the child starts outlives the run, a session of its own
(setsid, start_new_session) and an exited parent included:
- the child is a child subreaper (supervise.die_with_parent: prctl
  PR_SET_CHILD_SUBREAPER): a process orphaned under it (a double fork) is
  reparented to the child, not to init, so it stays in the tree that is
  polled, counted against the cap and killed;
- every process seen in the tree is remembered (pid and start time, so a
  reused pid is never taken for it), and killed at the end even once the
  child has exited and its orphans went to init;
- every process started under the child carries this run's token in its
  environment (RUNS_VARIABLE): at the end, the processes started since the
  run began that carry it are killed too (carrying_token). That covers a process orphaned
  in the last poll interval before the child exited, never seen in the tree.
Two runs at once (threads of one process) each hold their own tree, pids and
token, so neither touches the other's processes. Only a process that both
escaped every poll (orphaned in the child's last 50 ms) and dropped its
inherited environment is beyond reach, unless the run has a cgroup of its own
(leakbench.engine.cgroup): then every process in it is killed too. The supervising process itself is
not made a subreaper: that would make every orphan of any subprocess it runs
(pip's in `leakbench bisect` too) its child, for it to reap, and gain nothing
over the token.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

import psutil

# The tokens of the supervised runs a process descends from, space-separated (a run
# supervised inside a measured child adds its own to its parent's).
RUNS_VARIABLE = "LEAKBENCH_RUNS"
KILL_ROUNDS = 20  # killing a tree that keeps forking: each round kills what the last one found


def kill_in_rounds(members: Callable[[], list[psutil.Process]], spared: int) -> set[psutil.Process]:
    """Kill what members() finds, but process `spared` (the child, whose session is killed after),
    in rounds until a round finds none left; the processes killed.

    While the child lives it is their subreaper, so a process orphaned by this very kill
    lands in its tree for the next round. A process in the middle of being killed
    cannot fork any more, so the rounds end (KILL_ROUNDS bounds them all the same).
    """
    killed: set[psutil.Process] = set()
    for _ in range(KILL_ROUNDS):
        fresh = [p for p in members() if p not in killed and p.pid != spared]
        if not fresh:
            break
        for proc in fresh:
            killed.add(proc)
            kill_process(proc)
    return killed


def live_tree(roots: list[psutil.Process], seen: set[psutil.Process]) -> list[psutil.Process]:
    """The live processes of `roots` and of `seen` (the processes seen before), with their
    descendants; drops from `seen` those gone, and adds to it those found."""
    found: set[psutil.Process] = set()
    roots = list(roots)
    for proc in list(seen):
        if running(proc):
            roots.append(proc)
        else:
            # gone (a reused pid is another process): never to be signalled
            seen.discard(proc)
    for root in roots:
        if root in found:
            continue
        try:
            found.add(root)
            found.update(root.children(recursive=True))
        except psutil.Error:
            pass
    seen |= found
    return list(found)


def carrying_token(token: str, since: int, found: set[psutil.Process]) -> None:
    """Add to `found` the processes started no earlier than `since` (start_ticks) that carry
    `token` in their RUNS_VARIABLE, and their descendants: an orphan that left the run's tree
    between two polls, just before the child exited."""
    for pid in psutil.pids():
        try:
            if start_ticks(pid) < since:  # older than the child: none of the run's
                continue
            proc = psutil.Process(pid)
            if proc in found or token not in proc.environ().get(RUNS_VARIABLE, "").split():
                continue
            found.add(proc)
            found.update(proc.children(recursive=True))
        except (psutil.Error, OSError):
            # gone, a zombie, or another user's (then not ours either)
            pass


def start_ticks(pid: int) -> int:
    """When process `pid` started, in clock ticks since boot (/proc/PID/stat's starttime).
    Raises OSError once it is gone."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read()
    # field 22; the name before ")" may hold spaces
    return int(stat[stat.rindex(b")") + 2 :].split()[19])


def kill_process(proc: psutil.Process) -> None:
    """SIGKILL `proc` if it still is that process (its pid and start time). Through a pidfd
    where there is one (Linux 5.3): opened before the process is compared, it keeps
    referring to that process, so a pid reused in between is never signalled."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # gone, or no pidfd: psutil compares the start time first
        try:
            proc.kill()
        except psutil.Error:
            pass
        return
    try:
        if psutil.Process(proc.pid) == proc:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
    except (psutil.Error, OSError):
        pass
    finally:
        os.close(fd)


def running(proc: psutil.Process) -> bool:
    """Still running as the same process (not exited, not a zombie, its pid not reused)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def wait_dead(procs, seconds: float) -> None:
    """Wait up to `seconds` for killed processes to be gone or zombies (their reaping is their
    parent's, or init's): SIGKILL is delivered at once, but a process in the kernel
    (uninterruptible sleep) dies only once it leaves it."""
    left = list(procs)
    deadline = time.monotonic() + seconds
    while left and time.monotonic() < deadline:
        left = [p for p in left if running(p)]
        if left:
            time.sleep(0.01)
