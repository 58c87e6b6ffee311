"""asv's pages of the records: TensorFlow builds as asv's commits.

asv draws every benchmark over a project's commits. The records exist at one leakbench commit and
vary by TensorFlow build, so, as astropy-benchmarks tracks another package across its versions,
asv is given a repository whose commits ARE the builds: `build_repo` writes .asv/tf-builds, one
commit per build of the machine's records in build order (leakbench.history.builds.sort_key),
each with a fixed author and committer, the build's date (results/builds.json for a release, the
version string for a dated nightly), a file BUILD holding the version and a tag ("tf-2.21.0",
"tf-nightly-2026-10-26"). Same inputs, same hashes on every clone: committed asv results stay
valid, and the repository is rebuilt from the records alone, without the network.

`publish_asv` then runs `asv run` once per build, in the running interpreter (an "existing"
environment), with --set-commit-hash that build's commit: asv measures nothing, its track_
benchmarks (benchmarks/benchmark_pairs.py) read the numbers of the records file named by
LEAKBENCH_RECORDS, so a build's records and its asv results come from one measurement. `asv run`
was kept over writing asv.results.Results by hand: asv itself discovers the suite and writes its
results, benchmarks.json and machine.json in the format its `publish` reads, and asv 0.6.6
passes the caller's environment variables to the benchmark processes (runner.py copies
os.environ into each one's environment). asv takes a machine's description from
~/.asv-machine.json, so it runs with HOME pointing at a temporary one describing the machine
that made the records (`machine_info`), not the one publishing them.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from leakbench import version as engine
from leakbench.history import builds, store

REPO_DIR = Path(".asv") / "tf-builds"  # under the checkout; .gitignore keeps .asv/ out of git
BRANCH = "builds"  # asv.conf.json's "branches"
AUTHOR = ("leakbench", "leakbench@localhost")
DATES_FILE = "builds.json"  # in results/: release -> YYYY-MM-DD
ENV_BUILD = "LEAKBENCH_BUILD"  # the build a run of the suite reads (its version)
ENV_RECORDS = "LEAKBENCH_RECORDS"  # ...and the records file it reads it from
ASV_TIMEOUT_SECONDS = 1800  # one build's `asv run`: seconds on a laptop, room for a slow runner
_ARCH = re.compile(r"^([^-]+)-(.+?)-(x86_64|aarch64|arm64|i686|ppc64le|s390x)(?:-|$)")


class PublishError(RuntimeError):
    """A build without a date, a git or asv command that failed. One line."""


def engine_identity(records: Iterable[Mapping]) -> str:
    """The engine that made `records`, as asv's benchmark version: leakbench.version.identity of
    each ("0.2.0+<source hash>"; "unknown" for a record without `engine`); several joined by ","."""
    return ",".join(sorted({engine.identity(dict(rec)) for rec in records})) or engine.UNKNOWN


def tag_name(version: str) -> str:
    """A build's tag: "tf-2.21.0", or "tf-nightly-2026-10-26" for a dated nightly."""
    day = builds.build_date(version)
    return f"tf-nightly-{day.isoformat()}" if day else f"tf-{version}"


def read_dates(path: Path) -> dict[str, str]:
    """results/builds.json: release -> its date (YYYY-MM-DD); {} when the file is absent.
    Raises PublishError for a file that is not such an object."""
    if not Path(path).is_file():
        return {}
    try:
        dates = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise PublishError(f"{path}: unreadable ({e})") from None
    if not isinstance(dates, dict) or not all(isinstance(v, str) for v in dates.values()):
        raise PublishError(f"{path}: not an object of version -> YYYY-MM-DD")
    return dates


def refresh_dates(path: Path, versions: Iterable[str] = (), served=None) -> dict[str, str]:
    """Add to results/builds.json the registry's date (its first installable wheel's upload) of
    every release it serves (leakbench.history.registry.served: network), keeping the dates it
    has; `versions`, when given, limits the releases added. Returns what it wrote. Raises
    RegistryError when the registry cannot be read."""
    from leakbench.history import registry

    wanted = set(versions)
    dates = read_dates(path)
    for b in (served or registry.served)():
        if b.date and not b.nightly and (not wanted or b.version in wanted):
            dates.setdefault(b.version, b.date)
    dates = dict(sorted(dates.items(), key=lambda kv: builds.sort_key(kv[0])))
    Path(path).write_text(json.dumps(dates, indent=1) + "\n")
    return dates


def build_date(version: str, dates: Mapping[str, str]) -> str:
    """A build's date (YYYY-MM-DD): a dated nightly's own, else `dates`' (results/builds.json).
    Raises PublishError for a release it does not list."""
    day = builds.build_date(version)
    if day:
        return day.isoformat()
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", dates.get(version, "")):
        raise PublishError(
            f"no date of TensorFlow {version} in results/{DATES_FILE}: add it, or run "
            "leakbench.publish.asv_builds.refresh_dates (reads the registry)"
        )
    return dates[version]


def _git(repo: Path, *args: str, env: Mapping[str, str] | None = None, text: str = "") -> str:
    """git in `repo` with no user or system configuration (a signing or hook setting would change
    the hashes). Raises PublishError with git's message when it fails."""
    command = ["git", "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null", *args]
    base = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C"}
    done = subprocess.run(
        command,
        cwd=repo,
        input=text,
        capture_output=True,
        text=True,
        env={**os.environ, **base, **(env or {})},
    )
    if done.returncode != 0:
        raise PublishError(f"git {args[0]} in {repo} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def build_repo(repo: Path, dated: Mapping[str, str]) -> dict[str, str]:
    """Write the builds repository at `repo` (a bare git repository, made or reused): one commit
    per build of `dated` (version -> YYYY-MM-DD) in build order, on branch BRANCH, each tagged
    (tag_name). Deterministic: the same builds and dates give the same hashes. Returns version ->
    commit hash, in build order. Raises PublishError when git fails."""
    repo = Path(repo)
    if not (repo / "objects").is_dir():
        shutil.rmtree(repo, ignore_errors=True)
        repo.mkdir(parents=True)
        _git(repo, "init", "--bare", "--quiet", "--template=")
    _git(repo, "symbolic-ref", "HEAD", f"refs/heads/{BRANCH}")
    commits: dict[str, str] = {}
    parent: list[str] = []
    for version in sorted(dated, key=builds.sort_key):
        blob = _git(repo, "hash-object", "-w", "--stdin", text=f"{version}\n")
        tree = _git(repo, "mktree", text=f"100644 blob {blob}\tBUILD\n")
        days = (dt.date.fromisoformat(dated[version]) - dt.date(1970, 1, 1)).days
        stamp = f"@{days * 86400 + 43200} +0000"  # noon UTC of the build's day: no local time
        who = {
            "GIT_AUTHOR_NAME": AUTHOR[0],
            "GIT_AUTHOR_EMAIL": AUTHOR[1],
            "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_NAME": AUTHOR[0],
            "GIT_COMMITTER_EMAIL": AUTHOR[1],
            "GIT_COMMITTER_DATE": stamp,
        }
        kind = "tf-nightly" if builds.is_nightly(version) else "tensorflow"
        message = f"TensorFlow {builds.label(version)}\n\n{kind} {version}, {dated[version]}\n"
        commit = _git(repo, "commit-tree", tree, *parent, "-F", "-", env=who, text=message)
        commits[version] = commit
        parent = ["-p", commit]
    if commits:
        _git(repo, "update-ref", f"refs/heads/{BRANCH}", parent[-1])
    tags = {tag_name(v): c for v, c in commits.items()}
    for old in _git(repo, "tag", "--list").split():
        if old not in tags:
            _git(repo, "tag", "--delete", old)
    for name, commit in tags.items():
        _git(repo, "tag", "--force", name, commit)
    return commits


def machine_info(records: Iterable[Mapping], machine: str) -> dict[str, str]:
    """asv's description of the machine that made `records` (their `environment`: cpu, cores,
    ram_bytes, platform), in machine.json's keys; what they lack is this machine's."""
    env: dict = {}
    for rec in records:
        env = {**env, **{k: v for k, v in (rec.get("environment") or {}).items() if v is not None}}
    uname = platform.uname()
    found = _ARCH.match(str(env.get("platform") or ""))
    system, release, arch = found.groups() if found else (uname.system, uname.release, None)
    return {
        "arch": arch or uname.machine,
        "cpu": str(env.get("cpu") or "unknown"),
        "machine": machine,
        "num_cpu": str(env.get("cores") or os.cpu_count()),
        "os": f"{system} {release}",
        "ram": str(env.get("ram_bytes") or ""),
    }


def asv_conf(root: Path, repo: Path, results: Path, into: Path) -> Path:
    """A copy of root/asv.conf.json at `into`, its paths absolute (asv reads them from the copy's
    folder), its repo `repo`, its results `results`. Raises OSError, ValueError (asv's
    UserError) for a missing or malformed asv.conf.json."""
    from asv import util

    conf = util.load_json(str(root / "asv.conf.json"), js_comments=True)
    conf["repo"] = str(Path(repo).resolve())
    conf["results_dir"] = str(Path(results).resolve())
    for key in ("benchmark_dir", "env_dir", "html_dir"):
        conf[key] = str((root / conf[key]).resolve())
    into.write_text(json.dumps(conf, indent=2))
    return into


def _run_asv(conf: Path, home: Path, machine: str, commit: str, env: Mapping[str, str]) -> None:
    """`asv run` of one build (its commit) in this interpreter. Raises PublishError with asv's
    last lines when it fails or a benchmark failed."""
    command = [sys.executable, "-m", "asv", "run", "--config", str(conf), "--machine", machine]
    command += ["--environment", f"existing:{sys.executable}", "--set-commit-hash", commit]
    try:
        done = subprocess.run(
            command,
            cwd=home,
            capture_output=True,
            text=True,
            timeout=ASV_TIMEOUT_SECONDS,
            env={**os.environ, "HOME": str(home), **env},
        )
    except subprocess.TimeoutExpired:
        raise PublishError(f"asv run did not finish in {ASV_TIMEOUT_SECONDS} s") from None
    said = (done.stdout + done.stderr).strip()
    if done.returncode != 0 or "failed" in said.lower():
        last = " | ".join(said.splitlines()[-6:])
        raise PublishError(f"asv run of {commit[:8]} failed ({done.returncode}): {last}")


def publish_asv(
    root: Path,
    results: Path,
    machine: str,
    log: Callable[[str], None] = print,
    repo: Path | None = None,
    pairs: Iterable[str] = (),
) -> list[Path]:
    """asv's results of `machine`'s records in `results`: the builds repository (root/REPO_DIR, or
    `repo`), then one `asv run` per build. results/<machine>/ then holds machine.json and one
    result file per build, nothing else (older commits, environments, engines: removed), and
    results/benchmarks.json the suite's. Idempotent: a rerun writes the same files. pairs: limit
    the suite's pairs (LEAKBENCH_PAIRS; default every pair of the catalog). Returns the files
    written. Raises PublishError (a build without a date, git or asv failed) and
    store.VersionError (no records of `machine`)."""
    root, results = Path(root).resolve(), Path(results).resolve()
    files = store.available(results, machine)
    dates = read_dates(results / DATES_FILE)
    commits = build_repo(repo or root / REPO_DIR, {v: build_date(v, dates) for v in files})
    records = {v: store.read_records(p) for v, p in files.items()}
    engines = {v: engine_identity(recs) for v, recs in records.items()}
    if len(set(engines.values())) > 1:  # asv publish keeps the results of benchmarks.json's only
        log(f"asv: records of several engines ({engines}); asv keeps the newest build's engine")
    newest = records[next(reversed(records))] if records else []
    with tempfile.TemporaryDirectory(prefix="leakbench-asv-", dir=results) as tmp:
        work = Path(tmp)
        home = work / "home"
        home.mkdir()
        info = {machine: machine_info(newest, machine), "version": 1}
        (home / ".asv-machine.json").write_text(json.dumps(info, indent=2))
        conf = asv_conf(root, repo or root / REPO_DIR, work / "results", work / "asv.conf.json")
        for version, commit in commits.items():
            log(f"asv: TensorFlow {version} ({commit[:8]}, engine {engines[version]})")
            env = {ENV_BUILD: version, ENV_RECORDS: str(files[version])}
            _run_asv(conf, home, machine, commit, {**env, "LEAKBENCH_PAIRS": ",".join(pairs)})
        return _replace(work / "results", results, machine)


def _replace(new: Path, results: Path, machine: str) -> list[Path]:
    """Move the fresh asv results of `machine` and benchmarks.json from `new` into `results`,
    removing every other result file of that machine first."""
    mine = results / machine
    mine.mkdir(parents=True, exist_ok=True)
    for old in mine.glob("*.json"):
        old.unlink()
    written = []
    for made in sorted((new / machine).glob("*.json")):
        written.append(Path(shutil.move(str(made), mine / made.name)))
    written.append(Path(shutil.move(str(new / "benchmarks.json"), results / "benchmarks.json")))
    return written
