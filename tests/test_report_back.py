"""`leakbench report-back`: the markdown block to paste into a public report's
issue. Read from the committed records (results/records/vm/) and the fixture
records (tests/data/results/); no TensorFlow needed.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
from conftest import invoke, refused

from leakbench import catalog, contract
from leakbench.analysis import decision
from leakbench.history import builds, matrix
from leakbench.reporters import report_back

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
DATA = Path(__file__).parent / "data"
REPORT_PAIRS = [
    n
    for n in catalog.pair_names(ROOT)
    if "#" in contract.read_metadata(ROOT / "scenarios" / f"{n}.py").source
]


@pytest.fixture
def real_checkout(monkeypatch, tmp_path):
    """The real checkout's scenarios, run from elsewhere."""
    monkeypatch.setenv("LEAKBENCH_ROOT", str(ROOT))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@functools.cache  # the committed records do not change during a test session
def block_of(pair: str, *more: str) -> str:
    """`leakbench report-back PAIR` on the committed
    results, run from the checkout fixture's setting."""
    result = invoke("report-back", pair, "--results", str(RESULTS), *more)
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout


def table(block: str) -> dict:
    """column (a release, or "nightly YYYY-MM-DD") ->
    (leaky cell, fixed cell), from the block's table."""
    rows = [
        line.strip("|").split(" | ")
        for line in block.splitlines()
        if re.match(r"\| (\d+\.\d+|nightly )", line)
    ]
    return {r[0].strip(): (r[1].strip(), r[2].strip()) for r in rows}


def test_there_are_report_pairs_and_seed_pairs_are_not_among_them():
    assert "py_function_map" in REPORT_PAIRS and "predict_in_loop" in REPORT_PAIRS
    assert "stateful_map" not in REPORT_PAIRS


# --- the block ------------------------------------------------------------------


def test_py_function_map_shows_its_claim_and_where_the_leaky_verdict_changed(real_checkout):
    block = block_of("py_function_map")
    lines = block.splitlines()
    assert lines[0] == (
        "### [tensorflow/tensorflow#61344](https://github.com/tensorflow/tensorflow/issues/61344): "
        "leakbench pair `py_function_map`"
    )
    assert "**The thread's claim:** leaks on 2.13.0; fixed in 2.15.0." in lines
    assert any(line.startswith("Note: the reporter's later measurement") for line in lines)
    changed = [line for line in lines if line.startswith("**Changed at")]
    assert changed == [
        "**Changed at 2.16.2** (the first release whose leaky verdict differs from the one "
        "before): leak 2.15.1 → no-leak 2.16.2–nightly 2026-10-26."
    ]
    rows = table(block)
    assert list(rows) == [
        "2.12.1",
        "2.13.1",
        "2.14.1",
        "2.15.1",
        "2.16.2",
        "2.17.1",
        "2.18.1",
        "2.19.1",
        "2.20.0",
        "2.21.0",
        "nightly 2026-10-26",
    ]
    assert rows["2.15.1"][0].startswith("leak ") and rows["2.16.2"][0].startswith("no-leak ")
    # 2.12.1–2.14.1 and 2.18.1 were measured on another machine (records/vm-intel-xeon-processor-2c)
    assert rows["2.12.1"] == ("—", "—") and rows["2.18.1"] == ("—", "—")
    assert 'make run ARGS="py_function_map"' in block
    # a release where it still leaks
    assert 'make run TF_VERSION=2.15.1 ARGS="py_function_map"' in block
    assert "diff scenarios/py_function_map.py fixes/py_function_map.py" in block
    assert "AMD EPYC, 2 cores" in block and "Python 3.11.7" in block
    assert "Intel" not in block  # one machine per name
    assert "tensorflow-cpu 2.12.1–2.21.0 and tf-nightly (2026-10-26)" in block
    assert lines[-1] == "Measured with leakbench; the verdict rules are in docs/verdicts.md."
    assert len(lines) <= 35


def test_a_pair_without_reported_shows_its_title_and_first_paragraph(real_checkout):
    block = block_of("full_shuffle_buffer")
    claim = next(
        line
        for line in block.splitlines()
        if line.startswith("**The report, in leakbench's words:**")
    )
    assert "Shuffle buffer as large as the dataset, over small elements." in claim  # TITLE
    # the docstring's first paragraph
    assert "hundreds of bytes per element" in claim
    assert "k in peak ∝ num_elements^k" in block
    assert (
        "The leaky variant reads leak on every release measured (2.12.1–nightly 2026-10-26)."
        in block
    )


@pytest.fixture(scope="module")
def committed_matrix() -> dict:
    """matrix.matrix of the committed results, read once for the module: its tests only read it."""
    return matrix.matrix(RESULTS)


@pytest.mark.parametrize("pair", REPORT_PAIRS)
def test_numbers_in_a_block_are_the_matrix_numbers(real_checkout, committed_matrix, pair):
    rows = {r["variant"]: r["cells"] for r in committed_matrix["rows"] if r["pair"] == pair}
    shown = table(block_of(pair))
    columns = {builds.label(v): v for v in rows["leaky"]}
    assert set(shown) == set(columns)
    for column, cells in shown.items():
        version = columns[column]
        for variant, text in zip(("leaky", "fixed"), cells):
            cell = rows[variant][version]
            if cell is None:  # not measured on this machine
                assert text == "—", (version, variant, text)
                continue
            assert text.lstrip("*").startswith(cell["verdict"]), (version, variant, text)
            assert decision.number(cell["decision"]) in text, (version, variant, text)


def test_every_number_in_a_block_comes_from_the_records(real_checkout):
    """Outside the table, the claim and the reproduce lines, a block states no figure of its own."""
    for pair in REPORT_PAIRS:
        for line in block_of(pair).splitlines():
            if line.startswith(
                (
                    "|",
                    "**The",
                    "Note:",
                    "###",
                    "Machine",
                    "make run",
                    "git clone",
                    "**Changed",
                    # bisect: its result file's
                    "The leaky",
                    "diff ",
                    "`leakbench bisect`",
                )
            ):
                continue
            assert not re.search(r"\b\d", line), (pair, line)


def test_a_leak_resting_on_other_signals_names_them(real_checkout):
    block = block_of("generator_per_step")
    # the cell's number is the signal that decided, in its unit (the decision)
    assert table(block)["2.21.0"][0] == "leak · python objects +133/rep"


def test_fixture_records_and_a_report_pair_of_ones_own(monkeypatch, tmp_path):
    """A root whose pair `growing` names an issue: its
    fix leaks on 2.99.0 (bold), no CPU in the records."""
    root = tmp_path / "root"
    for sub, source in (("scenarios", "python_leak"), ("fixes", "python_bounded")):
        (root / sub).mkdir(parents=True)
        text = (
            (DATA / f"{source}.py")
            .read_text()
            .replace('SOURCE = "stateful functions"', 'SOURCE = "example/project#7"')
        )
        (root / sub / "growing.py").write_text(text)
    monkeypatch.setenv("LEAKBENCH_ROOT", str(root))
    monkeypatch.chdir(tmp_path)
    result = invoke("report-back", "--results", str(DATA / "results"))
    assert result.exit_code == 0, (result.output, result.exception)
    block = result.stdout
    assert block.startswith(
        "### [example/project#7](https://github.com/example/project/issues/7): "
        "leakbench pair `growing`"
    )
    assert list(table(block)) == ["2.13.1", "2.21.0", "2.99.0"]
    assert table(block)["2.99.0"][1].startswith("**leak**")
    assert "**Bold**: not what the variant should read" in block
    assert "Machine (asv machine `fixture`): Python 3.11.2, tensorflow-cpu 2.13.1–2.99.0" in block


# --- bad input and --out ----------------------------------------------------------


def test_a_seed_pair_is_bad_input(real_checkout):
    refused(
        invoke("report-back", "stateful_map", "--results", str(RESULTS)),
        "stateful_map is not a report pair",
        "py_function_map",
    )


def test_an_unknown_pair_is_bad_input(real_checkout):
    refused(
        invoke("report-back", "no_such_pair", "--results", str(RESULTS)),
        "unknown pair 'no_such_pair'",
    )


def test_results_without_the_pair_or_without_records_are_bad_input(real_checkout, tmp_path):
    refused(
        invoke("report-back", "py_function_map", "--results", str(DATA / "results")),
        "no records of py_function_map",
    )
    refused(invoke("report-back", "--results", str(tmp_path / "none")), "no results directory")
    refused(invoke("report-back", "--results", str(RESULTS), "--machine", "elsewhere"), "elsewhere")


def test_out_writes_one_file_per_pair_and_keeps_the_rest(real_checkout, tmp_path):
    out = tmp_path / "new" / "report-back"
    out.mkdir(parents=True)
    (out / "README.txt").write_text("mine")
    result = invoke("report-back", "--results", str(RESULTS), "--out", str(out))
    assert result.exit_code == 0, (result.output, result.exception)
    assert result.stdout.splitlines() == [str(out / f"{p}.md") for p in REPORT_PAIRS]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [*(f"{p}.md" for p in REPORT_PAIRS), "README.txt"]
    )
    assert (out / "README.txt").read_text() == "mine"
    assert (out / "py_function_map.md").read_text() == block_of("py_function_map")
    one = invoke(
        "report-back", "predict_in_loop", "--results", str(RESULTS), "--out", str(tmp_path / "one")
    )
    assert one.exit_code == 0 and [p.name for p in (tmp_path / "one").iterdir()] == [
        "predict_in_loop.md"
    ]


def test_out_that_is_a_file_is_bad_input(real_checkout, tmp_path):
    (tmp_path / "taken").write_text("x")
    refused(
        invoke("report-back", "--results", str(RESULTS), "--out", str(tmp_path / "taken")),
        "--out",
    )
    assert (tmp_path / "taken").read_text() == "x"


def test_the_committed_blocks_are_generated_from_the_committed_records(real_checkout, tmp_path):
    committed = RESULTS / "report-back"
    assert sorted(p.stem for p in committed.glob("*.md")) == REPORT_PAIRS
    for pair in REPORT_PAIRS:
        assert (committed / f"{pair}.md").read_text() == block_of(pair), f"regenerate {committed}"


# --- the pure parts ------------------------------------------------------------


def test_change_line_and_segments_skip_releases_without_a_record():
    cells = {
        "1": {"verdict": "leak"},
        "2": None,
        "3": {"verdict": "leak"},
        "4": {"verdict": "no-leak"},
    }
    assert report_back.segments(cells, ["1", "2", "3", "4"]) == [
        ("leak", "1", "3"),
        ("no-leak", "4", "4"),
    ]
    assert report_back.change_line(cells, ["1", "2", "3", "4"]).startswith("**Changed at 4**")
    assert report_back.change_line({"1": None}, ["1"]) is None
    assert report_back.other_release(cells, ["1", "2", "3", "4"]) == "3"
