"""asv's own pages in the site: `asv publish` of the same results into OUT/asv,
linked back to the index, with their libraries pointed at local copies
(leakbench.site.vendor) where npm can provide them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

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


def publish(results: Path, root: Path, out: Path) -> Published:
    """asv's pages of `results` in out/asv (publish_asv), their libraries pointed at local copies
    (vendor_asv). Only root/results can be published: asv reads its own configuration."""
    if Path(results).resolve() != (root / "results").resolve():
        return Published("", False, [], ["asv site skipped: asv publishes root/results only"])
    if not (root / "asv.conf.json").is_file():  # the suite an installed wheel carries
        return Published("", False, [], [f"asv site skipped: no asv.conf.json in {root}"])
    problem = publish_asv(root, out)
    if problem:
        return Published("", False, [], [problem])
    return Published(INDEX, *vendor_asv(root, out))


def publish_asv(root: Path, out: Path) -> str | None:
    """Run `asv publish` (the venv's asv, else the one on PATH) in checkout `root` into out/asv,
    and put a link back to ../index.html at the top of each of its pages.

    Returns None on success, else one line saying why (asv missing, timed out after
    TIMEOUT_SECONDS, failed: its last line of output). Raises nothing for asv's failures.
    """
    asv = Path(sys.executable).with_name("asv")
    command = [
        str(asv) if asv.exists() else "asv",
        "publish",
        "--no-pull",
        "--html-dir",
        str(out / FOLDER),
    ]
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
