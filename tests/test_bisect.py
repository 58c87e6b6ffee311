"""leakbench bisect: the candidates from a saved PEP 691 sample (tests/data/pypi-simple-tf.json, two
pages trimmed from PyPI's tensorflow-cpu and tf-nightly), their PEP 440 order, the search with a
fake installer and a fake measurer, the disk budget, the output file and the command's bad input.
No TensorFlow, no network: the registry is the saved
sample, the venv and its measurements are fakes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import invoke, refused
from packaging.tags import Tag
from packaging.version import Version

from leakbench.history import bisect, installer, readings, registry
from leakbench.history.registry import Build
from leakbench.reporters import bisect as views
from leakbench.units import GIB, MIB

SAMPLE = json.loads((Path(__file__).parent / "data" / "pypi-simple-tf.json").read_text())
HERE = {
    Tag("cp311", "cp311", p)
    for p in ("manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
}


def fetch(dist: str) -> dict:
    return SAMPLE[dist]


def served() -> list[Build]:
    return registry.served(fetch=fetch, tags=HERE)


# --- the registry and the candidates -------------------------------------------------------------


def test_registry_keeps_builds_with_a_wheel_for_this_interpreter():
    found = {b.version: b for b in registry.builds(SAMPLE["tf-nightly"], "tf-nightly", HERE)}
    assert list(found) == [
        "2.21.0.dev20260203",
        "2.22.0.dev20260204",
        "2.22.0.dev20260205",
        "2.23.0.dev20261025",
        "2.23.0.dev20261026",
    ]
    assert found["2.23.0.dev20261026"].date == "2026-10-26"  # a nightly's date: its version's
    # the cp311 manylinux wheel's, not win's
    assert found["2.23.0.dev20261026"].wheel_bytes == 644791456
    assert found["2.23.0.dev20261026"].requirement == "tf-nightly==2.23.0.dev20261026"
    releases = {
        b.version: b for b in registry.builds(SAMPLE["tensorflow-cpu"], "tensorflow-cpu", HERE)
    }
    assert releases["2.16.2"].date == "2024-06-28"  # a release's: its wheel's upload time
    # a build with cp312 or Windows wheels only is not served here
    only_other = {Tag("cp312", "cp312", "manylinux_2_27_aarch64")}
    assert registry.builds(SAMPLE["tensorflow-cpu"], "tensorflow-cpu", only_other) == []


def test_registry_reads_pep691_only():
    with pytest.raises(registry.RegistryError):
        registry.builds({"html": "<a>...</a>"}, "tf-nightly", HERE)
    assert registry._date("2.23.0-dev20261026") == "2026-10-26"
    assert registry._date("2.16.2") is None


def test_candidates_in_pep440_order_nightlies_and_rcs():
    versions = [b.version for b in bisect.between(served(), "2.21.0", "2.23.0.dev20261026")]
    assert versions == [
        "2.21.0",
        "2.22.0.dev20260204",
        "2.22.0.dev20260205",
        "2.22.0rc0",
        # 2.21.0.dev… comes before 2.21.0
        "2.23.0.dev20261025",
        "2.23.0.dev20261026",
    ]
    dists = {b.version: b.dist for b in served()}
    assert dists["2.22.0rc0"] == "tensorflow-cpu" and dists["2.22.0.dev20260204"] == "tf-nightly"
    assert [b.version for b in bisect.between(served(), "2.15.1", "2.16.2")] == [
        "2.15.1",
        "2.16.0rc0",
        "2.16.1",
        "2.16.2",
    ]


@pytest.mark.parametrize(
    "good, bad, fragment",
    [
        ("2.16.2", "2.15.1", "not before"),
        ("2.15.1", "2.15.1", "not before"),
        ("two", "2.16.2", "--good 'two': not a PEP 440 version"),
        ("2.15.1", "2.16.9", "--bad 2.16.9: the registry serves no such"),
        ("2.21.0", "2.23.0.dev20261020", "2.22.0rc0, 2.23.0.dev20261025, 2.23.0.dev20261026)"),
    ],
)
def test_bad_ends(good, bad, fragment):
    with pytest.raises(bisect.BisectError, match=".") as e:
        bisect.between(served(), good, bad)
    assert fragment in str(e.value)


# --- the search, with fakes ----------------------------------------------------------------------


def nightlies(n: int) -> list[Build]:
    return [Build(f"2.22.0.dev2026{i:04d}", "tf-nightly", None, 600 * MIB) for i in range(n)]


class Fake:
    """A fake TensorFlow line: build i reads verdicts(i) (a word, or a list read in turn)."""

    def __init__(self, builds, verdicts, broken=()):
        self.builds, self.verdicts, self.broken = builds, verdicts, set(broken)
        self.installs, self.measured, self.counts = [], [], {}

    def install(self, build):
        if self.builds.index(build) in self.broken:
            raise bisect.InstallFailed("no matching distribution")
        self.installs.append(build.version)

    def measure(self, build):
        i = self.builds.index(build)
        assert self.installs[-1] == build.version  # measured what is installed
        self.measured.append(i)
        word = self.verdicts(i)
        if isinstance(word, list):
            word = word[self.counts.get(i, 0) % len(word)]
        self.counts[i] = self.counts.get(i, 0) + 1
        rec = {
            "verdict": word,
            "seconds": 10.0,
            "signals": ["python objects"] if word == "leak" else [],
            "environment": {
                "tensorflow": build.version,
                "tensorflow_git": f"v1.12.1-{i}-gabcdef{i:05d}",
            },
            "metrics": {
                "python_objects_growth": {"slope": 133.0, "first_half": 133.0, "second_half": 133.0}
            },
        }
        if word == "over-cap-import":
            rec.update(verdict="over-cap", phase="import")
        return rec


def bisected(fake, confirm=3):
    return bisect.search(fake.builds, fake.install, fake.measure, confirm=confirm)


@pytest.mark.parametrize(
    "n, flip", [(2, 1), (3, 1), (3, 2), (100, 1), (100, 37), (100, 99), (166, 57)]
)
def test_boundary_found_in_about_log2_measurements(n, flip):
    fake = Fake(nightlies(n), lambda i: "leak" if i < flip else "no-leak")
    found = bisected(fake)
    assert found.status == bisect.FOUND and found.exit_code == 0
    assert (found.good.version, found.bad.version) == (
        fake.builds[flip - 1].version,
        fake.builds[flip].version,
    )
    search = math.ceil(math.log2(n - 1)) if n > 2 else 0
    assert found.steps <= search
    # ends, halvings, two more readings per boundary build
    assert len(found.readings) == 2 + found.steps + 2 * 2
    assert [r.verdict for r in found.readings if r.role == "confirm"].count("leak") == 2
    # one install per build, plus one for the boundary build that was not installed last
    assert len(fake.installs) == 2 + found.steps + 1
    assert all(a != b for a, b in zip(fake.installs, fake.installs[1:]))


def test_unusable_builds_are_skipped_for_a_neighbour():
    # the middle of 0..99 is 49: it, then its neighbours 48 and 50, read nothing usable; 47 does
    broken_install, import_over_cap, errors = 50, 49, {48}

    def verdict(i):
        if i == import_over_cap:
            return "over-cap-import"
        return "error" if i in errors else "leak" if i < 60 else "no-leak"

    fake = Fake(nightlies(100), verdict, broken=[broken_install])
    found = bisected(fake)
    assert found.status == bisect.FOUND
    assert (found.good.version, found.bad.version) == (
        fake.builds[59].version,
        fake.builds[60].version,
    )
    assert found.skipped[:3] == [fake.builds[i].version for i in (49, 48, 50)]
    failed = next(r for r in found.readings if r.version == fake.builds[broken_install].version)
    assert (failed.verdict, failed.phase, failed.usable) == ("error", "install", False)


def test_boundary_among_unusable_builds_is_unresolved():
    fake = Fake(
        nightlies(10), lambda i: "hang" if i in (4, 5, 6) else "leak" if i < 5 else "no-leak"
    )
    found = bisected(fake)
    assert found.status == bisect.UNRESOLVED and found.exit_code == 1
    assert (found.good.version, found.bad.version) == (
        fake.builds[3].version,
        fake.builds[7].version,
    )
    assert "one of 3 unusable builds" in found.message


def test_unstable_boundary_is_reported_with_the_verdicts_seen():
    fake = Fake(
        nightlies(20), lambda i: "leak" if i < 12 else ["no-leak", "leak"] if i == 12 else "no-leak"
    )
    found = bisected(fake)
    assert found.status == bisect.UNSTABLE and found.exit_code == 1
    assert "not stable" in found.message and "no-leak, leak, no-leak" in found.message


def test_ends_reading_the_same_end_the_search():
    fake = Fake(nightlies(50), lambda i: "leak")
    found = bisected(fake)
    assert found.status == bisect.SAME and found.exit_code == 1
    assert len(found.readings) == 2 and "both ends read leak" in found.message


def test_an_unusable_end_ends_the_search():
    fake = Fake(nightlies(50), lambda i: "error" if i == 0 else "leak")
    found = bisected(fake)
    assert found.status == bisect.UNUSABLE_END and len(found.readings) == 1


def test_confirm_one_measures_no_more():
    fake = Fake(nightlies(9), lambda i: "leak" if i < 4 else "no-leak")
    found = bisected(fake, confirm=1)
    assert found.status == bisect.FOUND and not [r for r in found.readings if r.role == "confirm"]


def test_result_names_the_rate_and_the_commits():
    builds = [
        Build("2.15.1", "tensorflow-cpu", "2024-03-08"),
        Build("2.16.0rc0", "tensorflow-cpu", "2024-02-23"),
        Build("2.16.1", "tensorflow-cpu", "2024-03-09"),
    ]
    found = bisected(Fake(builds, lambda i: "leak" if i == 0 else "no-leak"))
    data = found.as_dict()
    assert (
        data["boundary"]["compare_url"]
        == "https://github.com/tensorflow/tensorflow/compare/v2.15.1...v2.16.0-rc0"
    )
    leak = data["measurements"][0]
    assert (leak["rate_label"], leak["rate"], leak["rate_unit"]) == (
        "Python objects",
        133.0,
        "objects/repetition",
    )
    # the decision's words; a bisect stored before readings kept them: the rate in its unit
    assert views.rate_text(leak) == "python objects +133/rep"
    assert views.rate_text({**leak, "decided": None}) == "+133 objects/rep"
    nightly = Build("2.23.0.dev20261026", "tf-nightly", "2026-10-26")
    assert readings.git_ref(nightly, "v1.12.1-148158-gef696751006") == "ef696751006"
    assert readings.git_ref(nightly, None) is None


# --- the disk budget -----------------------------------------------------------------------------


def test_disk_budget_refuses_an_install_that_would_go_over(tmp_path, monkeypatch):
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "blob").write_bytes(b"x" * (2 * MIB))
    with pytest.raises(installer.BudgetError, match="past the budget of 1.0 GiB"):
        installer.check_budget(venv, GIB, GIB, "installing tf-nightly")
    installer.check_budget(venv, 10 * MIB, GIB, "a small one")  # within: no error
    calls = []
    monkeypatch.setattr(installer.Venv, "pip", lambda self, *args: calls.append(args[0]))
    env = installer.Venv(venv, GIB, tmp_path / "log")
    with pytest.raises(installer.BudgetError, match="installing tf-nightly==2.23.0.dev20261026"):
        env.install(Build("2.23.0.dev20261026", "tf-nightly", None, 645 * MIB))
    assert calls == ["uninstall"]  # nothing installed


# --- the command --------------------------------------------------------------------------------


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """The registry is the saved sample; the venv is a
    fake whose measurements read leak up to 2.16.0rc0."""
    monkeypatch.setattr(registry, "fetch_index", fetch)
    monkeypatch.setattr(registry, "sys_tags", lambda: iter(HERE))
    verdicts = {"2.15.1": "leak", "2.16.0rc0": "leak", "2.16.1": "no-leak", "2.16.2": "no-leak"}
    seen = []
    monkeypatch.setattr(installer.Venv, "ensure", lambda self, root: seen.append("ensure"))
    monkeypatch.setattr(installer.Venv, "install", lambda self, build: seen.append(build.version))
    monkeypatch.setattr(
        installer.Venv,
        "measure",
        lambda self, root, pair, variant, cap, timeout: {
            "verdict": verdicts[seen[-1]],
            "seconds": 12.5,
            "signals": [],
            "environment": {"tensorflow": seen[-1], "tensorflow_git": "v2.16.1-19-g810f233968c"},
        },
    )
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return seen


def test_command_finds_writes_and_never_overwrites(offline, tmp_path):
    out = tmp_path / "b.json"
    args = ["py_function_map", "--good", "2.15.1", "--bad", "2.16.2", "--out", out, "--cap", "1GiB"]
    result = invoke("bisect", *args)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert (data["boundary"]["good"]["version"], data["boundary"]["bad"]["version"]) == (
        "2.16.0rc0",
        "2.16.1",
    )
    assert data["candidates"] == 4 and data["disk_budget_bytes"] == 6 * GIB and data["seconds"] >= 0
    assert data["boundary"]["compare_url"].endswith("/compare/v2.16.0-rc0...v2.16.1")
    assert "compare/v2.16.0-rc0...v2.16.1" in result.stdout and "2024-03-09" in result.stdout
    md = out.with_suffix(".md").read_text()
    assert "| first otherwise | 2.16.1 | tensorflow-cpu | 2024-03-09 |" in md
    assert offline.count("ensure") == 1
    before = out.read_text()
    refused(invoke("bisect", *args), "exists; pass --force")
    assert out.read_text() == before
    assert invoke("bisect", *args, "--force").exit_code == 0


def test_from_an_installed_package_the_result_goes_under_the_working_folder(offline, shipped):
    """The installed package's results are read, never written: the default --out is
    ./results/bisect/<machine>/, as `leakbench run` files under ./results."""
    args = ["py_function_map", "--good", "2.15.1", "--bad", "2.16.2", "--cap", "1GiB"]
    result = invoke("bisect", *args)
    assert result.exit_code == 0, result.output
    assert list(Path("results", "bisect").glob("*/py_function_map-leaky-2.15.1-2.16.2.json"))
    assert sorted(p.name for p in shipped.joinpath("results").rglob("*")) == []


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["nope", "--good", "2.15.1", "--bad", "2.16.2"], "unknown scenario 'nope'"),
        (
            ["py_function_map", "--variant", "both", "--good", "2.15.1", "--bad", "2.16.2"],
            "--variant",
        ),
        (["py_function_map", "--good", "2.16.2", "--bad", "2.15.1"], "not before"),
        (
            ["py_function_map", "--good", "2.15.1", "--bad", "2.16.3"],
            "serves no such TensorFlow build",
        ),
        (
            ["py_function_map", "--good", "2.15.1", "--bad", "2.16.2", "--disk-budget", "lots"],
            "--disk-budget",
        ),
        (
            ["py_function_map", "--good", "2.15.1", "--bad", "2.16.2", "--disk-budget", "1GiB"],
            "past the budget",
        ),
        (["py_function_map", "--good", "2.15.1", "--bad", "2.16.2", "--cap", "0"], "--cap"),
        (["py_function_map", "--good", "2.15.1"], "--bad"),
    ],
)
def test_command_bad_input_one_line(offline, tmp_path, args, fragment):
    refused(invoke("bisect", *args, "--out", tmp_path / "r.json"), fragment)
    assert offline == [] and not (tmp_path / "r.json").exists()


def test_command_refuses_an_unwritable_out_and_a_foreign_venv(offline, tmp_path):
    base = ["py_function_map", "--good", "2.15.1", "--bad", "2.16.2"]
    refused(invoke("bisect", *base, "--out", tmp_path / "missing" / "r.json"), "does not exist")
    mine = tmp_path / "project"
    mine.mkdir()
    (mine / "keep.txt").write_text("mine")
    refused(
        invoke("bisect", *base, "--out", tmp_path / "r.json", "--venv", mine),
        "is not a bisect virtualenv",
    )
    assert (mine / "keep.txt").exists() and offline == []


def test_an_unwritable_out_is_refused_before_the_registry_is_asked(offline, tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(registry, "fetch_index", lambda *a, **k: asked.append(a) or fetch(*a, **k))
    refused(
        invoke(
            "bisect",
            "py_function_map",
            "--good",
            "2.21.0",
            "--bad",
            "nightly",
            "--out",
            tmp_path / "missing" / "r.json",
        ),
        "does not exist",
    )
    assert asked == [] and offline == []


def test_command_bad_nightly_is_the_newest_nightly_served(offline, tmp_path, monkeypatch):
    """--bad nightly: the newest tf-nightly in the registry's index (the saved sample's)."""
    newest = max((b.version for b in registry.served(fetch=fetch) if b.nightly), key=Version)
    monkeypatch.setattr(
        installer.Venv,
        "measure",
        lambda self, root, pair, variant, cap, timeout: {
            "verdict": "no-leak" if offline[-1] == newest else "leak",
            "seconds": 1.0,
            "signals": [],
            "environment": {"tensorflow": offline[-1], "tensorflow_git": "v1.12.1-1-gabc"},
        },
    )
    out = tmp_path / "n.json"
    result = invoke(
        "bisect",
        "py_function_map",
        "--good",
        "2.21.0",
        "--bad",
        "nightly",
        "--out",
        out,
        "--cap",
        "1GiB",
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["boundary"]["bad"]["version"] == newest and f"to {newest}" in result.output


def test_command_refuses_a_venv_another_bisect_holds(offline, tmp_path):
    import fcntl

    venv = tmp_path / "v"
    with open(tmp_path / "v.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        refused(
            invoke(
                "bisect",
                "py_function_map",
                "--good",
                "2.15.1",
                "--bad",
                "2.16.2",
                "--out",
                tmp_path / "r.json",
                "--venv",
                venv,
            ),
            "another leakbench bisect is using",
        )
    assert offline == [] and not venv.exists()


def test_command_refused_for_its_budget_makes_no_folder(offline, tmp_path):
    venv = tmp_path / "a" / "b" / "v"
    refused(
        invoke(
            "bisect",
            "py_function_map",
            "--good",
            "2.15.1",
            "--bad",
            "2.16.2",
            "--venv",
            venv,
            "--disk-budget",
            "1KiB",
            "--results",
            tmp_path / "res",
        ),
        "past the budget",
    )
    assert not (tmp_path / "a").exists() and not (tmp_path / "res").exists()


@pytest.mark.parametrize(
    ("step", "fault"),
    [
        ("ensure", bisect.InstallFailed("pip install exited 1: no space")),
        ("install", installer.BudgetError("past it")),
    ],
    ids=["virtualenv not set up", "budget mid-way"],
)
def test_a_failure_mid_way_exits_3_in_one_line(offline, tmp_path, monkeypatch, step, fault):
    """A virtualenv whose install failed, or the disk budget reached once installing began, is a
    failure while it ran (leakbench.cli.exits.FAILED), not bad input: exit 3, one line, no
    result. (A build that does not install is a reading: `error` in install.)"""

    def broken(self, *args):
        raise fault

    monkeypatch.setattr(installer.Venv, step, broken)
    out = tmp_path / "b.json"
    args = ["py_function_map", "--good", "2.15.1", "--bad", "2.16.2", "--out", out, "--cap", "1GiB"]
    done = invoke("bisect", *args)
    assert done.exit_code == 3, done.output
    last = done.stderr.splitlines()[-1]
    assert last.startswith("leakbench: error: ") and str(fault) in last, done.stderr
    assert not out.exists()


def test_a_measurement_reads_the_last_record_of_run_format_json_out(tmp_path):
    """installer.Venv.measure runs `leakbench run ... --format json --out FILE` and reads FILE's
    last line: a records file, one record per line (run writes it so; test_cli_grammar)."""
    venv = installer.Venv(tmp_path / "venv", 6 * GIB, tmp_path / "log")
    venv.python.parent.mkdir(parents=True)
    # a stand-in interpreter: checks the options it is given and writes two records to --out
    venv.python.write_text(
        "#!/bin/sh\n"
        'case "$*" in *"run p --variant leaky --format json --out "*) ;; *) exit 9 ;; esac\n'
        'while [ "$1" != "--out" ]; do shift; done\n'
        'printf \'{"verdict": "leak"}\\n{"verdict": "no-leak"}\\n\' > "$2"\n'
    )
    venv.python.chmod(0o755)
    assert venv.measure(tmp_path, "p", "leaky", GIB, 60.0) == {"verdict": "no-leak"}
