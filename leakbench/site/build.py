"""The static site: the leak matrix and one lesson per pair, from results/.

`leakbench site` reads the records the asv suite stores
(results/records/<machine>/tf-<version>.jsonl, through leakbench.history) and
the pair files (scenarios/X.py, fixes/X.py), and writes into one folder:

    index.html            the matrix: pairs × TF versions, verdict and growth
                          of the leaky and the fixed variant, filter by seed source
    repeatability.html    how often each verdict repeats: a table per
                          results/repeatability/<machine>-tf-*.json
                          (leakbench.repeat.repeatability),
                          only when there is one (leakbench.site.repeatability)
    lessons/<pair>.html   what goes wrong, the verdict per TF release (a strip,
                          leakbench.site.releases), where the memory is over the
                          repetitions (leakbench.site.memory), growth by
                          allocation site (stacks), per pipeline stage and the
                          reference chain (stages) where records have them, the
                          counts (charts), the two files side by side, peak and
                          growth per TF version, how to see it yourself
                          (leakbench.site.lessons; inline SVG, leakbench.site.svg)
    flamegraphs/tf-<v>/<pair>-leaky.html
                          memray's flame graph of the leaky run's retained
                          allocations, copied from results/flamegraphs/
                          (leakbench.site.flamegraphs)
    style.css             rendered from templates/style.css.j2 with the colours of
                          leakbench.site.colours (variants, verdicts, series)
    asv/                  `asv publish` of the same results (optional, leakbench.site.asv)
    vendor/               local copies of the libraries asv's pages and memray's
                          flame graphs load from CDNs (leakbench.site.vendor)

This module orchestrates: it reads, picks the default TF version, checks the
output folder, and renders and writes the pages. Every link is relative, so
the folder works from file:// and from any static server (asv's pages read
their JSON with XMLHttpRequest: they need a server). A rebuild replaces all of
the above, so a pair removed from scenarios/ leaves no lesson behind; other
files in the folder (a README, a CNAME) are kept. The site is built in a new
folder beside the output and swapped in whole once complete: a build that
fails leaves the earlier site as it was.
Templates autoescape: all text from scenario files and records is escaped.
Nothing here imports TensorFlow or runs a scenario.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import stat
import time
from contextlib import contextmanager
from pathlib import Path

from leakbench import catalog, jsonfile
from leakbench.history import builds, machines, matrix, store
from leakbench.site import asv as asv_pages
from leakbench.site import vendor
from leakbench.site.flamegraphs import FLAMEGRAPHS, copy_flamegraph
from leakbench.site.lessons import lesson_data
from leakbench.site.pages import Built, render
from leakbench.site.releases import release_strip
from leakbench.site.repeatability import PAGE as REPEATABILITY
from leakbench.site.repeatability import pair_repeatability, repeatability

_SAFE_NAME = re.compile(r"[A-Za-z0-9_-]+")
# what a rebuild replaces, with REPEATABILITY
_OURS = ("lessons", FLAMEGRAPHS, "vendor", asv_pages.FOLDER)


class SiteError(ValueError):
    """The site cannot be built (a bad or unwritable output folder). One line."""


def default_version(found: list[str]) -> str:
    """The TF version lessons chart: builds.DEFAULT_RELEASE if it was measured, else the newest in
    `found` (TF versions, oldest first, not empty)."""
    return builds.DEFAULT_RELEASE if builds.DEFAULT_RELEASE in found else found[-1]


def build(
    results: Path, out: Path, root: Path | None = None, asv: bool = True, machine: str | None = None
) -> Built:
    """Write the site for `results` into `out` (replacing our pages there); return what was written.

    root: the checkout holding scenarios/ and fixes/ (default: catalog.find_root()); a pair
    with records but no scenarios/ file there is left out. Without a scenarios/ folder
    (results alone), every pair in the records gets a lesson.
    asv: also run `asv publish` of `results` into out/asv (leakbench.site.asv), and point
    its pages at local copies of their libraries (root/vendor, `npm ci` there if needed).
    machine: the asv machine whose records and repeatability files to read (default: the only
    one; store.pick_machine).
    Returns Built: pages as (path relative to out, bytes), seconds, notes (one line each).
    Raises store.VersionError for results without records; SiteError (one line) when `out`
    is a file, holds other files and no index.html, holds the results or the pair files, or
    cannot be created or written.

    The site is built in a new folder beside `out` (out/.. is written) and swapped in only when
    complete (_swap): a build that fails for any reason, or is interrupted, leaves `out` exactly
    as it was and removes what it made.
    """
    started = time.monotonic()
    root = Path(root) if root else catalog.find_root()
    results, out = Path(results), Path(out)
    with _writing(out):  # before anything is read
        target = _target(out, results, root)
    machine = store.pick_machine(results, machine)
    by_version = store.by_version(results, machine)
    found = matrix.matrix(results, machine)
    tf_versions = found["versions"]
    default = default_version(tf_versions)
    built = Built(out)

    current = set(catalog.pair_names(root)) if (root / "scenarios").is_dir() else None
    pairs = []
    for name in dict.fromkeys(row["pair"] for row in found["rows"]):
        if not _SAFE_NAME.fullmatch(name):
            built.notes.append(f"pair {name!r} skipped: not a file name")
        elif current is not None and name not in current:
            built.notes.append(f"pair {name!r} skipped: it has records but no scenarios/{name}.py")
        else:
            pairs.append(lesson_data(name, root, by_version, found, default))
            pairs[-1]["releases"] = release_strip(name, by_version, tf_versions)
    tables = repeatability(results, machine, {p["name"] for p in pairs}, built.notes)
    for pair in pairs:
        pair["repeatability"] = pair_repeatability(tables, pair["name"])

    with _writing(out):
        work = _new_folder(target)
    try:
        with _writing(out, work):
            (work / "lessons").mkdir()
            for pair in pairs:  # each part of the build returns what it made; it is assembled here
                copied = copy_flamegraph(
                    results, work, pair["name"], [default, *reversed(tf_versions)]
                )
                pair["flamegraph"] = copied.shown
                built.pages += copied.pages
                built.vendored += copied.vendored
                built.notes += copied.notes
            if asv:
                published = asv_pages.publish(results, root, work)
                built.asv, built.asv_offline = published.page, published.offline
                built.vendored += published.vendored
                built.notes += published.notes
            if built.vendored:
                vendor.write_notice(work, built.vendored)
            about = provenance(results, found)
            render(work, built, pairs, tables, tf_versions, default, matrix.changes(found), about)
            _swap(out, target, work, built)
    finally:  # a build that failed (or was interrupted) leaves nothing behind; `out` is as it was
        shutil.rmtree(work, ignore_errors=True)
    built.seconds = time.monotonic() - started
    return built


@contextmanager
def _writing(out: Path, work: Path | None = None):
    """Turn an OSError while writing the site into a one-line SiteError (naming the file as it
    would be in `out`, not in the folder `work` it is being built in)."""
    try:
        yield
    except OSError as e:
        name = str(e.filename or "")
        if work is not None and name.startswith(str(work)):
            name = str(out) + name[len(str(work)) :]
        where = f" ({name})" if name and name != str(out) else ""
        why = e.strerror or (str(e).splitlines() or [type(e).__name__])[0]
        raise SiteError(f"--out-dir {out}: cannot write the site there{where}: {why}") from None


def _target(out: Path, results: Path, root: Path) -> Path:
    """The folder a build replaces: `out`, a symbolic link followed (the site goes where it points).
    Raises SiteError when it is not ours to replace: a file, a folder of other files without an
    index.html of an earlier site, or a folder that holds the results or the pair files read."""
    target = Path(os.path.realpath(out))
    if os.path.lexists(out) and not target.is_dir():
        kind = jsonfile.special(out) or "a file"
        raise SiteError(f"--out-dir {out} is {kind}, not a folder")
    if target.is_dir() and any(target.iterdir()) and not (target / "index.html").is_file():
        raise SiteError(
            f"--out-dir {out} holds other files and no index.html of an earlier site: "
            "pick a new folder (a rebuild replaces lessons/, asv/ and vendor/ in it)"
        )
    for read in (results, root / "scenarios", root / "fixes"):
        there = Path(os.path.realpath(read))
        if there == target or target in there.parents:
            raise SiteError(
                f"--out-dir {out} is or holds {read}, which the site is built from: "
                "pick a folder of its own"
            )
    return target


def _new_folder(target: Path) -> Path:
    """An empty folder beside `target` (same filesystem: the swap is a rename) to build in, its
    parents made if need be. Raises OSError naming target's parent folder when none can be made."""
    target.parent.mkdir(parents=True, exist_ok=True)
    work = target.parent / f".{target.name}.leakbench-new-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        work.mkdir()
    except OSError as e:
        raise OSError(e.errno, e.strerror, str(target.parent)) from None
    return work


def _swap(out: Path, target: Path, work: Path, built: Built) -> None:
    """Put the complete build `work` in `target`'s place: rename the old site away, the new one in
    (the old one back if that fails), carry over what the old folder held besides our pages (a
    README, a CNAME: _OURS, REPEATABILITY and what the build wrote are replaced), delete the old.
    The new folder takes the old one's mode (a first build: the umask's, as mkdir made it)."""
    if not os.path.lexists(target):
        os.rename(work, target)
        return
    os.chmod(work, stat.S_IMODE(target.stat().st_mode))
    old = target.parent / f".{target.name}.leakbench-old-{os.getpid()}-{secrets.token_hex(4)}"
    os.rename(target, old)
    try:
        os.rename(work, target)
    except BaseException:
        try:
            os.rename(old, target)
        except OSError as e:  # not seen: a rename back in the folder the first one worked in
            raise SiteError(
                f"--out-dir {out}: the earlier site could not be put back: it is in {old} "
                f"({e.strerror or e})"
            ) from None
        raise
    ours = {*_OURS, REPEATABILITY, *(entry.name for entry in target.iterdir())}
    try:
        for entry in old.iterdir():
            if entry.name not in ours:
                os.rename(entry, target / entry.name)
    except OSError as e:  # the new site is in place: say what stayed behind, do not fail the build
        built.notes.append(
            f"--out-dir {out}: files of the earlier site not carried over, kept in {old}: "
            f"{e.strerror or e}"
        )
        return
    shutil.rmtree(old, ignore_errors=True)


def provenance(results: Path, found: dict) -> dict:
    """What every page says its numbers come from: the machine (name, its label, CPU model and
    cores), the engines that made its records (one, or several: then flagged), and the other
    machines with records in `results` (each a `leakbench site --machine NAME` away)."""
    engines = sorted({e for per in found["engines"].values() for e in per})
    return {
        "machine": found["machine"],
        "label": machines.label(found["machine"]),
        "hardware": found["hardware"] or "several CPUs",
        "engines": engines,
        "others": [machines.label(m) for m in store.machines(results) if m != found["machine"]],
    }
