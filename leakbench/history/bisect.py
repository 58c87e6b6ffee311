"""`leakbench bisect`'s search: the first TensorFlow
build whose verdict differs from the good end's.

Pure: nothing here installs, measures or reads the network. The caller hands in the
candidates (registry.Build, ordered by `between`), `install(build)` (raises InstallFailed
when the build cannot be installed: it is skipped) and `measure(build) -> record` (a
leakbench record, or a dict with at least "verdict"). `search` measures both ends, then
halves the range as `git bisect` does, skipping builds whose reading is unusable
(leakbench.history.readings: the build, not the pipeline, failed) for the
nearest untried neighbour, and finally measures the two builds at the boundary again until
each has read its verdict `confirm` times. It installs a build only when it is not the one
installed already. It assumes one verdict change between the ends (docs/bisect.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from packaging.version import Version

from leakbench.history.builds import parse, pep440
from leakbench.history.readings import Reading, git_ref, reading_of
from leakbench.history.registry import Build

FOUND, SAME, UNUSABLE_END, UNRESOLVED, UNSTABLE = (
    "found",
    "same",
    "unusable-end",
    "unresolved",
    "unstable",
)
COMPARE_URL = "https://github.com/tensorflow/tensorflow/compare/{}...{}"


class BisectError(ValueError):
    """Bad input for a bisection (a version that is no PEP 440
    version or not served, ends out of order). One line."""


class InstallFailed(RuntimeError):
    """Raised by an install callable when a build cannot
    be installed: the build is skipped, as unusable."""


def ends(good: str, bad: str) -> tuple[Version, Version]:
    """The two ends as versions. Raises BisectError for
    one that is not PEP 440, or good not before bad."""
    found = []
    for option, text in (("--good", good), ("--bad", bad)):
        v = parse(text)
        if v is None:
            raise BisectError(
                f"{option} {text!r}: not a PEP 440 version such as 2.15.1 or 2.23.0.dev20261026"
            )
        found.append(v)
    if not found[0] < found[1]:
        raise BisectError(f"--good {good} is not before --bad {bad} (PEP 440 order)")
    return found[0], found[1]


def between(builds: list[Build], good: str, bad: str) -> list[Build]:
    """The builds from `good` to `bad`, both included, in PEP 440 order (2.22.0.dev… < 2.22.0rc0 <
    2.22.0). Raises BisectError for a version that is not PEP
    440, good not before bad, or an end not among `builds`."""
    lo, hi = ends(good, bad)
    by_version = {pep440(b.version): b for b in builds}
    for option, v in (("--good", lo), ("--bad", hi)):
        if v not in by_version:
            known = sorted(by_version)
            at = sum(1 for w in known if w < v)
            near = ", ".join(str(w) for w in known[max(0, at - 2) : at + 2]) or "none"
            raise BisectError(
                f"{option} {v}: the registry serves no such TensorFlow build for this interpreter "
                f"(nearby: {near})"
            )
    return [by_version[v] for v in sorted(by_version) if lo <= v <= hi]


@dataclass
class Outcome:
    """What a search found. status: FOUND (good and bad are the boundary, confirmed), SAME (the ends
    read alike), UNUSABLE_END, UNRESOLVED (the boundary lies among skipped builds: good and bad
    around them), UNSTABLE (a boundary build read another verdict
    on confirmation). steps: measurements between the ends."""

    status: str
    message: str
    candidates: list
    readings: list
    good: Build | None = None
    bad: Build | None = None
    skipped: list = field(default_factory=list)
    steps: int = 0

    @property
    def exit_code(self) -> int:
        return 0 if self.status == FOUND else 1

    def git(self, build: Build | None) -> str | None:
        """The tensorflow_git its readings saw (first known), for the boundary builds."""
        return next(
            (
                r.tensorflow_git
                for r in self.readings
                if build and r.version == build.version and r.tensorflow_git
            ),
            None,
        )

    def compare_url(self) -> str | None:
        refs = [git_ref(b, self.git(b)) for b in (self.good, self.bad) if b]
        return COMPARE_URL.format(*refs) if len(refs) == 2 and all(refs) else None

    def as_dict(self) -> dict:
        ends = {
            name: (
                {**asdict(b), "tensorflow_git": self.git(b), "git_ref": git_ref(b, self.git(b))}
                if b
                else None
            )
            for name, b in (("good", self.good), ("bad", self.bad))
        }
        return {
            "status": self.status,
            "message": self.message,
            "exit_code": self.exit_code,
            "boundary": {**ends, "compare_url": self.compare_url()},
            "candidates": len(self.candidates),
            "first_candidate": self.candidates[0].version,
            "last_candidate": self.candidates[-1].version,
            "steps": self.steps,
            "measurements": [asdict(r) for r in self.readings],
            "skipped": self.skipped,
        }


def nearest(lo: int, hi: int, tried: set) -> int | None:
    """The index strictly between lo and hi nearest their
    middle that was not tried (git bisect skip)."""
    mid = (lo + hi) // 2
    left = [i for i in range(lo + 1, hi) if i not in tried]
    return min(left, key=lambda i: (abs(i - mid), i)) if left else None


class _Reader:
    """One bisection's reading of a build: it installs the build where it is not the one installed
    already (an InstallFailed is an unusable reading, phase "install"), measures it, and keeps
    every reading in order (readings) and the build installed (installed: it, or none)."""

    def __init__(
        self,
        install: Callable[[Build], None],
        measure: Callable[[Build], dict],
        on_reading: Callable[[Reading], None] | None,
        clock: Callable[[], float],
    ):
        self.install, self.measure = install, measure
        self.on_reading, self.clock = on_reading, clock
        self.readings: list[Reading] = []
        self.installed: list[Build] = []

    def __call__(self, build: Build, role: str) -> Reading:
        """The reading of `build` in `role` ("end", "search", "confirm"), kept and handed on."""
        install, measure, on_reading, clock = (
            self.install,
            self.measure,
            self.on_reading,
            self.clock,
        )
        readings, installed = self.readings, self.installed
        spent = 0.0
        if not installed or installed[-1] != build:
            start = clock()
            try:
                installed[:] = []
                install(build)
                installed.append(build)
                spent = clock() - start
            except InstallFailed as e:
                got = Reading(
                    build.version,
                    build.dist,
                    build.date,
                    role,
                    "error",
                    False,
                    phase="install",
                    install_seconds=round(clock() - start, 1),
                    error=str(e),
                )
                readings.append(got)
                if on_reading:
                    on_reading(got)
                return got
        got = reading_of(build, measure(build), role, spent)
        readings.append(got)
        if on_reading:
            on_reading(got)
        return got

    def verdicts(self, build: Build) -> list:
        """The verdicts `build` read, in order."""
        return [r.verdict for r in self.readings if r.version == build.version]


def _unusable_end(ends: tuple[tuple[Build, Reading | None], ...]) -> str | None:
    """Why the bisection stops at its ends: the first (build, reading) whose reading is unusable,
    in words; None where each end read was usable (an end not read: None)."""
    for end, got in ends:
        if got is not None and not got.usable:
            return (
                f"{end.version} ({end.dist}) read {got.verdict}"
                f"{' in ' + got.phase if got.phase else ''}: an end must be measurable to bisect"
                f"{': ' + got.error if got.error else ''}"
            )
    return None


def search(
    candidates: list[Build],
    install: Callable[[Build], None],
    measure: Callable[[Build], dict],
    confirm: int = 3,
    on_reading: Callable[[Reading], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Outcome:
    """Bisect `candidates` (ordered, the good end first) for the first build whose verdict differs
    from the first's; see the module docstring. confirm: readings each boundary build must give
    alike (>= 1). Raises BisectError for fewer than two
    candidates; lets the callables' other errors through."""
    if len(candidates) < 2 or confirm < 1:
        raise BisectError("a bisection needs two candidates or more, and confirm >= 1")
    read = _Reader(install, measure, on_reading, clock)

    def done(status: str, message: str, **more) -> Outcome:
        return Outcome(status, message, candidates, read.readings, **more)

    first, last = candidates[0], candidates[-1]
    a = read(first, "end")
    b = read(last, "end") if a.usable else None
    if (refused := _unusable_end(((first, a), (last, b)))) is not None:
        return done(UNUSABLE_END, refused)
    assert b is not None  # a was usable, so b was read (and is usable)
    if b.verdict == a.verdict:
        return done(
            SAME,
            f"both ends read {a.verdict}: nothing to bisect "
            f"between {first.version} and {last.version}",
        )
    tried: set[int] = set()
    lo, hi, skipped, steps = 0, len(candidates) - 1, [], 0
    bad_verdict = b.verdict
    while (i := nearest(lo, hi, tried)) is not None:
        tried.add(i)
        got = read(candidates[i], "search")
        steps += 1
        if not got.usable:
            skipped.append(candidates[i].version)
        elif got.verdict == a.verdict:
            lo = i
        else:
            hi, bad_verdict = i, got.verdict
    good, bad = candidates[lo], candidates[hi]
    if hi - lo > 1:
        return done(
            UNRESOLVED,
            f"the first build not reading {a.verdict} is one of {hi - lo - 1} unusable builds "
            f"after {good.version} and up to {bad.version}",
            good=good,
            bad=bad,
            skipped=skipped,
            steps=steps,
        )
    wanted = {good: a.verdict, bad: bad_verdict}
    order = sorted(wanted, key=lambda x: read.installed[-1] != x if read.installed else False)
    for build in order:
        for _ in range(confirm - 1):
            read(build, "confirm")
    seen = {x: read.verdicts(x)[-confirm:] for x in wanted}
    if any(v != [wanted[x]] * confirm for x, v in seen.items()):
        told = "; ".join(f"{x.version}: {', '.join(str(w) for w in v)}" for x, v in seen.items())
        return done(
            UNSTABLE,
            f"the boundary is not stable over {confirm} readings each ({told})",
            good=good,
            bad=bad,
            skipped=skipped,
            steps=steps,
        )
    return done(
        FOUND,
        f"{bad.version} ({bad.dist}) is the first build reading {bad_verdict}; "
        f"{good.version} ({good.dist}) reads {a.verdict}",
        good=good,
        bad=bad,
        skipped=skipped,
        steps=steps,
    )
