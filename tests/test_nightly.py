"""The nightly column: dated nightly builds as columns after the releases, the
"nightly" alias in compare, the verdict changes along the columns, and the pin
of a nightly. On hand-made records (tests/data/results/), and the committed nightly column on
results/ as committed (its own consistency, its machine read); no TensorFlow needed."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest
from conftest import invoke

from leakbench.history import builds, matrix, pin, store
from leakbench.reporters import history as history_md

RESULTS = Path(__file__).parent / "data" / "results"
MACHINE = "fixture"
NIGHTLY = "3.0.0.dev20261026"  # after the fixture's newest release, 2.99.0


def with_nightly(tmp_path, changed_pair: str | None = "growing") -> Path:
    """The fixture results plus a nightly file: 2.21.0's records, with the leaky variant
    of `changed_pair` reading no-leak there."""
    shutil.copytree(RESULTS, tmp_path / "results")
    recs = store.read_records(RESULTS / "records" / MACHINE / "tf-2.21.0.jsonl")
    nightly = []
    for r in recs:
        r = {**r, "environment": {**r["environment"], "tensorflow": "3.0.0-dev20261026"}}
        if (r["pair"], r["variant"]) == (changed_pair, "leaky"):
            r = {**r, "verdict": "no-leak", "signals": []}
        nightly.append(r)
    store.write_records(tmp_path / "results", MACHINE, NIGHTLY, nightly)
    return tmp_path / "results"


def test_builds_order_releases_candidates_and_nightlies():
    found = ["2.23.0.dev20261026", "2.22.0rc0", "2.21.0", "2.22.0.dev20260204", "2.9.1", "2.22.0"]
    assert sorted(found, key=builds.sort_key) == [
        "2.9.1",
        "2.21.0",
        "2.22.0.dev20260204",
        "2.22.0rc0",
        "2.22.0",
        "2.23.0.dev20261026",
    ]


def test_a_nightly_is_named_by_its_build_date():
    assert builds.build_date("2.23.0.dev20261026") == dt.date(2026, 10, 26)
    assert (
        builds.label("2.23.0.dev20261026")
        == "nightly 2026-10-26"
        == builds.label("2.23.0-dev20261026")
    )
    assert builds.label("2.21.0") == "2.21.0" and builds.build_date("2.22.0rc0") is None
    assert (
        builds.newest_nightly(["2.21.0", "2.22.0.dev20260904", "2.23.0.dev20261026"])
        == "2.23.0.dev20261026"
    )
    assert builds.newest_nightly(["2.21.0"]) is None


def test_the_pin_holds_for_a_nightly_spelled_two_ways():
    rec = {
        "pair": "p",
        "variant": "leaky",
        "verdict": "leak",
        "environment": {"tensorflow": "2.23.0-dev20261026"},
    }
    # tf.__version__ against pip's version: one build
    pin.check_tf_version([rec], "2.23.0.dev20261026")
    with pytest.raises(store.VersionError, match="the pin did not hold"):
        pin.check_tf_version([rec], "2.23.0.dev20261025")


def test_the_matrix_has_a_column_per_nightly_after_the_releases(tmp_path):
    found = matrix.matrix(with_nightly(tmp_path))
    assert found["versions"][-1] == NIGHTLY and found["labels"][NIGHTLY] == "nightly 2026-10-26"
    text = history_md.matrix_markdown(found)
    assert "| pair | variant | 2.13.1 | 2.21.0 | 2.99.0 | nightly 2026-10-26 |" in text


def test_verdict_changes_name_the_build_where_they_happened(tmp_path):
    found = matrix.matrix(with_nightly(tmp_path))
    changes = matrix.changes(found)
    growing = [c for c in changes if c["pair"] == "growing"]
    assert {
        "variant": "leaky",
        "from": "leak",
        "to": "no-leak",
        "version": NIGHTLY,
        "label": "nightly 2026-10-26",
        "before": "2.99.0",
    }.items() <= growing[0].items()
    # the fixture's own change: the growing fix leaks on 2.99.0, back to no-leak on the nightly
    assert [(c["from"], c["to"], c["version"]) for c in growing if c["variant"] == "fixed"] == [
        ("no-leak", "leak", "2.99.0"),
        ("leak", "no-leak", NIGHTLY),
    ]
    assert (
        "- growing (leaky): leak → no-leak on nightly 2026-10-26 (after 2.99.0)"
        in history_md.matrix_markdown(found)
    )


def test_compare_with_the_nightly_alias_names_a_leak_fixed_upstream(tmp_path):
    results = with_nightly(tmp_path)
    result = invoke("compare", "2.21.0", "nightly", "--results", results)
    assert result.exit_code == 0, result.output  # a leak TensorFlow fixed is no regression
    assert "TensorFlow 2.21.0 → nightly 2026-10-26" in result.output
    fixed = result.output.split("### Fixed upstream: 1")[1].split("###")[0]
    assert "- growing (leaky): " in fixed


def test_compare_with_the_nightly_alias_exits_0_when_nothing_changed(tmp_path):
    results = with_nightly(tmp_path, changed_pair=None)
    result = invoke("compare", "2.21.0", "nightly", "--results", results)
    assert result.exit_code == 0, result.output


def test_compare_nightly_without_a_nightly_is_one_line(tmp_path):
    result = invoke("compare", "2.21.0", "nightly", "--results", RESULTS)
    assert result.exit_code == 2
    assert result.stderr.strip().count("\n") == 0 and "nightly is not in" in result.stderr


# --- the committed nightly column (results/ as committed, the published machine) ------------
# The published dataset is regenerated under its own machine name: the machine is read
# (store.published_machine), and what a comparison must say, from the records themselves.


def test_the_committed_nightly_column_is_one_dated_build_after_the_releases(committed_results):
    files = store.available(committed_results, store.published_machine(committed_results))
    nightly = builds.newest_nightly(files)
    assert nightly and list(files)[-1] == nightly and builds.label(nightly).startswith("nightly 20")
    records = store.read_records(files[nightly])
    assert {
        r["environment"]["tensorflow"] for r in records if r["environment"].get("tensorflow")
    } == {nightly.replace(".dev", "-dev")}  # tf.__version__'s spelling of pip's version
    assert all(r["environment"].get("tensorflow_git") for r in records if r["verdict"] != "skipped")


def test_compare_the_release_with_the_committed_nightly_names_what_its_records_fixed(
    committed_results,
):
    """The published gate's two sides (builds.DEFAULT_RELEASE, the nightly): each variant fixed
    upstream read leak on the release and no-leak on the nightly in its records (#37653's
    generator_per_step was one), is listed so, and the exit is 0 without a regression."""
    machine = store.published_machine(committed_results)
    args = ["compare", builds.DEFAULT_RELEASE, "nightly", "--results", committed_results]
    found = json.loads(invoke(*args, "--machine", machine, "--format", "json").stdout)
    result = invoke(*args, "--machine", machine)
    assert result.exit_code == found["exit_code"] == (1 if found["counts"]["regression"] else 0)
    versions = store.by_version(committed_results, machine)
    old, new = versions[builds.DEFAULT_RELEASE], versions[builds.newest_nightly(versions)]
    fixed = [
        (e["pair"], e["variant"]) for e in found["entries"] if e["outcome"] == "fixed upstream"
    ]
    assert found["counts"]["fixed upstream"] == len(fixed)
    shown = result.output.split(f"### Fixed upstream: {len(fixed)}\n")[1].split("###")[0]
    assert len(shown.strip().splitlines()) == len(fixed) or shown.strip() == "None."
    for pair, variant in fixed:
        assert (old[pair, variant]["verdict"], new[pair, variant]["verdict"]) == ("leak", "no-leak")
        (line,) = [s for s in shown.splitlines() if s.startswith(f"- {pair} ({variant}): ")]
        assert line.startswith(f"- {pair} ({variant}): leak · ") and " → no-leak · " in line


def test_a_confirmed_bisect_is_named_beside_its_change(tmp_path):
    """results/bisect/<machine>/*.json: a found boundary inside a change is shown with it; an
    unstable one, or a file that is not JSON, is not."""
    results = with_nightly(tmp_path)
    folder = results / "bisect" / MACHINE
    folder.mkdir(parents=True)
    boundary = {
        "good": {"version": "2.99.0"},
        "bad": {"version": "3.0.0.dev20261025", "date": "2026-10-25"},
        "compare_url": "https://github.com/tensorflow/tensorflow/compare/aaa...bbb",
    }
    (folder / "growing-leaky.json").write_text(
        json.dumps({"pair": "growing", "variant": "leaky", "status": "found", "boundary": boundary})
    )
    (folder / "growing-fixed.json").write_text(
        json.dumps(
            {"pair": "growing", "variant": "fixed", "status": "unstable", "boundary": boundary}
        )
    )
    (folder / "broken.json").write_text("{not json")
    found = matrix.matrix(results)
    assert [(b["pair"], b["variant"]) for b in found["bisected"]] == [("growing", "leaky")]
    text = history_md.matrix_markdown(found)
    assert (
        "- growing (leaky): leak → no-leak on nightly 2026-10-26 (after 2.99.0); bisected: first "
        "3.0.0.dev20261025 (2026-10-25), after 2.99.0: https://github.com/tensorflow/tensorflow/compare/aaa...bbb"
    ) in text
    fixed_line = next(
        line for line in text.splitlines() if line.startswith("- growing (fixed): leak → no-leak")
    )
    assert "bisected" not in fixed_line  # an unstable boundary is not shown
    # 2.99.0 alone
    assert fixed_line.endswith("one build only, the same verdict on both sides: measure it again")


def test_a_verdict_on_one_build_between_two_alike_is_flagged():
    """A → B → A with B on one build: both changes say so (a reading to measure again)."""
    cells = {
        "1.0.0": "fragmentation",
        "1.1.0": "fragmentation",
        "1.2.0": "no-leak",
        "1.3.0": "fragmentation",
    }
    m = {
        "versions": list(cells),
        "rows": [
            {
                "pair": "p",
                "variant": "leaky",
                "cells": {v: {"verdict": w} for v, w in cells.items()},
            }
        ],
    }
    found = matrix.changes(m)
    assert [(c["from"], c["to"], c["version"], c["one_build"]) for c in found] == [
        ("fragmentation", "no-leak", "1.2.0", True),
        ("no-leak", "fragmentation", "1.3.0", True),
    ]
    steady = {
        "versions": ["1.0.0", "1.1.0", "1.2.0"],
        "rows": [
            {
                "pair": "p",
                "variant": "leaky",
                "cells": {
                    "1.0.0": {"verdict": "leak"},
                    "1.1.0": {"verdict": "no-leak"},
                    "1.2.0": {"verdict": "no-leak"},
                },
            }
        ],
    }
    assert [c["one_build"] for c in matrix.changes(steady)] == [False]


def test_matrix_json_lists_the_changes(tmp_path):
    result = invoke("matrix", "--results", with_nightly(tmp_path), "--format", "json")
    assert result.exit_code == 0, result.output
    changes = json.loads(result.output)["changes"]
    leaky = [c for c in changes if (c["pair"], c["variant"]) == ("growing", "leaky")]
    assert [(c["from"], c["to"], c["version"], c["bisect"], c["one_build"]) for c in leaky] == [
        ("leak", "no-leak", NIGHTLY, None, False)
    ]
