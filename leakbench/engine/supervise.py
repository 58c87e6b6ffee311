"""Supervise one child process: spawn it in its own session, watch its whole
process tree's RSS against a cap and its wall time against a deadline, kill
the tree, and reap it with the kernel's account of its peak RSS.

The one supervisor of every process leakbench measures in: the engine's
child (leakbench.engine.runner) and the calibration's peers
(leakbench.calibrate.peers). The child side calls die_with_parent, so a
leak never goes on without its cap and timeout when the supervisor dies.

No process the child starts outlives the run, a session of its own
(setsid, start_new_session) and an exited parent included:
- the child is a child subreaper (die_with_parent: prctl
  PR_SET_CHILD_SUBREAPER): a process orphaned under it (a double fork) is
  reparented to the child, not to init, so it stays in the tree that is
  polled, counted against the cap and killed;
- every process seen in the tree is remembered (pid and start time, so a
  reused pid is never taken for it), and killed at the end even once the
  child has exited and its orphans went to init;
- every process started under the child carries this run's token in its
  environment (RUNS_VARIABLE): at the end, the processes started since the
  run began that carry it are killed too. That covers a process orphaned
  in the last poll interval before the child exited, never seen in the tree.
Two runs at once (threads of one process) each hold their own tree, pids and
token, so neither touches the other's processes. Only a process that both
escaped every poll (orphaned in the child's last 50 ms) and dropped its
inherited environment is beyond reach, unless the run has a cgroup of its own (below): then
every process in it is killed too. The supervising process itself is
not made a subreaper: that would make every orphan of any subprocess it runs
(pip's in `leakbench bisect` too) its child, for it to reap, and gain nothing
over the token.

The cap (a child given cap_bytes): where a memory cgroup can be made for the run
(leakbench.engine.cgroup), the child starts inside it, limited to the cap, and the kernel holds
what the run is charged to the cap: a poll made late by a busy machine lets a fast allocation run
past the cap by what it allocates meanwhile, the kernel does not. There the kernel alone kills for
memory (over_limits reads its OOM kill): the tree's RSS is not what the kernel charges (it counts
library pages charged to whoever first read them, TensorFlow's ~300 MiB), and a poll reading it
killed runs the kernel would have let finish, at a bound no one could state. Elsewhere the poll
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
from leakbench.engine import cgroup
from leakbench.units import KIB

POLL_SECONDS = 0.05  # at 1 GB/s of allocation a run overshoots the cap by ~50 MB at most
# The tokens of the supervised runs a process descends from, space-separated (a run
# supervised inside a measured child adds its own to its parent's).
RUNS_VARIABLE = "LEAKBENCH_RUNS"
TF_SYSTEM_ALLOCATOR = "TF_ONEDNN_USE_SYSTEM_ALLOCATOR"
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
KILL_ROUNDS = 20  # killing a tree that keeps forking: each round kills what the last one found
# The poll's child's niceness where no cgroup holds the cap: a busy core then runs the supervisor
# (nice 0) about 9 times as often as the child (CFS weights 1024 and 110), so its poll is on time.
CHILD_NICE = 10
# Run in the child's place before the measured command: moves the process into the run's cgroup
# ($0, its cgroup.procs), then execs the command (same pid): nothing runs uncharged. A failed move
# (its error in the child's log) still runs the command, which the poll alone then caps.
SHELL = "/bin/sh"
INTO_CGROUP = 'echo $$ > "$0"; exec "$@"'
EXEC_WAIT_SECONDS = 5.0  # the longest the shell may take to exec the command (it takes ~1 ms)


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
    a process that is itself a supervisor (tests/tf_session.py), for the reason the module
    docstring gives for supervising processes.
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
    included (see the module docstring): `kill` ends them all.

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
        env = {**env, RUNS_VARIABLE: " ".join(filter(None, (env.get(RUNS_VARIABLE), self.token)))}
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
            try:  # just after its exec, before it started a thread: its threads inherit it
                os.setpriority(os.PRIO_PROCESS, self.proc.pid, CHILD_NICE)
            except OSError:
                pass
        self.started = time.monotonic()
        self.max_rss_bytes = 0
        self.peak_rss_bytes: int | None = None
        # psutil.Process objects compare and hash by pid and start time (since boot, whatever
        # the clock does): a remembered process is never confused with a later one on its pid.
        self._seen: set[psutil.Process] = set()  # every process seen in the run's tree
        try:
            # a zombie still has its entry
            self._root: psutil.Process | None = psutil.Process(self.proc.pid)
            self._since = _start_ticks(self.proc.pid)  # every process of the run started no earlier
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
        """ "over-cap" if the kernel killed in the run's cgroup at its limit, or, where no cgroup
        holds the cap, if the tree's RSS passed cap_bytes; "hang" past `deadline`
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
        over = self.killed_at_cap() if self.group is not None else rss > cap_bytes
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

        The child's descendants go first, in rounds until a round finds none left: while
        the child lives it is their subreaper, so a process orphaned by this very kill
        lands in its tree for the next round. A process in the middle of being killed
        cannot fork any more, so the rounds end (KILL_ROUNDS bounds them all the same).
        """
        killed: set[psutil.Process] = set()
        for _ in range(KILL_ROUNDS):
            fresh = [p for p in self._members() if p not in killed and p.pid != self.proc.pid]
            if not fresh:
                break
            for proc in fresh:
                killed.add(proc)
                _kill(proc)
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.reap(block=True)
        _wait_dead(killed, seconds=2.0)
        if self.group is not None:  # its processes are gone: read what it was charged, remove it
            self.killed_at_cap()
            self.cgroup_peak_bytes = self.group.peak_bytes()
            self.group.remove()
            self.group = None

    def _tree(self) -> list[psutil.Process]:
        """The run's live processes by descent: the child and its descendants while it is not
        reaped, and every process seen before that still
        runs, with its descendants. Remembers them."""
        found: set[psutil.Process] = set()
        roots = [self._root] if self._root is not None and self.proc.returncode is None else []
        for proc in list(self._seen):
            if _running(proc):
                roots.append(proc)
            else:
                # gone (a reused pid is another process): never to be signalled
                self._seen.discard(proc)
        for root in roots:
            if root in found:
                continue
            try:
                found.add(root)
                found.update(root.children(recursive=True))
            except psutil.Error:
                pass
        self._seen |= found
        return list(found)

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
        for pid in psutil.pids():
            try:
                if _start_ticks(pid) < self._since:  # older than the child: none of the run's
                    continue
                proc = psutil.Process(pid)
                if proc in found or self.token not in proc.environ().get(RUNS_VARIABLE, "").split():
                    continue
                found.add(proc)
                found.update(proc.children(recursive=True))
            except (psutil.Error, OSError):
                # gone, a zombie, or another user's (then not ours either)
                pass
        return [p for p in found if _running(p)]

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


def _start_ticks(pid: int) -> int:
    """When process `pid` started, in clock ticks since boot (/proc/PID/stat's starttime).
    Raises OSError once it is gone."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read()
    # field 22; the name before ")" may hold spaces
    return int(stat[stat.rindex(b")") + 2 :].split()[19])


def _kill(proc: psutil.Process) -> None:
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


def _running(proc: psutil.Process) -> bool:
    """Still running as the same process (not exited, not a zombie, its pid not reused)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _wait_dead(procs, seconds: float) -> None:
    """Wait up to `seconds` for killed processes to be gone or zombies (their reaping is their
    parent's, or init's): SIGKILL is delivered at once, but a process in the kernel
    (uninterruptible sleep) dies only once it leaves it."""
    left = list(procs)
    deadline = time.monotonic() + seconds
    while left and time.monotonic() < deadline:
        left = [p for p in left if _running(p)]
        if left:
            time.sleep(0.01)


def python(module: str, *args: str) -> list[str]:
    """argv running `python -m module args` with this interpreter."""
    return [sys.executable, "-m", module, *args]
