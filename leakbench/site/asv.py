"""asv's own pages in the site: `asv publish` of the asv results in `results` (written by
leakbench.publish.asv_builds from the records) into OUT/asv, linked back to the index, with their
libraries pointed at local copies (leakbench.site.vendor) where npm can provide them.

asv's commits are TensorFlow builds: asv.conf.json's repo is the builds repository
(.asv/tf-builds), rebuilt here first (asv_builds.build_repo: deterministic, from the records and
results/builds.json, no network), so the committed results' commit hashes are found in it.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

from leakbench.history import store
from leakbench.publish import asv_builds
from leakbench.site import vendor

FOLDER = "asv"
INDEX = f"{FOLDER}/index.html"
TIMEOUT_SECONDS = 300
_BACK = (
    '<body><div style="padding:4px 12px;font:14px sans-serif">'
    '<a href="../index.html">&larr; leakbench: leak matrix and lessons</a></div>'
)


class Published(NamedTuple):
    """What publish made, for leakbench.site.build to add to what the build wrote."""

    page: str  # INDEX when asv publish ran, else ""
    offline: bool  # asv's pages load their libraries from vendor/, not from CDNs
    vendored: list  # the libraries copied (leakbench.site.vendor)
    notes: list  # one line each


def publish(results: Path, root: Path, out: Path, repo: Path | None = None) -> Published:
    """asv's pages of `results` in out/asv (publish_asv), their libraries pointed at local copies
    (vendor_asv). root: the checkout whose asv.conf.json and benchmarks/ asv reads; repo: the
    builds repository (default root/.asv/tf-builds, rebuilt first: builds_repo)."""
    if not (root / "asv.conf.json").is_file():  # the suite an installed wheel carries
        return Published("", False, [], [f"asv site skipped: no asv.conf.json in {root}"])
    repo = repo or root / asv_builds.REPO_DIR
    problem = builds_repo(results, repo) or publish_asv(root, out, results, repo)
    if problem:
        return Published("", False, [], [problem])
    return Published(INDEX, *vendor_asv(root, out))


def builds_repo(results: Path, repo: Path) -> str | None:
    """(Re)build the builds repository for the records of the machine with asv results in
    `results` (results/<machine>/machine.json; the first by name of several). Returns None, else
    one line saying why asv's pages are skipped."""
    results = Path(results)
    measured = [m for m in store.machines(results) if (results / m / "machine.json").is_file()]
    if not measured:
        return f"asv site skipped: no asv results in {results} (leakbench.publish.asv_builds)"
    try:
        files = store.available(results, measured[0])
        dates = asv_builds.read_dates(results / asv_builds.DATES_FILE)
        asv_builds.build_repo(repo, {v: asv_builds.build_date(v, dates) for v in files})
    except (asv_builds.PublishError, store.VersionError) as e:
        return f"asv site skipped: {e}"
    return None


def publish_asv(root: Path, out: Path, results: Path, repo: Path) -> str | None:
    """Run `asv publish` (this interpreter's asv) with root's asv.conf.json, its results `results`
    and its repo `repo`, into out/asv, and put a link back to ../index.html at the top of each of
    its pages.

    Returns None on success, else one line saying why (asv missing, timed out after
    TIMEOUT_SECONDS, failed: its last line of output). Raises nothing for asv's failures.
    """
    with tempfile.TemporaryDirectory(prefix="leakbench-asv-conf-") as tmp:
        try:  # asv's UserError (a malformed asv.conf.json) is a plain Exception
            conf = asv_builds.asv_conf(root, repo, results, Path(tmp) / "asv.conf.json")
        except Exception as e:  # noqa: BLE001
            return f"asv publish did not run: {root / 'asv.conf.json'}: {e}"
        command = [sys.executable, "-m", "asv", "publish", "--config", str(conf), "--no-pull"]
        command += ["--html-dir", str(out / FOLDER)]
        try:
            done = subprocess.run(
                command, cwd=root, capture_output=True, text=True, timeout=TIMEOUT_SECONDS
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"asv publish did not run: {e}"
    if done.returncode != 0 or not (out / INDEX).is_file():
        last = (done.stderr or done.stdout).strip().splitlines()
        return f"asv publish failed: {last[-1] if last else done.returncode}"
    for page in (out / FOLDER).glob("*.html"):
        text = page.read_text()
        if "<body>" in text:
            page.write_text(text.replace("<body>", _BACK, 1))
    return None


def vendor_asv(root: Path, out: Path) -> tuple[bool, list, list]:
    """Point out/asv/index.html's CDN libraries at copies in out/vendor/ from root/vendor's npm
    modules (`npm ci` there if needed). Returns (offline: nothing is left on a CDN, the files
    copied, notes on what stays on a CDN and why)."""
    modules, problem = vendor.npm_modules(root / "vendor")
    if modules is None:
        return False, [], [f"asv's pages load their libraries from CDNs: {problem}"]
    left, copied = vendor.vendor_asv(out / INDEX, modules, out)
    if left:
        return (
            False,
            copied,
            [
                f"asv's pages still load {', '.join(left)} from CDNs "
                "(not in leakbench.site.vendor.ASV_CDN)"
            ],
        )
    return True, copied, []
