"""A pair whose public report ties its leak to some TensorFlow releases
(REPORTED in the contract): the contract reads and checks the claim; its leaky
variant may read leak or no-leak (expectation.VERSION_DEPENDENT) in `leakbench
run`'s exit code and in the matrix alike, while its fix must still not leak and
an error is still a failure. No TensorFlow needed.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import invoke

from leakbench import catalog, contract, expectation
from leakbench.history import matrix, store
from leakbench.reporters import history as history_md

DATA = Path(__file__).parent / "data"
FAST = ["--cap", "1GiB", "--timeout", "60", "--warmup", "1", "--reps", "6", "--heap-reps", "0"]
CLAIM = {
    "issue": "tensorflow/tensorflow#61344",
    "leaks_on": ["2.13.0"],
    "fixed_in": "2.15.0",
    "note": "gone between 2.13 and 2.15.0",
}


def reported_copy(folder: Path, source: str, name: str = "pyreported", claim=CLAIM) -> Path:
    """tests/data/<source>.py saved as folder/<name>.py with REPORTED = claim appended."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text((DATA / f"{source}.py").read_text() + f"\nREPORTED = {claim!r}\n")
    return path


# --- the contract ---------------------------------------------------------------


def test_contract_reads_the_claim(tmp_path):
    scenario = contract.read_metadata(reported_copy(tmp_path, "python_bounded"))
    assert scenario.reported == CLAIM
    assert contract.read_metadata(DATA / "python_bounded.py").reported is None


@pytest.mark.parametrize(
    "claim, message",
    [
        (["2.13.0"], "must be a dict"),
        ({**CLAIM, "issue": "61344"}, "needs issue 'owner/repo#N'"),
        ({**CLAIM, "leaks_on": "2.13.0"}, "needs leaks_on, a list of version strings"),
        ({k: v for k, v in CLAIM.items() if k != "fixed_in"}, "needs fixed_in"),
        ({**CLAIM, "fixed_in": 2.15}, "needs fixed_in"),
        ({**CLAIM, "measured": {"2.21.0": "no-leak"}}, "has unknown keys ['measured']"),
    ],
)
def test_contract_rejects_a_malformed_claim(tmp_path, claim, message):
    with pytest.raises(contract.ContractError, match=re.escape("REPORTED " + message)):
        contract.read_metadata(reported_copy(tmp_path, "python_bounded", claim=claim))


# --- what each variant is expected to give ---------------------------------------


def test_target_expectation_comes_from_the_scenario(tmp_path):
    root = tmp_path / "root"
    reported_copy(root / "scenarios", "python_bounded", "pair")
    reported_copy(root / "fixes", "python_bounded", "pair")
    leaky, fixed = catalog.targets(root, ["pair"], "both")
    assert (leaky.expected, fixed.expected) == (expectation.VERSION_DEPENDENT, expectation.NO_LEAK)


# --- the matrix ---------------------------------------------------------------------


def record(pair: str, variant: str, word: str, reported=None) -> dict:
    return {
        "schema": 2,
        "expects": None,
        "requires": None,
        "pair": pair,
        "variant": variant,
        "kind": "growth",
        "verdict": word,
        "signals": ["rss"] if word == "leak" else [],
        "reported": reported,
        "metrics": {
            "rss_growth": dict.fromkeys(
                ("slope", "low", "high", "first_half", "second_half"),
                (900 if word == "leak" else 4) * 1024,
            )
            | {"p_increasing": 1e-4 if word == "leak" else 0.5}
        },
        "environment": {"tensorflow": None},
        "phase": None,
        "error": None,
        "seconds": 1.0,
    }


def test_matrix_accepts_either_verdict_of_a_version_dependent_scenario(tmp_path):
    old = [
        record("reported", "leaky", "leak", CLAIM),
        record("reported", "fixed", "no-leak", CLAIM),
        record("plain", "leaky", "leak"),
    ]
    new = [
        record("reported", "leaky", "no-leak", CLAIM),
        record("reported", "fixed", "leak", CLAIM),
        record("plain", "leaky", "no-leak"),
    ]
    store.write_records(tmp_path, "box", "2.13.1", old)
    store.write_records(tmp_path, "box", "2.21.0", new)
    found = matrix.matrix(tmp_path)
    cells = {(r["pair"], r["variant"]): r["cells"] for r in found["rows"]}
    assert (
        cells[("reported", "leaky")]["2.13.1"]["expected"]
        and cells[("reported", "leaky")]["2.21.0"]["expected"]
    )
    # the fix leaking is still a failure
    assert not cells[("reported", "fixed")]["2.21.0"]["expected"]
    # no claim: a scenario that stops leaking is news
    assert not cells[("plain", "leaky")]["2.21.0"]["expected"]
    lines = history_md.matrix_markdown(found).splitlines()
    assert "| reported | leaky | leak · rss +900 KiB/rep | no-leak · rss +4 KiB/rep |" in lines
    assert (
        "| reported | fixed | no-leak · rss +4 KiB/rep | **leak** (rss) · rss +900 KiB/rep |"
        in lines
    )
    assert "| plain | leaky | leak · rss +900 KiB/rep | **no-leak** · rss +4 KiB/rep |" in lines


# --- leakbench run: the exit code, and the claim in the record ---------------------


@pytest.mark.timeout(120)
def test_run_exits_zero_when_a_version_dependent_scenario_does_not_leak(tmp_path):
    root = tmp_path / "root"
    reported_copy(root / "scenarios", "python_bounded", "pair")
    reported_copy(root / "fixes", "python_bounded", "pair")
    result = invoke(
        "run",
        "pair",
        *FAST,
        "--format",
        "json",
        "--out",
        "out.jsonl",
        env={"LEAKBENCH_ROOT": root},
        cwd=tmp_path,
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.stderr
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [(r["variant"], r["verdict"], r["reported"]) for r in records] == [
        ("leaky", "no-leak", CLAIM),
        ("fixed", "no-leak", CLAIM),
    ]


@pytest.mark.timeout(120)
def test_run_still_fails_a_leaking_fix_of_a_version_dependent_pair(tmp_path):
    root = tmp_path / "root"
    reported_copy(root / "scenarios", "python_bounded", "pair")
    (root / "fixes").mkdir(parents=True)
    shutil.copy(DATA / "python_leak.py", root / "fixes" / "pair.py")
    result = invoke(
        "run",
        "pair",
        *FAST,
        "--variant",
        "fixed",
        env={"LEAKBENCH_ROOT": root},
        cwd=tmp_path,
        catch_exceptions=False,
    )
    assert result.exit_code == 1, result.stderr
