"""asv's pages of the records (leakbench.publish.asv_builds, benchmarks/benchmark_pairs.py,
leakbench.site.asv). No TensorFlow needed: asv reads records, it measures nothing.

The fixture records (tests/data/asv_records/bench/) are real records of the `vm` machine, trimmed
to three builds (2.15.1, 2.21.0, the nightly 2.23.0.dev20261026) and three pairs (stateful_map,
unbounded_cache, and kept_device_batches, skipped on a CPU). They are copied into tmp_path: the
tests never read results/.

The browser test publishes them with `asv publish`, opens asv's summary grid and every benchmark's
graph in headless chromium (conftest.need_chromium: skipped without it, failed under CI=true) and
fails on a summary box with no line drawn, or a graph missing a build.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import shutil
import subprocess
import tempfile
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import CHROMIUM

from leakbench import metrics
from leakbench.history import store
from leakbench.publish import asv_builds
from leakbench.site import asv as asv_pages

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "asv_records"
MACHINE = "bench"
PAIRS = ["kept_device_batches", "stateful_map", "unbounded_cache"]
DATES = {"2.15.1": "2024-03-08", "2.21.0": "2026-03-06"}
BUILDS = ["2.15.1", "2.21.0", "2.23.0.dev20261026"]


def test_builds_repo_is_deterministic(tmp_path):
    dated = {"2.21.0": "2026-03-06", "2.23.0.dev20261026": "2026-10-26", "2.15.1": "2024-03-08"}
    one = asv_builds.build_repo(tmp_path / "one", dated)
    two = asv_builds.build_repo(tmp_path / "two", dict(reversed(dated.items())))
    assert one == two and list(one) == BUILDS  # build order, whatever the order given
    assert asv_builds.build_repo(tmp_path / "one", dated) == one  # rebuilt in place: the same

    def git(*args):
        return subprocess.run(
            ["git", *args], cwd=tmp_path / "one", capture_output=True, text=True, check=True
        ).stdout

    log = git("log", "--format=%H|%an <%ae>|%cn|%ad|%s", "--date=short", asv_builds.BRANCH)
    assert log.splitlines() == [
        f"{one['2.23.0.dev20261026']}|leakbench <leakbench@localhost>|leakbench|2026-10-26|"
        "TensorFlow nightly 2026-10-26",
        f"{one['2.21.0']}|leakbench <leakbench@localhost>|leakbench|2026-03-06|TensorFlow 2.21.0",
        f"{one['2.15.1']}|leakbench <leakbench@localhost>|leakbench|2024-03-08|TensorFlow 2.15.1",
    ]
    assert git("tag").split() == ["tf-2.15.1", "tf-2.21.0", "tf-nightly-2026-10-26"]
    assert git("show", f"{one['2.21.0']}:BUILD") == "2.21.0\n"
    # one build fewer: its tag goes, the others' hashes are those of a fresh repository
    fewer = asv_builds.build_repo(tmp_path / "one", {"2.15.1": "2024-03-08"})
    assert fewer == {"2.15.1": one["2.15.1"]} and git("tag").split() == ["tf-2.15.1"]


def test_build_dates():
    assert asv_builds.build_date("2.23.0.dev20261026", {}) == "2026-10-26"
    assert asv_builds.build_date("2.21.0", DATES) == "2026-03-06"
    with pytest.raises(asv_builds.PublishError, match="no date of TensorFlow 2.12.1"):
        asv_builds.build_date("2.12.1", DATES)
    assert asv_builds.tag_name("2.23.0.dev20261026") == "tf-nightly-2026-10-26"


def test_refresh_dates_keeps_what_it_has(tmp_path):
    from leakbench.history.registry import Build

    path = tmp_path / "builds.json"
    path.write_text(json.dumps({"2.21.0": "2026-03-06"}))
    served = [
        Build("2.20.0", "tensorflow-cpu", "2025-08-13"),
        Build("2.21.0", "tensorflow-cpu", "2026-03-07"),
        Build("2.23.0.dev20261026", "tf-nightly", "2026-10-26"),
    ]
    got = asv_builds.refresh_dates(path, served=lambda: served)
    assert got == {"2.20.0": "2025-08-13", "2.21.0": "2026-03-06"}
    assert json.loads(path.read_text()) == got


def test_summary_is_the_mean_of_what_each_build_has():
    from asv.graph import Graph

    from leakbench.publish import asv_summary

    one, two = Graph("b", {"machine": "a"}), Graph("b", {"machine": "b"})
    one.add_data_point(0, [0.0, 4.0, math.nan])
    one.add_data_point(1, [0.0, None, None])
    two.add_data_point(0, [2.0])
    two.add_data_point(2, [None])
    assert asv_summary.mean_by_revision([one, two]) == {0: 2.0, 1: 0.0, 2: None}


def test_engine_identity():
    made = {"version": "0.2.0", "commit": None, "source": "0123456789abcdef"}
    assert asv_builds.engine_identity([{"engine": made}] * 2) == "0.2.0+0123456789abcdef"
    assert asv_builds.engine_identity([{"engine": None}, {}]) == "unknown"
    assert asv_builds.engine_identity([{"engine": made}, {}]) == "0.2.0+0123456789abcdef,unknown"


def test_machine_info_is_the_records_machine():
    env = {"cpu": "AMD EPYC", "cores": 2, "ram_bytes": 25276059648}
    env["platform"] = "Linux-6.18.44-fc-v857-x86_64-with-glibc2.36"
    info = asv_builds.machine_info([{"environment": env}], "vm")
    assert info == {
        "arch": "x86_64",
        "cpu": "AMD EPYC",
        "machine": "vm",
        "num_cpu": "2",
        "os": "Linux 6.18.44-fc-v857",
        "ram": "25276059648",
    }


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """publish_asv of the fixture records in a temporary results/, which also holds a stale
    result file of the machine (another commit and environment) and another machine's."""
    base = tmp_path_factory.mktemp("asv")
    results = base / "results"
    shutil.copytree(DATA, results / store.RECORDS_DIR)
    (results / asv_builds.DATES_FILE).write_text(json.dumps(DATES))
    (results / MACHINE).mkdir()
    (results / MACHINE / "b581c952-virtualenv-py3.11-tensorflow-cpu2.12.1.json").write_text("{}")
    (results / "other").mkdir()
    other = {"machine": "other", "arch": "x86_64", "cpu": "x", "num_cpu": "1", "os": "Linux 6"}
    (results / "other" / "machine.json").write_text(json.dumps({**other, "ram": "1", "version": 1}))
    seen = []
    written = asv_builds.publish_asv(
        REPO, results, MACHINE, log=seen.append, repo=base / "repo", pairs=PAIRS
    )
    return base, results, written, seen


def test_publish_writes_the_records_numbers(published):
    base, results, written, seen = published
    commits = asv_builds.build_repo(base / "repo", {**DATES, BUILDS[-1]: "2026-10-26"})
    mine = sorted(p.name for p in (results / MACHINE).iterdir())
    # machine.json and one result file per build, named by its commit
    assert sorted(n[:8] for n in mine if n != "machine.json") == sorted(
        c[:8] for c in commits.values()
    )
    assert len(mine) == len(BUILDS) + 1
    assert "b581c952-virtualenv-py3.11-tensorflow-cpu2.12.1.json" not in mine  # stale: removed
    assert (results / "other" / "machine.json").is_file()  # another machine's: untouched
    assert sorted(written) == sorted([*(results / MACHINE).iterdir(), results / "benchmarks.json"])
    assert len(seen) == len(BUILDS) and "engine unknown" in seen[0]
    machine = json.loads((results / MACHINE / "machine.json").read_text())
    assert (machine["cpu"], machine["num_cpu"], machine["machine"]) == ("AMD EPYC", "2", MACHINE)
    suite = json.loads((results / "benchmarks.json").read_text())
    registry = {m.asv: m for m in metrics.METRICS if m.asv}
    assert len([k for k in suite if k != "version"]) == len(registry)
    for version, commit in commits.items():
        (result,) = (results / MACHINE).glob(f"{commit[:8]}-*.json")
        saved = json.loads(result.read_text())
        assert saved["commit_hash"] == commit and saved["params"]["cpu"] == "AMD EPYC"
        records = store.by_version(results, MACHINE)[version]
        for metric in registry.values():
            name = f"benchmark_pairs.Pairs.track_{_asv_name(metric)}"
            values, params, engine = saved["results"][name][:3]
            assert engine == suite[name]["version"] == "unknown"  # records without `engine`
            assert suite[name]["unit"] == metric.unit.removesuffix("/repetition")
            for value, (pair, variant) in zip(values, itertools.product(*params)):
                rec = records[pair.strip("'"), variant.strip("'")]
                want = metrics.value(rec, metric.key)
                if rec["verdict"] == "skipped" or want is None:
                    assert value is None or math.isnan(value), (version, name, pair, variant)
                else:
                    assert value == pytest.approx(want), (version, name, pair, variant)


def test_publish_again_writes_the_same_files(published, tmp_path):
    base, results, written, _ = published
    before = {p.name: json.loads(p.read_text()) for p in (results / MACHINE).iterdir()}
    again = base / "again"
    shutil.copytree(results, again)
    asv_builds.publish_asv(
        REPO, again, MACHINE, log=lambda _: None, repo=tmp_path / "r", pairs=PAIRS
    )
    after = {p.name: json.loads(p.read_text()) for p in (again / MACHINE).iterdir()}
    assert after.keys() == before.keys()
    for name, saved in after.items():
        for key in ("commit_hash", "date", "params", "env_name"):
            assert saved.get(key) == before[name].get(key), (name, key)
        for bench, row in saved.get("results", {}).items():
            assert row[:3] == before[name]["results"][bench][:3], (name, bench)


def _asv_name(metric) -> str:
    import benchmarks.benchmark_pairs as glue

    return glue.asv_name(metric)


# --- the browser test -----------------------------------------------------------------

# Runs in a page beside asv's: asv's summary grid, then each benchmark's graph, in an iframe;
# logs what flot drew there (flot keeps its plot on the placeholder: .data("plot")).
_PROBE = """<!DOCTYPE html><body><script>
var views = %s, at = 0;
function painted(canvas, colour) {
  var rgb = /^#/.test(colour) ? [1, 3, 5].map(function (i) {
        return parseInt(colour.substr(i, 2), 16); })
      : colour.match(/\\d+/g).slice(0, 3).map(Number);
  var px = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data, n = 0;
  for (var i = 0; i < px.length; i += 4)
    if (px[i + 3] > 128 && Math.abs(px[i] - rgb[0]) + Math.abs(px[i + 1] - rgb[1])
        + Math.abs(px[i + 2] - rgb[2]) < 60) n++;
  return n;
}
function xs(plot) {
  var seen = {};
  plot.getData().forEach(function (s) { s.data.forEach(function (p) {
    if (p[1] !== null && isFinite(p[1])) seen[p[0]] = 1; }); });
  return Object.keys(seen).length;
}
function next() {
  if (at >= views.length) { console.log("probe done"); return; }
  var view = views[at++], f = document.createElement("iframe");
  f.width = 1280; f.height = 1600; f.src = "asv/index.html" + view;
  f.onload = function () { setTimeout(function () {
    var $ = f.contentWindow.jQuery;
    if (view === "") $(".benchmark-plot").each(function () {
      var plot = $(this).data("plot"), s = plot && plot.getData()[0];
      console.log("summary " + this.id + " " + (s ? xs(plot) : 0) + " "
        + (s ? painted($(this).find("canvas.flot-base")[0], s.color) : 0));
    });
    else { var plot = $("#main-graph").data("plot");
      console.log("graph " + view + " " + (plot ? xs(plot) : 0)); }
    f.remove(); next();
  }, 4000); };
  document.body.appendChild(f);
}
next();
</script>"""


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_browser_summary_grid_and_graphs_show_every_build(published, chromium, tmp_path):
    _, results, _, _ = published
    out = tmp_path / "site"
    done = asv_pages.publish(results, REPO, out, repo=tmp_path / "repo")
    assert done.page == asv_pages.INDEX, done.notes
    names = [k for k in json.loads((results / "benchmarks.json").read_text()) if k != "version"]
    # each thumbnail: the mean of the records' numbers at each build (leakbench.publish.asv_summary)
    by_version = store.by_version(results, MACHINE)
    registry = {f"benchmark_pairs.Pairs.track_{_asv_name(m)}": m for m in metrics.METRICS if m.asv}
    for name in names:
        summary = json.loads((out / "asv" / "graphs" / "summary" / f"{name}.json").read_text())
        assert [revision for revision, _ in summary] == list(range(len(BUILDS))), name
        for (_, mean), version in zip(summary, BUILDS, strict=True):
            found = [metrics.value(r, registry[name].key) for r in by_version[version].values()]
            found = [v for v in found if v is not None]
            assert mean == pytest.approx(sum(found) / len(found)), (name, version)
    (out / "probe-asv.html").write_text(_PROBE % json.dumps(["", *(f"#{n}" for n in names)]))
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(out)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    profile = tempfile.mkdtemp(prefix="leakbench-chromium-")
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/probe-asv.html"
        ran = subprocess.run(
            [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
            + [f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0"]
            + ["--virtual-time-budget=120000", "--dump-dom", url],
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        shutil.rmtree(profile, ignore_errors=True)
        server.shutdown()
        server.server_close()
    said = re.findall(r'"((?:summary|graph|probe) [^"]*)"', ran.stderr)
    assert "probe done" in said, ran.stderr[-3000:]
    boxes = [line.split() for line in said if line.startswith("summary ")]
    assert sorted(b[1] for b in boxes) == sorted(f"summarygrid-{n}" for n in names)
    for _, box, points, drawn in boxes:  # a line over every build, and pixels of its colour
        assert int(points) == len(BUILDS) and int(drawn) > 20, (
            f"summary box {box}: a line over {points} of {len(BUILDS)} builds, {drawn} pixels"
        )
    graphs = {line.split()[1][1:]: int(line.split()[2]) for line in said if line[:6] == "graph "}
    assert graphs == dict.fromkeys(names, len(BUILDS)), f"a build is missing from a graph: {said}"
