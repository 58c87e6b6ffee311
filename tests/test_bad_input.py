"""Bad input destroys nothing: one line on stderr, exit 2, and every file already
there byte for byte as it was (mtime included), before anything is measured.

- the site is built beside --out-dir and swapped in whole: a build that fails at any point leaves
  the earlier site as it was and nothing of its own; a flame graph that is not UTF-8, or a
  repeatability file of the right format whose parts are of other types, is a note;
- no output is one of the command's inputs (scenario files, the check target, records read),
  nor the same file as another output, through symbolic and hard links too;
- a FIFO, a device, a socket, a symbolic link loop or a dangling link is refused wherever a
  regular file is expected, to read or to write; nothing opens it, so nothing waits on it;
- leakbench reads at most jsonfile.MAX_BYTES of one file, and every way JSON can be bad
  (an integer past 4,300 digits, nesting past the recursion limit) is the same one-line refusal.

Commands that could hang or read without end on a regression (a FIFO, /dev/full) run as
subprocesses with a timeout; the others in process (CliRunner). No TensorFlow: the records are
the site fixture's, the scenarios pure Python (tests/data/).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from conftest import invoke, leakbench, pure_python_checkout, refused, state
from packaging.tags import Tag

from leakbench import jsonfile
from leakbench.analysis import schema
from leakbench.history import installer, registry
from leakbench.site import build as site

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parents[1]
FAST = ["--cap", "1GiB", "--timeout", "60", "--warmup", "1", "--reps", "6", "--heap-reps", "0"]


# --- helpers ------------------------------------------------------------------------------------


def special(path: Path, kind: str) -> Path:
    """Make `kind` at path: fifo, a link to /dev/full, a link loop, a dangling link."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-full":
        path.symlink_to("/dev/full")
    elif kind == "loop":
        path.symlink_to(path.name)
    else:
        path.symlink_to(path.parent / "nowhere" / path.name)
    return path


SPECIAL = {
    "fifo": "a named pipe (FIFO)",
    "dev-full": "a character device",
    "loop": "a symbolic link loop",
    "dangling": "a dangling symbolic link",
}


# --- the site -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built_once(tmp_path_factory) -> Path:
    """The site of `here`'s inputs (the same checkout and records, the same environment), built
    once for the module: its pages hold no path of the folder they were built in."""
    where = tmp_path_factory.mktemp("built-once")
    root = pure_python_checkout(where)
    shutil.copytree(DATA / "site_results", where / "results")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LEAKBENCH_ROOT", str(root))
        mp.setenv("ASV_MACHINE", "vm")
        mp.chdir(where)
        return site.build(where / "results", where / "site", root=root, asv=False).out


@pytest.fixture
def old_site(here, built_once) -> Path:
    """A site built from the fixture results (a copy of built_once: what a build in `here` writes),
    with a file of the user's own (CNAME) in it."""
    out = here / "site"
    shutil.copytree(built_once, out, symlinks=True)
    (out / "CNAME").write_text("leaks.example.org\n")
    return out


def siblings(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir())


@pytest.mark.parametrize("where", ["render", "flamegraph", "interrupt", "swap"])
def test_a_failed_build_leaves_the_old_site_as_it_was(here, old_site, monkeypatch, where):
    """A failure while writing the pages (OSError: disk full), an interrupt, a swap that cannot
    rename: the old site is untouched, and no partial build is left beside it."""
    mrfl = here / "results" / "flamegraphs" / "tf-2.16.2"
    mrfl.mkdir(parents=True)
    (mrfl / "stateful_map-leaky.html").write_text("<html>not memray's, but UTF-8</html>\n")
    before, listing, mtime = state(old_site), siblings(old_site), old_site.stat().st_mtime_ns
    render, copy, rename = site.render, site.copy_flamegraph, os.rename

    def full(*args):
        render(*args)  # index.html and the lessons written in the new folder, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device", str(args[0] / "lessons" / "x.html"))

    def interrupted(*args):
        copy(*args)
        raise KeyboardInterrupt

    def no_swap(src, dst):
        if ".leakbench-new-" in str(src):
            raise OSError(errno.EBUSY, "Device or resource busy", str(dst))
        return rename(src, dst)

    if where == "render":
        monkeypatch.setattr(site, "render", full)
    elif where in ("flamegraph", "interrupt"):
        monkeypatch.setattr(
            site, "copy_flamegraph", interrupted if where == "interrupt" else lambda *a: 1 / 0
        )
    else:
        monkeypatch.setattr(site.os, "rename", no_swap)
    raised = {
        "render": site.SiteError,
        "flamegraph": ZeroDivisionError,
        "interrupt": KeyboardInterrupt,
        "swap": site.SiteError,
    }[where]
    with pytest.raises(raised) as failed:
        site.build(here / "results", old_site, root=here / "root", asv=False)
    monkeypatch.undo()
    if where == "render":  # the file is named where it would have been, not in the folder built in
        assert str(failed.value) == (
            f"--out-dir {old_site}: cannot write the site there ({old_site}/lessons/x.html): "
            "No space left on device"
        )
    assert (
        state(old_site) == before
        and siblings(old_site) == listing
        and old_site.stat().st_mtime_ns == mtime
    )


def test_cli_a_failed_build_is_one_line_and_keeps_the_old_site(here, old_site, monkeypatch):
    before, listing = state(old_site), siblings(old_site)

    def full(out, *args):
        (out / "index.html").write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device", str(out / "index.html"))

    monkeypatch.setattr(site, "render", full)
    refused(
        invoke("site", "--results", "results", "--out-dir", "site", "--no-asv"),
        "--out-dir site: cannot write the site there (site/index.html): No space left on device",
    )
    assert state(old_site) == before and siblings(old_site) == listing


def test_a_rebuild_keeps_the_users_files_and_replaces_ours(here, old_site):
    (old_site / "lessons" / "gone.html").write_text("stale")
    mode = 0o750
    old_site.chmod(mode)
    listing = siblings(old_site)
    built = site.build(here / "results", old_site, root=here / "root", asv=False)
    assert (old_site / "CNAME").read_text() == "leaks.example.org\n"
    assert not (old_site / "lessons" / "gone.html").exists()
    assert sorted(p.name for p in (old_site / "lessons").iterdir()) == ["stateful_map.html"]
    assert stat.S_IMODE(old_site.stat().st_mode) == mode and siblings(old_site) == listing
    assert built.out == old_site


def test_a_symlinked_out_is_built_where_it_points(here, old_site):
    (here / "link").symlink_to("site")
    site.build(here / "results", here / "link", root=here / "root", asv=False)
    assert (
        (here / "link").is_symlink()
        and (old_site / "CNAME").is_file()
        and (old_site / "index.html").is_file()
    )


def test_bad_flame_graph_and_repeatability_file_are_notes_not_tracebacks(here, old_site):
    """The fuzzer's two inputs: the site is rebuilt (exit 0), each file named in a note."""
    graphs = here / "results" / "flamegraphs" / "tf-2.16.2"
    graphs.mkdir(parents=True)
    (graphs / "stateful_map-leaky.html").write_bytes(b"const packed_data = {\xff\xfe};\n")
    folder = here / "results" / "repeatability"
    folder.mkdir()
    bad = {
        "format": 2,
        "machine": "vm",
        "jobs": 1,
        "tensorflow": "2.16.2",
        "runs_requested": 1,
        "summary": {"rows": [], "runs": "2", "variants": 1},
        "observations": [],
    }
    (folder / "vm-tf-2.16.2.json").write_text(json.dumps(bad))
    (folder / "vm-tf-2.15.1.json").write_text(json.dumps({**bad, "summary": 5}))
    done = invoke("site", "--results", "results", "--out-dir", "site", "--no-asv")
    assert done.exit_code == 0 and "Traceback" not in done.stdout + done.stderr, (
        done.output,
        done.exception,
    )
    assert (
        "stateful_map-leaky.html skipped: is not UTF-8 text (byte 0xff at offset 21)" in done.stdout
    )
    assert "vm-tf-2.16.2.json skipped: not a repeatability result of format 2" in done.stdout
    assert "vm-tf-2.15.1.json skipped: not a repeatability result of format 2" in done.stdout
    assert (old_site / "lessons" / "stateful_map.html").is_file() and (old_site / "CNAME").is_file()
    assert (
        not (old_site / "repeatability.html").exists() and not (old_site / "flamegraphs").exists()
    )


@pytest.mark.parametrize("kind", SPECIAL)
def test_site_refuses_a_special_out(here, kind):
    out = special(here / "site", kind)
    before = state(here)
    refused(
        invoke("site", "--results", "results", "--out-dir", out, "--no-asv"),
        f"--out-dir {out} is {SPECIAL[kind]}",
    )
    assert state(here) == before


def test_site_refuses_special_records_and_notes_a_special_repeatability_file(here, old_site):
    (here / "results" / "repeatability").mkdir()
    os.mkfifo(here / "results" / "repeatability" / "vm-tf-2.16.2.json")
    done = leakbench("site", "--results", "results", "--out-dir", "site", "--no-asv")
    assert (
        done.returncode == 0
        and "vm-tf-2.16.2.json skipped: is a named pipe (FIFO), not a regular file" in done.stdout
    ), done.stdout + done.stderr
    before = state(old_site)
    os.mkfifo(here / "results" / "records" / "vm" / "tf-2.17.1.jsonl")
    refused(
        leakbench("site", "--results", "results", "--out-dir", "site", "--no-asv"),
        "tf-2.17.1.jsonl is a named pipe (FIFO), not a regular file",
    )
    assert state(old_site) == before


def test_site_refuses_an_out_that_holds_its_inputs(here):
    (here / "results" / "index.html").write_text("an earlier site, it seems")
    before = state(here)
    refused(
        invoke("site", "--results", "results", "--out-dir", "results", "--no-asv"),
        "--out-dir results is or holds results, which the site is built from",
    )
    refused(invoke("site", "--results", "results", "--out-dir", ".", "--no-asv"), "--out-dir . ")
    assert state(here) == before


# --- an output that is an input, or another output ---------------------------------------------


def links(here: Path, target: Path) -> dict:
    """The same file by three names: itself, a hard link, a symbolic link."""
    (here / "hard").mkdir(exist_ok=True)
    hard, soft = here / "hard" / target.name, here / f"soft-{target.name}"
    os.link(target, hard)
    soft.symlink_to(target)
    return {"itself": target, "hard link": hard, "symbolic link": soft}


@pytest.mark.parametrize("name", ["itself", "hard link", "symbolic link"])
def test_check_html_is_not_the_target(here, name):
    html = links(here, here / "ok.py")[name]
    before = state(here)
    refused(
        invoke("check", "ok.py:bounded", *FAST, "--html", html),
        f"--html: {html} is the check target's file",
    )
    refused(
        invoke("check", f"{here / 'ok.py'}:bounded", *FAST, "--html", html),
        "is the check target's file",
    )
    assert state(here) == before


@pytest.mark.parametrize("form", ["json", "markdown"])
def test_run_output_is_not_a_scenario(here, form):
    option = "--out"
    scenario = here / "root" / "scenarios" / "pyleak.py"
    shutil.copy(scenario, here / "mine.py")
    named = links(here, scenario)
    before = state(here)
    refused(
        invoke("run", "mine.py", *FAST, "--format", form, option, "mine.py"),
        f"{option}: mine.py is a scenario file it measures",
    )
    refused(
        invoke(
            "run",
            "pyleak",
            "--variant",
            "fixed",
            *FAST,
            "--format",
            form,
            option,
            here / "root" / "fixes" / "pyleak.py",
        ),
        "is a scenario file it measures",
    )
    for name in named.values():
        refused(
            invoke("run", "pyleak", *FAST, "--format", form, option, name),
            f"{option}: {name} is a scenario file it measures",
        )
    assert state(here) == before


@pytest.mark.parametrize("option", ["--json", "--markdown"])
def test_run_json_and_markdown_are_unknown_options(here, option):
    """The old spellings are gone (--format json|markdown --out FILE): a usage error, nothing
    written."""
    records = here / "F.jsonl"
    records.write_text('{"kept": true}\n')
    before = state(here)
    refused(invoke("run", "pyleak", *FAST, option, records), f"No such option '{option}'")
    assert state(here) == before


def test_repeat_and_calibrate_tables_are_not_inputs(here):
    scenario = here / "root" / "scenarios" / "pyleak.py"
    records = here / "results" / "records" / "vm" / "tf-2.16.2.jsonl"
    (here / "r.md").symlink_to(scenario)
    (here / "c.md").symlink_to(records)
    os.link(records, here / "hard.json")
    before = state(here)
    refused(
        invoke("repeat", "pyleak", "--runs", "1", "--out", "r.json"),
        "--out's table: r.md is a scenario file it measures",
    )
    refused(
        invoke(
            "calibrate", "--holders", "python", "--sizes", "0", "--runs", "1", "--out", "c.json"
        ),
        "--out's table: c.md is a records file it reads",
    )
    refused(
        invoke(
            "calibrate",
            "--holders",
            "python",
            "--sizes",
            "0",
            "--runs",
            "1",
            "--out",
            "hard.json",
            "--suite-records",
            records,
        ),
        "--out: hard.json is --suite-records",
    )
    assert state(here) == before


def test_report_back_out_is_not_a_records_file(tmp_path, monkeypatch):
    results = tmp_path / "results"
    # py_function_map's records (tests/data/published: copies of committed ones)
    shutil.copytree(DATA / "published" / "records", results / "records")
    monkeypatch.setenv("LEAKBENCH_ROOT", str(REPO))
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "blocks"
    out.mkdir()
    (out / "py_function_map.md").symlink_to(results / "records" / "vm" / "tf-2.21.0.jsonl")
    before = state(tmp_path)
    refused(
        invoke("report-back", "py_function_map", "--results", results, "--out-dir", out),
        "py_function_map.md is a records file it reads",
    )
    assert state(tmp_path) == before
    (out / "py_function_map.md").unlink()
    os.mkfifo(out / "py_function_map.md")
    before = state(tmp_path)
    refused(
        leakbench("report-back", "py_function_map", "--results", results, "--out-dir", out),
        "py_function_map.md is a named pipe (FIFO), not a regular file",
    )
    assert state(tmp_path) == before


@pytest.fixture
def bisect_offline(monkeypatch, tmp_path):
    """bisect without the network or an install: the
    saved registry sample; a checkout of one pair."""
    sample = json.loads((DATA / "pypi-simple-tf.json").read_text())
    here = {
        Tag("cp311", "cp311", p)
        for p in (
            "manylinux_2_27_x86_64",
            "manylinux_2_17_x86_64",
            # the sample's wheels: as test_bisect
            "manylinux2014_x86_64",
        )
    }
    monkeypatch.setattr(registry, "fetch_index", lambda dist: sample[dist])
    monkeypatch.setattr(registry, "sys_tags", lambda: iter(here))
    for name in ("ensure", "install", "measure"):
        monkeypatch.setattr(
            installer.Venv, name, lambda *a: pytest.fail("bisect went on past bad input")
        )
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "root"
    for sub in ("scenarios", "fixes"):
        (root / sub).mkdir(parents=True)
        shutil.copy(REPO / sub / "py_function_map.py", root / sub / "py_function_map.py")
    monkeypatch.setenv("LEAKBENCH_ROOT", str(root))
    monkeypatch.chdir(tmp_path)
    return root


def test_bisect_out_is_not_the_pair_nor_special_nor_in_the_venv(bisect_offline, tmp_path):
    base = [
        "bisect",
        "py_function_map",
        "--good",
        "2.15.1",
        "--bad",
        "2.16.2",
        "--cap",
        "1GiB",
        "--force",
    ]
    (tmp_path / "b.md").symlink_to(bisect_offline / "fixes" / "py_function_map.py")
    before = state(tmp_path)
    refused(invoke(*base, "--out", "b.json"), "--out's table: b.md is the pair's scenario file")
    for kind in ("dev-full", "loop", "dangling"):
        out = special(tmp_path / f"{kind}.json", kind)
        refused(invoke(*base, "--out", out), f"--out: {out} is {SPECIAL[kind]}")
    (tmp_path / "venv").mkdir()
    refused(
        invoke(*base, "--out", tmp_path / "venv" / "b.json", "--venv", tmp_path / "venv"),
        "which is deleted at the end",
    )
    assert {k: v for k, v in state(tmp_path).items() if k in before} == before


# --- special files -------------------------------------------------------------------------------

WRITERS = {  # command and option; OUT stands for the path under test
    "run --out (json)": ["run", "pyleak", *FAST, "--format", "json", "--out", "OUT"],
    "run --out (markdown)": ["run", "pyleak", *FAST, "--format", "markdown", "--out", "OUT"],
    "check --html": ["check", "ok.py:bounded", *FAST, "--html", "OUT"],
    "repeat --out": ["repeat", "pyleak", "--runs", "1", *FAST[:4], "--out", "OUT"],
    "calibrate --out": [
        "calibrate",
        "--holders",
        "python",
        "--sizes",
        "0",
        "--runs",
        "1",
        "--out",
        "OUT",
    ],
}


@pytest.mark.parametrize("kind", SPECIAL)
@pytest.mark.parametrize("writer", WRITERS)
def test_a_special_output_is_refused_before_anything_is_measured(here, writer, kind):
    out = special(here / "out.json", kind)
    before = state(here)
    option = writer.split()[1]
    # what could hang or fill memory: a child
    command = leakbench if kind in ("fifo", "dev-full") else invoke
    refused(
        command(*[out if a == "OUT" else a for a in WRITERS[writer]]),
        f"{option}: {out} is {SPECIAL[kind]}",
    )
    assert state(here) == before


@pytest.mark.parametrize("command", ["repeat", "calibrate"])
def test_a_special_table_beside_out_is_refused(here, command):
    os.mkfifo(here / "out.md")
    (here / "out.json").write_text("{}")  # not resumable either: the table is refused first
    before = state(here)
    args = WRITERS[f"{command} --out"]
    refused(
        leakbench(*[here / "out.json" if a == "OUT" else a for a in args]),
        "--out's table: ",
        "out.md is a named pipe (FIFO)",
    )
    assert state(here) == before


def test_special_inputs_are_refused(here):
    records = here / "results" / "records" / "vm"
    os.mkfifo(here / "pipe.jsonl")
    before = state(here)
    refused(
        leakbench(
            "calibrate",
            "--holders",
            "python",
            "--sizes",
            "0",
            "--runs",
            "1",
            "--out",
            "c.json",
            "--suite-records",
            "pipe.jsonl",
        ),
        "--suite-records: pipe.jsonl is a named pipe (FIFO)",
    )
    refused(leakbench("compare", "pipe.jsonl", records / "tf-2.16.2.jsonl"), "pipe.jsonl")
    assert state(here) == before
    (records / "tf-2.17.1.jsonl").symlink_to("/dev/zero")
    refused(
        leakbench("matrix", "--results", "results"),
        "tf-2.17.1.jsonl is a character device, not a regular file",
    )
    (records / "tf-2.17.1.jsonl").unlink()
    os.mkfifo(records / "tf-2.17.1.jsonl")
    refused(
        leakbench("matrix", "--results", "results"),
        "tf-2.17.1.jsonl is a named pipe (FIFO), not a regular file",
    )


# --- size and JSON --------------------------------------------------------------------------------


def sparse(path: Path, size: int) -> Path:
    """A file of `size` bytes that takes no room on disk."""
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def test_a_file_over_max_bytes_is_refused_unread(here):
    records = here / "results" / "records" / "vm"
    sparse(records / "tf-2.17.1.jsonl", jsonfile.MAX_BYTES + 1)
    sparse(here / "big.json", jsonfile.MAX_BYTES + 1)
    before = state(here)
    refused(
        invoke("matrix", "--results", "results"),
        f"tf-2.17.1.jsonl holds {jsonfile.MAX_BYTES + 1:,} "
        "B, more than the 256 MiB leakbench reads",
    )
    refused(
        invoke("repeat", "pyleak", "--runs", "1", *FAST[:4], "--out", "big.json"),
        "big.json holds",
        "it is kept: use another --out, or --fresh",
    )
    refused(
        invoke(
            "calibrate", "--holders", "python", "--sizes", "0", "--runs", "1", "--out", "big.json"
        ),
        "big.json holds",
        "it is kept",
    )
    assert state(here) == before


BAD_JSON = {
    "a 5,000-digit integer": ("1" * 5000, "an integer of 5,000 digits, past a float's range"),
    "nesting 100,000 deep": ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    "not UTF-8": (b'{"schema": \xff}', "byte 0xff at offset 11"),
    "broken": ("{", "Expecting property name"),
}


@pytest.mark.parametrize("case", BAD_JSON)
def test_bad_json_is_one_line_everywhere(here, case):
    text, why = BAD_JSON[case]
    data = text if isinstance(text, bytes) else text.encode()
    (here / "results" / "records" / "vm" / "tf-2.17.1.jsonl").write_bytes(data)
    (here / "resume.json").write_bytes(data)
    before = state(here)
    line = refused(invoke("matrix", "--results", "results"), "tf-2.17.1.jsonl", why)
    if case != "not UTF-8":
        assert "line 1: corrupt JSON" in line
        with pytest.raises(schema.SchemaError, match="corrupt JSON"):
            schema.loads(text)
    refused(
        invoke("repeat", "pyleak", "--runs", "1", *FAST[:4], "--out", "resume.json"),
        "resume.json cannot be read as JSON",
        why,
    )
    assert state(here) == before
    with pytest.raises(jsonfile.Unreadable, match="cannot be read as JSON"):
        jsonfile.load(here / "resume.json")


def test_max_bytes_has_room_over_the_biggest_committed_file(committed_results):
    # results/ as committed (git HEAD), not a working copy a run or a regeneration is writing
    found = [p.stat().st_size for p in committed_results.rglob("*.json*") if p.is_file()]
    assert found
    biggest = max(found)
    assert biggest * 100 < jsonfile.MAX_BYTES


# --- result files written whole: jsonfile.write_text_atomic --------------------


def test_a_failure_mid_write_keeps_the_previous_file_and_leaves_nothing_beside_it(
    tmp_path, monkeypatch
):
    path = tmp_path / "result.md"
    path.write_text("old\n")
    with pytest.raises(UnicodeEncodeError):  # fails inside the write, after some text went out
        jsonfile.write_text_atomic(path, "new " * 10_000 + "\ud800")
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["result.md"]

    def broken(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken)  # the disk fails the flush: nothing replaces the file
    with pytest.raises(OSError, match="Input/output"):
        jsonfile.write_text_atomic(path, "new\n")
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["result.md"]

    synced = []
    monkeypatch.setattr(os, "fsync", synced.append)
    jsonfile.write_text_atomic(path, "new\n")
    assert path.read_text() == "new\n" and os.listdir(tmp_path) == ["result.md"]
    assert len(synced) == 2  # the file before the rename, then its folder
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~_umask()  # not mkstemp's 0600


def test_write_atomic_refuses_nan_before_writing_and_makes_the_folder(tmp_path):
    path = tmp_path / "new" / "result.json"
    jsonfile.write_atomic(path, {"a": 1})
    with pytest.raises(ValueError):
        jsonfile.write_atomic(path, {"a": float("nan")})
    assert jsonfile.load(path) == {"a": 1} and os.listdir(path.parent) == ["result.json"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize(
    "command",
    [
        ["calibrate", "--holders", "python", "--sizes", "0", "--runs", "1"],
        ["repeat", "pyleak", "--runs", "1", *FAST],
    ],
)
@pytest.mark.parametrize("how", ["option", "ASV_MACHINE"])
@pytest.mark.parametrize("name", ["a/b", ".."])
def test_a_machine_name_that_is_no_folder_is_refused_before_anything_is_made(
    here, monkeypatch, command, how, name
):
    before = sorted(p.relative_to(here) for p in here.rglob("*"))
    if how == "option":
        done = invoke(*command, "--machine", name)
    else:
        monkeypatch.setenv("ASV_MACHINE", name)
        done = invoke(*command)
    refused(done, "--machine: ", repr(name), "is not an asv machine name usable as a folder")
    assert sorted(p.relative_to(here) for p in here.rglob("*")) == before  # no folder made


@pytest.mark.parametrize(
    "args",
    [
        ["repeat", "pyleak", "--runs", "1", *FAST, "--out", "y" * 300 + ".json"],
        ["calibrate", "--holders", "python", "--sizes", "0", "--out", "y" * 300 + ".json"],
        ["check", "y" * 300 + ".py:make"],
    ],
)
def test_a_name_no_filesystem_takes_is_one_line(here, args):
    before = sorted(p.relative_to(here) for p in here.rglob("*"))
    refused(invoke(*args), "File name too long")
    assert sorted(p.relative_to(here) for p in here.rglob("*")) == before


TWO_LINES = '''"""A repetition that raises a message of two lines."""
TITLE = "an error of two lines in a repetition"
SOURCE = "stateful functions"
REPETITION = "raise"
KIND = "growth"
SIZE_PARAM = "size"
PARAMS = {"size": 1}


def setup(size):
    return {}


def repetition(state):
    raise ValueError("first line of the reason\\nsecond line")
'''


def test_an_error_in_the_repetitions_is_told_whole_on_one_line(here):
    (here / "two_lines.py").write_text(TWO_LINES)
    done = leakbench("run", "two_lines.py", "--timeout", "30", "--reps", "5", "--cap", "1GiB")
    # a measurement that could not run: exit 3 (leakbench.cli.exits.FAILED)
    assert done.returncode == 3 and "Traceback" not in done.stderr
    told = [
        line
        for line in done.stderr.splitlines()
        if line.startswith("two_lines (file): error in warm-up: ")
    ]
    assert told == [
        "two_lines (file): error in warm-up: ValueError: first line of the reason\\nsecond line"
    ]


def test_an_atomic_write_through_a_link_keeps_the_link(tmp_path):
    """`--json /dev/stdout` with stdout redirected to a file replaced the /dev/stdout link with a
    regular file: the write goes to the file the link points to, and the link stays."""
    from leakbench import jsonfile

    target = tmp_path / "out.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    jsonfile.write_text_atomic(link, "new")
    assert link.is_symlink() and target.read_text() == "new"


def test_an_out_under_a_file_is_named_so(here):
    """An --out whose folder is a file: said in words, not errno's "Not a directory"."""
    (here / "notes").write_text("a file, not a folder\n")
    before = state(here)
    refused(
        invoke("matrix", "--results", "results", "--out", "notes/matrix.md"),
        "--out: notes/matrix.md is a path under a file, not a regular file",
    )
    assert state(here) == before
