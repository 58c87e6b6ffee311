"""The run's memory cgroup (leakbench.engine.cgroup): made, limited, joined, read and removed in a
fake hierarchy under tmp_path; and, where this machine has a writable memory hierarchy, a child
killed by the kernel at the cap and read as over-cap."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import pytest

from leakbench.engine import cgroup, runner, supervise

MIB = 1 << 20


@pytest.fixture
def hierarchy(tmp_path, monkeypatch):
    """A fake /proc/self/cgroup and /sys/fs/cgroup for leakbench.engine.cgroup: write(text, folder,
    files) writes the former, makes the folder under the fake root and its files (name -> text)."""
    monkeypatch.setattr(cgroup, "ROOT", tmp_path / "sys")
    monkeypatch.setattr(cgroup, "PROC_SELF", tmp_path / "cgroup")
    monkeypatch.delenv(cgroup.CAP_BY_VARIABLE, raising=False)

    def write(text: str, folder: str, files: dict) -> Path:
        (tmp_path / "cgroup").write_text(text + "\n")
        where = tmp_path / "sys" / folder
        where.mkdir(parents=True, exist_ok=True)
        for name, content in files.items():
            (where / name).write_text(content)
        return where

    return write


def test_v1_group_is_made_under_the_own_memory_cgroup_and_limited(hierarchy):
    parent = hierarchy("5:cpu:/\n4:memory:/process_api/abc", "memory/process_api/abc", {})
    group = cgroup.RunGroup.create(300 * MIB)
    assert group is not None and group.name == "cgroup v1"
    assert group.path.parent == parent
    assert (group.path / "memory.limit_in_bytes").read_text() == str(300 * MIB)
    group.move(1234)
    assert group.pids() == [1234]


def test_v1_memsw_is_limited_after_memory_where_swap_is_accounted(tmp_path):
    writes = []

    class Recorded(type(tmp_path)):
        def write_text(self, data, *args, **kwargs):
            writes.append(self.name)
            return super().write_text(data, *args, **kwargs)

    (tmp_path / "memory.memsw.limit_in_bytes").write_text("9223372036854771712")
    cgroup.RunGroup(1, Recorded(tmp_path))._limit(300 * MIB)
    assert writes == ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"]
    assert (tmp_path / "memory.memsw.limit_in_bytes").read_text() == str(300 * MIB)


def test_v2_needs_the_memory_controller_delegated(hierarchy):
    hierarchy("0::/user/job", "user/job", {"cgroup.subtree_control": "cpu io"})
    assert cgroup.RunGroup.create(300 * MIB) is None
    parent = hierarchy("0::/user/job", "user/job", {"cgroup.subtree_control": "cpu memory"})
    group = cgroup.RunGroup.create(300 * MIB)
    assert group is not None and group.name == "cgroup v2" and group.path.parent == parent
    assert (group.path / "memory.max").read_text() == str(300 * MIB)


@pytest.mark.parametrize(
    "text, folder",
    [("4:memory:/gone", "memory/elsewhere"), ("0::/", "")],  # no folder; v2 without memory
)
def test_no_group_where_none_can_be_made(hierarchy, text, folder):
    hierarchy(text, folder, {})
    assert cgroup.RunGroup.create(300 * MIB) is None


def test_the_variable_forces_the_poll(hierarchy, monkeypatch):
    hierarchy("4:memory:/x", "memory/x", {})
    monkeypatch.setenv(cgroup.CAP_BY_VARIABLE, cgroup.POLL)
    assert cgroup.RunGroup.create(300 * MIB) is None


@pytest.mark.parametrize(
    "version, name, text, killed",
    [
        (1, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n", False),
        (1, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n", True),
        (1, "memory.oom_control", "oom_kill_disable 0\nunder_oom 1\n", True),  # before 4.13
        (2, "memory.events", "low 0\nhigh 0\nmax 12\noom 1\noom_kill 0\n", False),
        (2, "memory.events", "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\n", True),
        (2, "memory.events", "", False),  # unreadable
    ],
)
def test_an_oom_kill_is_read(tmp_path, version, name, text, killed):
    (tmp_path / name).write_text(text)
    assert cgroup.RunGroup(version, tmp_path).oom_killed() is killed


@pytest.mark.parametrize(
    "version, text, full",
    [
        # the thrash measured: 4.8 MiB under a 1 GiB limit in rss, 1 MB of cache, no kill
        (1, "cache 1003520\nrss 1068728320\nmapped_file 0\n", True),
        (1, "cache 1003520\nrss 1048576000\n", False),  # 24 MiB under: room left
        (2, "file 1003520\nanon 1068728320\n", True),
        (2, "anon 1048576000\n", False),
        (1, "", False),  # unreadable
    ],
)
def test_a_group_full_of_anonymous_memory_is_read(tmp_path, version, text, full):
    (tmp_path / "memory.stat").write_text(text)
    assert cgroup.RunGroup(version, tmp_path).full(1 << 30) is full


def test_the_peak_is_read(tmp_path):
    (tmp_path / "memory.max_usage_in_bytes").write_text("314572800\n")
    assert cgroup.RunGroup(1, tmp_path).peak_bytes() == 300 * MIB
    assert cgroup.RunGroup(2, tmp_path).peak_bytes() is None  # no memory.peak (before 5.19)


def test_removal_waits_out_ebusy_and_gives_up_quietly(tmp_path, monkeypatch):
    monkeypatch.setattr(cgroup, "RMDIR_PAUSE_SECONDS", 0)
    (tmp_path / "run").mkdir()
    refusals = iter([errno.EBUSY, errno.EBUSY])
    real = Path.rmdir

    def rmdir(self):
        if (e := next(refusals, None)) is not None:
            raise OSError(e, "busy")
        real(self)

    monkeypatch.setattr(Path, "rmdir", rmdir)
    cgroup.RunGroup(1, tmp_path / "run").remove()
    assert not (tmp_path / "run").exists()
    refusals = iter([errno.EBUSY] * (cgroup.RMDIR_TRIES + 1))
    (tmp_path / "stays").mkdir()
    cgroup.RunGroup(1, tmp_path / "stays").remove()  # never raises
    assert (tmp_path / "stays").exists()
    cgroup.RunGroup(1, tmp_path / "gone").remove()


def _real_group() -> cgroup.RunGroup | None:
    group = cgroup.RunGroup.create(64 * MIB)
    if group is not None:
        group.remove()
    return group


HOG = '''"""Takes twice its cap at once in setup."""
TITLE = "a hog"
SOURCE = "stateful functions"
REPETITION = "nothing"
KIND = "growth"
SIZE_PARAM = "mib"
PARAMS = {"mib": 1}


def setup(mib):
    return bytearray(mib << 20)


def repetition(held):
    pass
'''


@pytest.mark.skipif(
    sys.platform != "linux" or _real_group() is None,
    reason="no writable memory cgroup hierarchy here (or LEAKBENCH_CAP_BY=poll): the poll alone",
)
def test_the_kernel_kills_at_the_cap_and_the_run_reads_over_cap(tmp_path, monkeypatch):
    cap = 200 * MIB
    real = supervise.Supervised.over_limits
    # the poll never reaches the cap: only the kernel can end the run over it
    monkeypatch.setattr(
        supervise.Supervised,
        "over_limits",
        lambda self, _cap, deadline: real(self, 1 << 50, deadline),
    )
    made = []
    create = cgroup.RunGroup.create
    monkeypatch.setattr(
        cgroup.RunGroup, "create", lambda limit: made.append(create(limit)) or made[-1]
    )
    path = tmp_path / "hog.py"
    path.write_text(HOG)
    run = runner.ChildRun(warmup=1, reps=3, heap_reps=0, cap_bytes=cap, timeout_seconds=60)
    outcome = runner.run_child(path, {"mib": 2 * cap // MIB}, run)
    assert (outcome.status, outcome.phase) == ("over-cap", "setup"), outcome.error
    assert outcome.cap_enforced_by in ("cgroup v1", "cgroup v2") and outcome.killed_by_kernel
    # the kernel's bound is what the run was charged; its RSS peak is no bound: it also counts
    # file pages charged to whoever read them first (the interpreter's own, once other tests ran)
    assert outcome.cgroup_peak_bytes is None or outcome.cgroup_peak_bytes <= cap
    assert outcome.peak_rss_bytes is not None and outcome.peak_rss_bytes > cap // 2
    (group,) = made
    assert group is not None and not group.path.exists(), "the run's cgroup is removed"


class _Group:
    """A run's cgroup as over_limits reads it: full of anonymous memory, or not."""

    def __init__(self, full: bool):
        self._full = full

    def full(self, limit_bytes: int) -> bool:
        return self._full


class _Tree:
    """What Supervised.over_limits reads of a run: its tree's RSS, its group, the kernel's kill."""

    def __init__(self, rss: int, group, killed: bool):
        self.group, self.max_rss_bytes, self._killed = group, 0, killed
        self._rss = rss

    def _tree(self):
        return [type("P", (), {"memory_info": lambda _: type("M", (), {"rss": self._rss})()})()]

    def killed_at_cap(self) -> bool:
        return self._killed


@pytest.mark.parametrize(
    "group, rss, killed, expected",
    [
        # under a run's cgroup the kernel alone kills for memory: a tree RSS past the cap counts
        # library pages charged elsewhere (TensorFlow's ~300 MiB), not what the kernel holds
        (_Group(full=False), 2 * MIB, False, None),
        (_Group(full=False), 0, True, "over-cap"),
        # full of anonymous memory: the kernel may reclaim code pages for minutes without a kill
        (_Group(full=True), 0, False, "over-cap"),
        # the poll's way: the tree's RSS past the cap
        (None, 2 * MIB, False, "over-cap"),
        (None, MIB // 2, False, None),
    ],
)
def test_over_cap_is_the_kernels_kill_under_a_cgroup_and_the_polls_rss_elsewhere(
    group, rss, killed, expected
):
    run = _Tree(rss, group, killed)
    assert supervise.Supervised.over_limits(run, MIB, deadline=float("inf")) == expected
    assert run.max_rss_bytes == rss


def test_a_group_a_killed_runner_left_is_removed_by_the_next_run(hierarchy):
    parent = hierarchy("4:memory:/x", "memory/x", {})
    for name in ("leakbench-old", "leakbench-new", "leakbench-busy", "other"):
        (parent / name).mkdir()
    (parent / "leakbench-busy" / "cgroup.procs").write_text("4321\n")
    for name in ("leakbench-old", "leakbench-busy", "other"):
        os.utime(parent / name, (0, 0))
    group = cgroup.RunGroup.create(300 * MIB)
    assert group is not None
    left = sorted(p.name for p in parent.iterdir())
    assert left == sorted(["leakbench-new", "leakbench-busy", "other", group.path.name])


def test_the_polls_child_and_its_autogroup_run_at_child_nice(monkeypatch):
    """Under the poll, the child yields the CPU to the supervisor: its niceness, and its session's
    autogroup's where the kernel has autogroups (a niceness counts only inside its group)."""
    monkeypatch.setenv(cgroup.CAP_BY_VARIABLE, cgroup.POLL)
    child = supervise.Supervised(
        ["sleep", "30"], env=dict(os.environ), stdout=None, stderr=None, cap_bytes=300 * MIB
    )
    try:
        assert child.cap_enforced_by == cgroup.POLL
        assert os.getpriority(os.PRIO_PROCESS, child.proc.pid) == supervise.CHILD_NICE
        group = Path(f"/proc/{child.proc.pid}/autogroup")
        if group.exists():
            assert group.read_text().split()[-1] == str(supervise.CHILD_NICE)
    finally:
        child.kill()
