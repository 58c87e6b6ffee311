"""The flame graphs on the site: memray's page of the leaky variant's retained
allocations, copied from results/flamegraphs/tf-<version>/<pair>-leaky.html
into the site's flamegraphs/ with its libraries pointed at local copies
(leakbench.site.vendor), and the totals a lesson quotes from it.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import NamedTuple

from leakbench import jsonfile
from leakbench.site import vendor
from leakbench.units import KIB, MIB

# results/flamegraphs/tf-<version>/<pair>-leaky.html, and the site's copies
FLAMEGRAPHS = "flamegraphs"
_PACKED = re.compile(r"const packed_data = (\{.*?\});\n", re.S)


class Copied(NamedTuple):
    """What copy_flamegraph made, for leakbench.site.build to add to what the build wrote."""

    shown: dict | None  # what a lesson shows of it; None when no version has one
    pages: list  # (path relative to out, bytes)
    vendored: list  # the libraries copied (leakbench.site.vendor)
    notes: list  # one line each


def copy_flamegraph(results: Path, out: Path, name: str, order: list[str]) -> Copied:
    """Copy pair `name`'s leaky flame graph of the first TF version in `order` that has one into
    out/flamegraphs/tf-<version>/, pointing its CDN libraries at out/vendor/.

    Returns Copied: what a lesson shows ({"href": relative to lessons/, "version", "kib": the
    copy's size in KiB, "offline": bool, and flamegraph_totals' keys}, or None when no version has
    one), the page, the copied libraries, and a note for an address left on a CDN or a library of
    another memray release. A page that is not UTF-8 text (or over jsonfile.MAX_BYTES) is passed
    over with a note. Raises OSError when the copy
    cannot be written (build turns it into SiteError).
    """
    notes = []
    for version in dict.fromkeys(order):
        source = Path(results) / FLAMEGRAPHS / f"tf-{version}" / f"{name}-leaky.html"
        if not source.is_file():
            continue
        rel = f"{FLAMEGRAPHS}/tf-{version}/{name}-leaky.html"
        # memray writes UTF-8; another page (damaged, a device behind a link) is left out, said so
        try:
            html = jsonfile.read_text(source)
        except jsonfile.Unreadable as e:
            notes.append(f"{source} skipped: {e.reason}")
            continue
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, out / rel)
        left, copied, stand_ins = vendor.vendor_flamegraph(out / rel, out)
        if left:
            notes.append(f"{rel} still loads {len(left)} file(s) from CDNs: {', '.join(left)}")
        if stand_ins:
            notes.append(
                f"{rel} was drawn by another memray release: the installed memray's copies "
                f"stand in for {', '.join(stand_ins)}"
            )
        size = (out / rel).stat().st_size
        shown = {
            "href": f"../{rel}",
            "version": version,
            "kib": size / KIB,
            "offline": not left,
            **flamegraph_totals(html),
        }
        return Copied(shown, [(rel, size)], copied, notes)
    return Copied(None, [], [], notes)


def flamegraph_totals(html: str) -> dict:
    """Bytes a memray flame graph holds: all of them (its root) and the share under a Python frame.

    memray records no Python stack for an allocation made by a thread that runs
    no Python (TensorFlow's own): those bytes sit on the root alone. Reads the
    data memray 1.x embeds (`packed_data`). Returns {"retained_mib": MiB,
    "python_share": 0..1, or None for an empty graph}; {} when the page is not in that form.
    """
    found = _PACKED.search(html)
    if found is None:
        return {}
    try:
        nodes = json.loads(found.group(1))["nodes"]
        total = int(nodes["value"][0])
        python = sum(int(nodes["value"][child]) for child in nodes["children"][0])
    except (AttributeError, ValueError, KeyError, IndexError, TypeError, RecursionError):
        return {}
    return {"retained_mib": total / MIB, "python_share": python / total if total else None}
