"""TensorFlow builds the package registry serves for
this interpreter: what `leakbench bisect` may install.

Releases and release candidates come from RELEASE_DIST (tensorflow-cpu), nightlies from
NIGHTLY_DIST (tf-nightly: tf-nightly-cpu stopped at 2.22.0.dev20260905; tf-nightly goes on
and runs on a CPU). A distribution's files are read from PyPI's simple JSON API (PEP 691;
PEP 700 adds each file's upload-time and size), and a build counts only when one of its
wheels installs here (its tags meet packaging.tags.sys_tags(): cp311, manylinux, x86_64 on
this machine) and is not yanked. A nightly's date is in its version (2.23.0.dev20261026);
a release's is its wheel's upload time.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass

from packaging.tags import sys_tags
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from leakbench.history.builds import build_date, is_nightly, pep440

RELEASE_DIST = "tensorflow-cpu"
NIGHTLY_DIST = "tf-nightly"
SIMPLE_URL = "https://pypi.org/simple/{}/"
ACCEPT = "application/vnd.pypi.simple.v1+json"


class RegistryError(ValueError):
    """The registry could not be read, or does not serve a build asked for. One line."""


@dataclass(frozen=True)
class Build:
    """One installable TensorFlow build: version (PEP 440, as pip spells it), distribution,
    date (YYYY-MM-DD) and the size of the wheel pip would download here (bytes; None: unknown)."""

    version: str
    dist: str
    date: str | None
    wheel_bytes: int | None = None

    @property
    def nightly(self) -> bool:
        return is_nightly(self.version)

    @property
    def requirement(self) -> str:
        """What pip installs: 'tf-nightly==2.23.0.dev20261026'."""
        return f"{self.dist}=={self.version}"


def _date(version: str) -> str | None:
    """A nightly's build date as YYYY-MM-DD (leakbench.history.builds), None for a release."""
    day = build_date(version)
    return day.isoformat() if day else None


def fetch_index(dist: str, url: str = SIMPLE_URL, timeout: float = 60.0) -> dict:
    """The PEP 691 JSON page of one distribution. Raises RegistryError when it cannot be read."""
    request = urllib.request.Request(url.format(dist), headers={"Accept": ACCEPT})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise RegistryError(
            f"cannot read the registry's index of {dist} ({url.format(dist)}): "
            f"{getattr(e, 'reason', None) or e}"
        ) from None


def builds(index: dict, dist: str | None = None, tags=None) -> list[Build]:
    """The builds of one PEP 691 page with a wheel installable here, in PEP 440 order.

    tags: the interpreter's tags (default packaging.tags.sys_tags()). A build's date is
    its nightly date, else the upload time of its first installable wheel (PEP 700; None
    on a page without upload times). Raises RegistryError for a page that is not PEP 691."""
    if not isinstance(index, dict) or not isinstance(index.get("files"), list):
        raise RegistryError("the registry's answer is not a PEP 691 project page (no 'files' list)")
    dist = dist or index.get("name", "?")
    wanted = set(tags if tags is not None else sys_tags())
    found: dict[Version, Build] = {}
    for f in index["files"]:
        name = f.get("filename", "")
        if not name.endswith(".whl") or f.get("yanked"):
            continue
        try:
            _, version, _, wheel_tags = parse_wheel_filename(name)
        except InvalidWheelFilename:
            continue
        if version in found or not wheel_tags & wanted:
            continue
        uploaded = (f.get("upload-time") or "")[:10] or None
        found[version] = Build(str(version), dist, _date(str(version)) or uploaded, f.get("size"))
    return [found[v] for v in sorted(found)]


def served(dists=(RELEASE_DIST, NIGHTLY_DIST), fetch=fetch_index, tags=None) -> list[Build]:
    """Releases and RCs of RELEASE_DIST, nightlies of NIGHTLY_DIST, installable here (tags: as in
    `builds`), in PEP 440 order (a version served by both is taken from the first).
    Raises RegistryError (fetch_index, builds)."""
    release, nightly = dists
    found = {pep440(b.version): b for b in builds(fetch(release), release, tags) if not b.nightly}
    for b in builds(fetch(nightly), nightly, tags):
        if b.nightly:
            found.setdefault(pep440(b.version), b)
    return [found[v] for v in sorted(found)]
