"""Supervise one child process: spawn it in its own session, watch its whole
process tree's RSS against a cap and its wall time against a deadline, kill
the tree, and reap it with the kernel's account of its peak RSS.

The one supervisor of every process leakbench measures in: the engine's
child (leakbench.engine.runner) and the calibration's peers
(leakbench.calibrate.peers). The child side calls die_with_parent, so a
leak never goes on without its cap and timeout when the supervisor dies.

No process the child starts outlives the run, a session of its own and an exited parent
included: how the run's processes are found and killed, and which are beyond reach, is
leakbench.engine.tree_kill's docstring.

The cap (a child given cap_bytes): where a memory cgroup can be made for the run
(leakbench.engine.cgroup), the child starts inside it, limited to the cap, and the kernel holds
what the run is charged to the cap: a poll made late by a busy machine lets a fast allocation run
past the cap by what it allocates meanwhile, the kernel does not. There the tree's RSS does not
decide (it counts library pages charged to whoever first read them, TensorFlow's ~300 MiB, and a
poll reading it killed runs the kernel would have let finish, at a bound no one could state):
over_limits reads the kernel's OOM kill, and ends as over-cap a group whose anonymous memory is
within cgroup.FULL_SLACK_BYTES of its limit, where the kernel may reclaim the child's code pages
for minutes instead of killing (docs/limits.md). Elsewhere the poll
alone holds the cap, and the child runs at a lower priority (CHILD_NICE) so that the supervisor
gets the CPU first. The poll measures the tree's RSS (max_rss_bytes) in both cases.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil

import leakbench
from leakbench.engine import cgroup, tree_kill
from leakbench.units import KIB

POLL_SECONDS = 0.05  # at 1 GB/s of allocation a run overshoots the cap by ~50 MB at most
TF_SYSTEM_ALLOCATOR = "TF_ONEDNN_USE_SYSTEM_ALLOCATOR"
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
# The poll's child's niceness where no cgroup holds the cap: a busy core then runs the supervisor
# (nice 0) about 9 times as often as the child (CFS weights 1024 and 110), so its poll is on time.
CHILD_NICE = 10
# Run in the child's place before the measured command: moves the process into the run's cgroup
# ($0, its cgroup.procs), then execs the command (same pid): nothing runs uncharged. A failed move
# (its error in the child's log) still runs the command, which the poll alone then caps.
SHELL = "/bin/sh"
INTO_CGROUP = 'echo $$ > "$0"; exec "$@"'
EXEC_WAIT_SECONDS = 5.0  # the longest the shell may take to exec the command (it takes ~1 ms)


def _lower_priority(pid: int) -> None:
    """Give the poll's child CHILD_NICE, just after its exec, before it started a thread (its
    threads inherit it). Also its autogroup's: where the kernel groups by session
    (/proc/sys/kernel/sched_autogroup_enabled 1, sched(7) "The autogroup feature"), a child in a
    session of its own competes as its own group, and a process's niceness counts only inside
    its group, so without the group's the child would get as much CPU as the supervisor.
    Best effort: a kernel without autogroups has no such file, and either may be refused."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, CHILD_NICE)
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/autogroup", "w") as group:
            group.write(str(CHILD_NICE))
    except OSError:
        pass


def allocator(kind: str = "growth") -> dict:
    """TensorFlow's CPU allocator for a child measuring a target of `kind` ("growth" or "peak"),
    as environment: {} where this process's environment sets TF_ONEDNN_USE_SYSTEM_ALLOCATOR (a
    caller's own setting wins), else "1" for growth (malloc), "0" for peak (oneDNN's pool, as in
    production). TensorFlow reads the variable since 2.9 (tensorflow/core/util/onednn_env_vars.cc).

    Growth: oneDNN's pool keeps tensors of 256 KiB and more out of malloc, where held memory and
    malloc's counters would see them; a leak of such tensors hid in it in some runs and not
    others. Peak: the verdict reads the high-water mark (VmHWM), which the pool does not hide;
    on malloc, freed batches stranded in TensorFlow's threads' arenas raised unbounded_cache's
    peak at its smallest size from 75–79 MiB to 145–233 MiB, and its k under 0.5 in 2 of 4 runs
    (docs/limits.md, "oneDNN's pool")."""
    if TF_SYSTEM_ALLOCATOR in os.environ:
        return {}
    return {TF_SYSTEM_ALLOCATOR: "0" if kind == "peak" else "1"}


def child_env(extra: dict | None = None) -> dict:
    """This process's environment for a child: leakbench importable, TensorFlow's banner off,
    TensorFlow's allocator for a growth target (`allocator`), `extra` on top."""
    env = {**os.environ, **allocator()}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TensorFlow's start-up banner out of logs
    package_parent = str(Path(leakbench.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    env.update(extra or {})
    return env


def die_with_parent(parent: int, *, reaper: bool = True) -> None:
    """In the child: have the kernel SIGKILL this process when its supervisor dies (Linux
    prctl PR_SET_PDEATHSIG); exit at once if the supervisor `parent` is already gone.

    reaper: also make this process a child subreaper (PR_SET_CHILD_SUBREAPER, Linux 3.4): a
    process orphaned below it (a double fork, a parent that exited) is reparented to it
    instead of init, so it stays in the tree the supervisor polls, caps and kills. False for
    a process that is itself a supervisor (tests/tf_session.py), for the reason
    leakbench.engine.tree_kill's docstring gives for supervising processes.
    """
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if reaper:  # a failure (an old kernel) leaves the remembered pids and the token
            prctl(PR_SET_CHILD_SUBREAPER, 1)
    except (OSError, AttributeError):
        return  # not Linux: the supervisor's kill in its `finally` is all there is
    if os.getppid() != parent:  # the supervisor died before the prctl took effect
        os._exit(1)


class Supervised:
    """A child in its own session, and every process it starts, its own sessions
    included (see leakbench.engine.tree_kill's docstring): `kill` ends them all.

    cap_bytes: the cap (bytes) the kernel is to hold too (see the module docstring); None: the
    poll of over_limits alone, at the child's own priority (calibration's peers).
    cap_enforced_by: "cgroup v1" or "cgroup v2" where the run's cgroup holds the cap, else "poll".
    max_rss_bytes: the largest tree RSS seen by `over_limits`; peak_rss_bytes: the
    child's own peak RSS over its life from the kernel (wait4's ru_maxrss), once reaped;
    cgroup_peak_bytes: the most the run's cgroup was charged (page cache included), once killed.
    Raises OSError from Popen when the child cannot be started.
    """

    def __init__(
        self,
        argv: list[str],
        *,
        env: dict,
        stdout,
        stderr,
        pass_fds: tuple = (),
        cap_bytes: int | None = None,
    ):
        self.token = uuid.uuid4().hex
        runs = tree_kill.RUNS_VARIABLE
        env = {**env, runs: " ".join(filter(None, (env.get(runs), self.token)))}
        self.group = cgroup.RunGroup.create(cap_bytes) if cap_bytes else None
        if self.group is not None:
            # A shell moves itself in, then execs the child: from its first page the child is
            # charged to the group. Not preexec_fn, which runs Python between fork and exec and
            # can deadlock where the parent has threads (runs in threads: history.rounds); not a
            # move after Popen, which leaves the interpreter's start charged outside the group.
            argv = [SHELL, "-c", INTO_CGROUP, str(self.group.procs_file), *argv]
        try:
            self.proc = subprocess.Popen(
                argv,
                pass_fds=pass_fds,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
                env=env,
            )
        except OSError:
            if self.group is not None:
                self.group.remove()
            raise
        # which holds the cap is known once the shell has moved (or failed to) and exec'd
        if self.group is not None:
            _exec_done(self.proc.pid)
            if not self._in_group():  # the move failed (or the child is gone already)
                self.group.remove()  # the poll's way after all
                self.group = None
        self.cap_enforced_by = self.group.name if self.group is not None else cgroup.POLL
        self._killed_at_cap = False
        self.cgroup_peak_bytes: int | None = None
        if cap_bytes and self.group is None:
            _lower_priority(self.proc.pid)
        self.started = time.monotonic()
        self.max_rss_bytes = 0
        self.peak_rss_bytes: int | None = None
        # psutil.Process objects compare and hash by pid and start time (since boot, whatever
        # the clock does): a remembered process is never confused with a later one on its pid.
        self._seen: set[psutil.Process] = set()  # every process seen in the run's tree
        try:
            # a zombie still has its entry
            self._root: psutil.Process | None = psutil.Process(self.proc.pid)
            # every process of the run started no earlier
            self._since = tree_kill.start_ticks(self.proc.pid)
        except (psutil.Error, OSError):
            self._root, self._since = None, 0

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def _in_group(self) -> bool:
        return self.group is not None and self.proc.pid in self.group.pids()

    def killed_at_cap(self) -> bool:
        """Whether the kernel OOM-killed a process of the run at the cap (its cgroup's limit),
        also once `kill` removed the cgroup."""
        if self.group is not None and not self._killed_at_cap:
            self._killed_at_cap = self.group.oom_killed()
        return self._killed_at_cap

    def over_limits(self, cap_bytes: int, deadline: float) -> str | None:
        """ "over-cap" if the kernel killed in the run's cgroup at its limit or the group is full
        (cgroup.RunGroup.full), or, where no cgroup holds the cap, if the tree's RSS passed
        cap_bytes; "hang" past `deadline`
        (time.monotonic); else None.

        The tree: the child, its descendants (orphans among them: the child is their
        subreaper) and any process seen in it before that still runs; each is remembered
        for `kill`.
        """
        rss = 0
        for proc in self._tree():
            try:
                rss += proc.memory_info().rss
            except psutil.Error:
                pass
        self.max_rss_bytes = max(self.max_rss_bytes, rss)
        if self.group is not None:  # the kernel's kill, or a group full of what it cannot reclaim
            over = self.killed_at_cap() or self.group.full(cap_bytes)
        else:
            over = rss > cap_bytes
        if over:
            return "over-cap"
        return "hang" if time.monotonic() > deadline else None

    def reap(self, block: bool = False) -> bool:
        """Reap the child if it has exited (wait for it if `block`); True once it is reaped.

        wait4, not Popen.wait, keeps the kernel's account of the child's peak RSS
        (ru_maxrss, KiB on Linux: getrusage(2)): exact between polls and after a
        kill, where /proc of the child is gone.
        """
        if self.proc.returncode is not None:
            return True
        try:
            pid, status, usage = os.wait4(self.proc.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:  # reaped by someone else: nothing to read
            self.proc.returncode = -1
            return True
        if pid == 0:
            return False
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.peak_rss_bytes = usage.ru_maxrss * KIB
        return True

    def kill(self) -> None:
        """Kill every process of the run, then the child's session, then reap the child,
        so no process outlives a run.

        The child's descendants go first, in rounds until a round finds none left
        (tree_kill.kill_in_rounds).
        """
        killed = tree_kill.kill_in_rounds(self._members, self.proc.pid)
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.reap(block=True)
        tree_kill.wait_dead(killed, seconds=2.0)
        if self.group is not None:  # its processes are gone: read what it was charged, remove it
            self.killed_at_cap()
            self.cgroup_peak_bytes = self.group.peak_bytes()
            self.group.remove()
            self.group = None

    def _tree(self) -> list[psutil.Process]:
        """The run's live processes by descent: the child and its descendants while it is not
        reaped, and every process seen before that still
        runs, with its descendants (tree_kill.live_tree). Remembers them."""
        roots = [self._root] if self._root is not None and self.proc.returncode is None else []
        return tree_kill.live_tree(roots, self._seen)

    def _members(self) -> list[psutil.Process]:
        """_tree, the processes in the run's cgroup, and the processes started since the run
        began that carry its token (and their descendants): an orphan that left the tree between
        two polls, just before the child exited."""
        found = set(self._tree())
        for pid in self.group.pids() if self.group is not None else ():
            try:  # in the run's cgroup: the run's whatever its environment or session
                found.add(psutil.Process(pid))
            except psutil.Error:
                pass
        tree_kill.carrying_token(self.token, self._since, found)
        return [p for p in found if tree_kill.running(p)]

    def seconds(self) -> float:
        return time.monotonic() - self.started


def _exec_done(pid: int) -> bool:
    """Wait (up to EXEC_WAIT_SECONDS) for process `pid`, started as SHELL, to exec another program
    (its move into the run's cgroup, made before, is then done); False if it ended or did not in
    time."""
    shell = os.path.realpath(SHELL)
    deadline = time.monotonic() + EXEC_WAIT_SECONDS
    while time.monotonic() < deadline:
        try:
            if os.readlink(f"/proc/{pid}/exe") != shell:
                return True
        except OSError:  # gone (or a zombie: no exe)
            return False
        time.sleep(0.001)
    return False


def python(module: str, *args: str) -> list[str]:
    """argv running `python -m module args` with this interpreter."""
    return [sys.executable, "-m", module, *args]
