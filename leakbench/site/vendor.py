"""Local copies of the scripts that asv's and memray's pages load from CDNs.

asv 0.6's index.html loads jQuery, flot, Bootstrap and three small plugins
from public CDNs, and sends the browser to its "external dependencies failed"
page when one does not load; memray's flame graphs load d3, plotly, jQuery,
lodash and Bootstrap the same way. `leakbench site` copies those libraries
into OUT/vendor/ and points the pages at them, so the whole site works
without a network:

- asv's: from the npm registry, pinned in vendor/package.json and
  vendor/package-lock.json at the versions asv names (`npm ci` in vendor/
  once; node_modules/ is not committed). npm has no stupid-table-plugin
  1.0.1, so 1.1.3 of the same plugin stands in (ASV_CDN says which).
- memray's: from the memray package itself (PyPI), which ships the same
  files for `memray flamegraph --no-web`, used only for a CDN address the
  installed memray's own templates name, so the pin is the one memray ships.

An address with no local copy is left as it was, and the build says so.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

# asv's CDN addresses (how each ends) -> (npm package, version, file in the package).
# The version is asv's pin, except stupid-table-plugin (npm has no 1.0.1). flot's npm
# package has the unminified files of the same release where the CDN serves minified ones.
ASV_CDN = {
    "/jquery-3.3.1.min.js": ("jquery", "3.3.1", "dist/jquery.min.js"),
    "/flot/0.8.3/jquery.flot.min.js": ("flot", "0.8.3", "jquery.flot.js"),
    "/flot/0.8.3/jquery.flot.time.min.js": ("flot", "0.8.3", "jquery.flot.time.js"),
    "/flot/0.8.3/jquery.flot.selection.min.js": ("flot", "0.8.3", "jquery.flot.selection.js"),
    "/flot/0.8.3/jquery.flot.categories.min.js": ("flot", "0.8.3", "jquery.flot.categories.js"),
    "/flot-orderbars@1.0.0/js/jquery.flot.orderBars.js": (
        "flot-orderbars",
        "1.0.0",
        "js/jquery.flot.orderBars.js",
    ),
    "/stupidtable/1.0.1/stupidtable.min.js": ("stupid-table-plugin", "1.1.3", "stupidtable.min.js"),
    "/blueimp-md5/2.19.0/js/md5.min.js": ("blueimp-md5", "2.19.0", "js/md5.min.js"),
    "/bootstrap@3.1.1/dist/js/bootstrap.min.js": ("bootstrap", "3.1.1", "dist/js/bootstrap.min.js"),
    "/bootstrap@3.1.1/dist/css/bootstrap.min.css": (
        "bootstrap",
        "3.1.1",
        "dist/css/bootstrap.min.css",
    ),
}
# Files a copied file refers to by relative address (Bootstrap 3's CSS: ../fonts/).
ASV_ALSO = {"bootstrap": ["dist/fonts"]}

_TAG = re.compile(r"<(script|link)\b([^>]*)>", re.IGNORECASE)
_REMOTE = re.compile(r'\b(src|href)="((?:https?:)?//[^"]+)"')
_SRI = re.compile(r'\s+(?:integrity|crossorigin|referrerpolicy)(?:="[^"]*")?', re.IGNORECASE)


def remote_addresses(html: str) -> list[str]:
    """The CDN addresses of a page's <script src> and <link href> (hyperlinks are not loads)."""
    return [m.group(2) for tag in _TAG.finditer(html) if (m := _REMOTE.search(tag.group(2)))]


def localize(html: str, local: dict) -> tuple[str, list[str]]:
    """Point <script src>/<link href> at CDN addresses to local copies.

    local: CDN address -> relative address of the copy. Subresource-integrity
    and CORS attributes go with the CDN address (a copy served from file://
    could not pass them). Returns the page and the addresses left remote.
    """
    left = []

    def tag(match):
        attrs = match.group(2)
        remote = _REMOTE.search(attrs)
        if not remote:
            return match.group(0)
        if remote.group(2) not in local:
            left.append(remote.group(2))
            return match.group(0)
        attrs = attrs.replace(remote.group(0), f'{remote.group(1)}="{local[remote.group(2)]}"', 1)
        return f"<{match.group(1)}{_SRI.sub('', attrs)}>"

    return _TAG.sub(tag, html), left


# --- npm: asv's libraries -----------------------------------------------------------


def npm_modules(vendor: Path) -> tuple[Path | None, str | None]:
    """vendor/node_modules with every package ASV_CDN needs at its version, running
    `npm ci` there if they are not; (None, why) when that cannot be had."""
    modules = vendor / "node_modules"
    if _installed(modules) is None:
        return modules, None
    if not (vendor / "package-lock.json").is_file():
        return None, f"no {vendor / 'package-lock.json'}"
    npm = shutil.which("npm")
    if npm is None:
        return None, f"npm is not installed to fill {modules}"
    try:
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
            cwd=vendor,
            capture_output=True,
            text=True,
            timeout=300,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"npm ci did not finish: {e}"
    problem = _installed(modules)
    if done.returncode != 0 or problem:
        last = (done.stderr or done.stdout).strip().splitlines()
        return None, f"npm ci in {vendor} failed: {last[-1] if last else problem}"
    return modules, None


def _installed(modules: Path) -> str | None:
    for package, version, _ in ASV_CDN.values():
        try:
            found = json.loads((modules / package / "package.json").read_text()).get("version")
        except (OSError, ValueError):
            return f"{package} is not installed"
        if found != version:
            return f"{package} {found} is installed, not {version}"
    return None


def vendor_asv(page: Path, modules: Path, out: Path) -> tuple[list[str], list[dict]]:
    """Copy asv's libraries from node_modules into out/vendor/<package>@<version>/ and point
    `page` (asv's index.html) at them. Returns (addresses left remote, what was copied)."""
    html = page.read_text()
    local, copied, licensed = {}, [], set()
    for address in remote_addresses(html):
        found = next((entry for end, entry in ASV_CDN.items() if address.endswith(end)), None)
        if found is None:
            continue
        package, version, rel = found
        folder = out / "vendor" / f"{package}@{version}"
        _copy(modules / package / rel, folder / rel)
        for extra in ASV_ALSO.get(package, []):
            shutil.copytree(modules / package / extra, folder / extra, dirs_exist_ok=True)
        if package not in licensed:
            licensed.add(package)
            meta = json.loads((modules / package / "package.json").read_text())
            files = sorted(modules.joinpath(package).glob("LICEN[CS]E*"))
            for licence in files:
                _copy(licence, folder / licence.name)
            copied.append(
                {
                    "package": package,
                    "version": version,
                    "source": "npm",
                    "for": "asv",
                    "licence": _licence_name(meta),
                    "licence_files": [f.name for f in files],
                }
            )
        local[address] = _relative(folder / rel, page.parent)
    html, left = localize(html, local)
    page.write_text(html)
    return left, copied


def _licence_name(meta: dict) -> str:
    found = meta.get("license") or meta.get("licenses") or "not stated in package.json"
    if isinstance(found, list):
        found = found[0]
    return found.get("type", "not stated") if isinstance(found, dict) else str(found)


# --- memray's flame graphs -----------------------------------------------------------


def memray_assets() -> tuple[str, Path, str]:
    """(memray's version, the folder of files it ships for --no-web, the text of its templates)."""
    from importlib import metadata

    import memray

    templates = Path(memray.__file__).parent / "reporters" / "templates"
    text = "\n".join(p.read_text() for p in sorted(templates.glob("*.html")))
    return metadata.version("memray"), templates / "assets" / "vendor", text


def vendor_flamegraph(page: Path, out: Path) -> tuple[list[str], list[dict], list[str]]:
    """Point a memray flame graph (a copy inside `out`) at memray's own copies of its
    libraries, copied once into out/vendor/memray-<version>/.

    A page drawn by another memray release may name other versions: the installed
    memray's file of the same name stands in, and is listed as such.
    Returns (addresses left remote, files copied, addresses that got a stand-in).
    """
    version, shipped, templates = memray_assets()
    folder = out / "vendor" / f"memray-{version}"
    html = page.read_text()
    local, copied, stand_ins = {}, [], []
    for address in remote_addresses(html):
        source = shipped / address.rsplit("/", 1)[-1]
        if not source.is_file():
            continue  # a file this memray does not ship
        if address not in templates:
            stand_ins.append(address)
        if not (folder / source.name).is_file():
            _copy(source, folder / source.name)
            ships = next(
                (
                    a
                    for a in re.findall(r'"((?:https?:)?//[^"]+)"', templates)
                    if a.rsplit("/", 1)[-1] == source.name
                ),
                address,
            )
            copied.append(
                {
                    "package": f"memray {version}",
                    "version": version,
                    "source": "PyPI",
                    "for": "flame graphs",
                    "file": ships,
                }
            )
        local[address] = _relative(folder / source.name, page.parent)
    html, left = localize(html, local)
    page.write_text(html)
    return left, copied, stand_ins


def write_notice(out: Path, copied: list[dict]) -> None:
    """out/vendor/README.txt: what each folder holds and where it came from."""
    lines = ["Third-party files copied by `leakbench site` so that these pages work offline.", ""]
    for item in copied:
        if item["source"] == "npm":
            files = ", ".join(item["licence_files"]) or "none in the package"
            lines.append(
                f"{item['package']}@{item['version']}/  npm package {item['package']} "
                f"{item['version']}; licence: {item['licence']} "
                f"(package.json), licence file: {files}; "
                f"loaded by {item['for']}"
            )
        else:
            lines.append(
                f"memray-{item['version']}/{item['file'].rsplit('/', 1)[-1]}  from the memray "
                f"{item['version']} package (PyPI): the copy memray ships for --no-web of "
                f"{item['file']} (its licence: the file's header, or that library's own); "
                f"loaded by {item['for']}"
            )
    (out / "vendor").mkdir(parents=True, exist_ok=True)
    (out / "vendor" / "README.txt").write_text("\n".join(lines) + "\n")


def _copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


def _relative(target: Path, start: Path) -> str:
    return Path(os.path.relpath(target, start)).as_posix()
