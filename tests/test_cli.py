"""The command line: bad input (exit 2, one line on stderr), runs of a
pure-Python pair (through the installed entry point, and in process), JSON lines, exit codes.

LEAKBENCH_ROOT points at a temporary checkout whose scenarios/ and fixes/ hold
copies of tests/data/ files, so no TensorFlow scenario is ever selected.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import invoke, pair_checkout, refused

DATA = Path(__file__).parent / "data"
LEAKBENCH = Path(sys.executable).with_name("leakbench")
SAFE = ["--cap", "1GiB", "--timeout", "60"]  # every run here is capped and timed
FAST = [*SAFE, "--warmup", "1", "--reps", "6", "--heap-reps", "5"]


@pytest.fixture
def root(tmp_path, monkeypatch):
    root = pair_checkout(tmp_path)
    monkeypatch.setenv("LEAKBENCH_ROOT", str(root))
    monkeypatch.chdir(tmp_path)
    return root


# --- bad input ------------------------------------------------------------------


def test_unknown_scenario_name(root):
    refused(
        invoke("run", "no_such_pair", *SAFE), "unknown scenario 'no_such_pair'", "known: pyleak"
    )


def test_file_without_the_contract_is_not_executed(root, tmp_path):
    marker = tmp_path / "executed"
    plain = tmp_path / "plain.py"
    plain.write_text(f"open({str(marker)!r}, 'w').close()\nprint('hello')\n")
    refused(
        invoke("run", str(plain), *SAFE),
        str(plain),
        "not a leakbench scenario",
        "TITLE",
        "setup()",
    )
    assert not marker.exists()  # metadata is read with ast, the file never ran


def test_file_that_does_not_parse(root, tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("def setup(:\n")
    refused(invoke("run", str(broken), *SAFE), "does not parse")


def test_error_text_with_brackets_is_printed_verbatim(root, tmp_path):
    """rich would read '[scenario]' in a path as a style tag and drop it."""
    plain = tmp_path / "not_a[scenario].py"
    plain.write_text("x = 1\n")
    refused(invoke("run", str(plain), *SAFE), "not_a[scenario].py")


def test_missing_file(root, tmp_path):
    refused(invoke("run", str(tmp_path / "nowhere.py"), *SAFE), "no scenario file at")


def test_unknown_param(root):
    refused(
        invoke("run", "pyleak", *SAFE, "--param", "unknown=1"),
        "--param unknown",
        "no selected scenario has such a parameter",
    )


def test_param_not_a_number(root):
    refused(
        invoke("run", "pyleak", *SAFE, "--param", "bytes_per_rep=lots"),
        "bytes_per_rep='lots'",
        "is not int",
    )


def test_param_float_for_int(root):
    refused(invoke("run", "pyleak", *SAFE, "--param", "bytes_per_rep=1.5"), "is not int")


def test_param_not_positive(root):
    refused(invoke("run", "pyleak", *SAFE, "--param", "bytes_per_rep=0"), "must be positive")


def test_param_without_equals(root):
    refused(invoke("run", "pyleak", *SAFE, "--param", "bytes_per_rep"), "is not NAME=VALUE")


@pytest.mark.parametrize("cap", ["nonsense", "12 parsecs", "-1GiB", "0", "GiB", ""])
def test_bad_cap(root, cap):
    refused(invoke("run", "pyleak", "--cap", cap, "--timeout", "60"), "--cap")


@pytest.mark.parametrize("scales", ["0,x", "1,x", "0,1", "1,-2", "", "1,,2", "4,2,1", "1,1", "4"])
def test_bad_scales(root, scales):
    refused(invoke("run", "pyleak", *SAFE, "--scales", scales), "--scales")


def test_out_into_missing_directory(root, tmp_path):
    target = tmp_path / "no" / "such" / "dir" / "out.jsonl"
    refused(
        invoke("run", "pyleak", *SAFE, "--format", "json", "--out", str(target)),
        "--out",
        "does not exist",
    )
    assert not target.parent.exists()


@pytest.mark.parametrize("heap_reps", ["1", "3", "4"])
def test_heap_reps_too_few_for_a_trend(root, heap_reps):
    """Fewer than 5 points can never pass the trend test (1/4! > TREND_P_MAX)."""
    refused(invoke("run", "pyleak", *SAFE, "--heap-reps", heap_reps), "--heap-reps")


@pytest.mark.parametrize("reps", ["3", "4"])
def test_reps_too_few_for_a_trend(root, reps):
    result = invoke("run", "pyleak", *SAFE, "--reps", reps)
    assert result.exit_code == 2  # click's own usage error
    assert "--reps" in result.stderr


@pytest.mark.parametrize("args", [["--variant", "nope"], ["--timeout", "0"], ["--no-such-option"]])
def test_click_usage_errors_are_one_line(root, args):
    refused(invoke("run", "pyleak", *SAFE, *args))


def test_root_without_scenarios(tmp_path, monkeypatch):
    monkeypatch.setenv("LEAKBENCH_ROOT", str(tmp_path))
    refused(invoke("run", "pyleak", *SAFE), "has no scenarios/ directory")


def test_tensorflow_not_installed(root, monkeypatch):
    """A scenario mentioning tensorflow, where tensorflow cannot be found: nothing runs."""
    # The word is enough for the CLI's check; the file never imports it, so a
    # broken check would run a harmless scenario, not TensorFlow.
    tf_file = root / "scenarios" / "tf_pair.py"
    tf_file.write_text(
        (DATA / "python_bounded.py").read_text()
        + "\n\ndef _unused():\n    import tensorflow  # noqa: F401  (never called)\n"
    )
    shutil.copy(tf_file, root / "fixes" / "tf_pair.py")
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a, **k: None if name == "tensorflow" else real(name, *a, **k),
    )
    line = refused(invoke("run", "tf_pair", *SAFE), "TensorFlow is not installed")
    assert "leakbench[tf]" in line


def test_tensorflow_check_ignores_pure_python_scenarios(root, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a, **k: None if name == "tensorflow" else real(name, *a, **k),
    )
    result = invoke("run", "pyleak", *FAST)
    assert result.exit_code == 0, result.output


def test_list(root):
    result = invoke("list", env={"COLUMNS": "250"})  # a wide terminal
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    # fits 120 columns however wide the terminal
    assert max(map(len, lines)) <= 120, max(lines, key=len)
    at = [i for i, line in enumerate(lines) if "pyleak" in line]
    assert len(at) == 1  # one row per pair, not per variant: the size parameter on the line below
    row = lines[at[0]] + " " + lines[at[0] + 1]
    for cell in (
        "growth",
        "stateful functions",
        "bytes_per_rep=1048576",
        "bytes appended to a global list",
    ):
        assert cell in row, cell
    assert result.stderr == ""


# --- real runs: through the installed entry point, and in process (conftest.invoke) ------


def entry_point(args: list[str], root: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "LEAKBENCH_ROOT": str(root)}
    return subprocess.run(
        [str(LEAKBENCH), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_entry_point_is_installed():
    assert LEAKBENCH.is_file() and os.access(LEAKBENCH, os.X_OK)


@pytest.mark.timeout(120)
def test_run_pair_prints_table_and_writes_json_records(tmp_path):
    root = pair_checkout(tmp_path)
    out = tmp_path / "out.jsonl"
    json_out = ["--format", "json", "--out", "out.jsonl"]
    first = entry_point(["run", *FAST, *json_out], root, tmp_path)
    assert first.returncode == 0, first.stderr
    assert "Traceback" not in first.stderr
    assert "leakbench: memory per scenario variant" in first.stdout
    rows = [line for line in first.stdout.splitlines() if "pyleak" in line]
    assert len(rows) == 2
    assert "leaky" in rows[0] and "leak" in rows[0].split("leaky", 1)[1]
    assert "fixed" in rows[1] and "no-leak" in rows[1]

    lines = out.read_text().splitlines()
    assert len(lines) == 2
    records = [json.loads(line) for line in lines]
    assert [(r["pair"], r["variant"], r["verdict"]) for r in records] == [
        ("pyleak", "leaky", "leak"),
        ("pyleak", "fixed", "no-leak"),
    ]
    assert all(r["settings"]["cap_bytes"] == 1 << 30 for r in records)
    assert records[0]["path"] == str(root / "scenarios" / "pyleak.py")
    assert records[1]["path"] == str(root / "fixes" / "pyleak.py")

    second = entry_point(["run", *FAST, *json_out], root, tmp_path)
    assert second.returncode == 0, second.stderr
    again = out.read_text().splitlines()
    assert len(again) == 2  # replaced whole: --out never appends
    assert [json.loads(line)["verdict"] for line in again] == ["leak", "no-leak"]


@pytest.mark.timeout(120)
def test_fixed_variant_that_leaks_exits_one(tmp_path):
    root = pair_checkout(tmp_path, leaky="python_leak", fixed="python_leak")
    result = invoke(
        "run",
        "pyleak",
        *FAST,
        "--format",
        "json",
        "--out",
        "out.jsonl",
        env={"LEAKBENCH_ROOT": root},
        cwd=tmp_path,
        catch_exceptions=False,
    )
    assert result.exit_code == 1, result.stderr
    verdicts = [
        json.loads(line)["verdict"] for line in (tmp_path / "out.jsonl").read_text().splitlines()
    ]
    # the leaky one was as expected: the fixed one alone made it 1
    assert verdicts == ["leak", "leak"]


@pytest.mark.timeout(120)
def test_swapped_pair_exits_one(tmp_path):
    root = pair_checkout(tmp_path, leaky="python_bounded", fixed="python_leak")
    result = invoke(
        "run",
        *FAST,
        "--variant",
        "both",
        env={"LEAKBENCH_ROOT": root},
        cwd=tmp_path,
        catch_exceptions=False,
    )
    assert result.exit_code == 1, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.timeout(120)
def test_over_cap_leaky_variant_is_as_expected(tmp_path):
    """A leak cut short by the cap is still the leak: exit 0 for the leaky variant alone."""
    root = pair_checkout(tmp_path, leaky="python_over_cap", fixed="python_bounded")
    result = invoke(
        "run",
        "pyleak",
        "--variant",
        "leaky",
        "--cap",
        "300MiB",
        "--timeout",
        "60",
        "--warmup",
        "1",
        "--reps",
        "50",
        "--heap-reps",
        "0",
        env={"LEAKBENCH_ROOT": root},
        cwd=tmp_path,
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.stderr
    assert "over-cap" in result.stdout


@pytest.mark.timeout(120)
def test_error_in_scenario_exits_three_with_its_message(tmp_path):
    """A measurement that could not run is a failure (leakbench.cli.exits.FAILED), not a verdict."""
    root = pair_checkout(tmp_path, leaky="python_raises", fixed="python_bounded")
    result = invoke(
        "run",
        "pyleak",
        "--variant",
        "leaky",
        *FAST,
        env={"LEAKBENCH_ROOT": root},
        cwd=tmp_path,
        catch_exceptions=False,
    )
    assert result.exit_code == 3
    assert (
        "pyleak (leaky): error in warm-up: RuntimeError: scenario exploded with code 42"
        in result.stderr
    )
    assert "Traceback" not in result.stderr


def test_scales_out_of_order_are_refused_before_anything_runs(root):
    """4,2,1 used to be accepted, and a peak pair then read no-leak (its largest size first)."""
    message = refused(invoke("run", "pyleak", *SAFE, "--scales", "4,2,1"), "--scales")
    assert "increasing" in message


@pytest.mark.parametrize("target", ["/etc/passwd:x", "/etc/passwd"])
def test_check_of_a_file_that_is_not_python_is_one_line(target):
    """/etc/passwd:x used to end in AttributeError: 'NoneType' object has no attribute 'loader'."""
    refused(invoke("check", target, *SAFE), ".py")


@pytest.mark.parametrize(
    "args, option",
    [
        (["run", "pyleak", *SAFE, "--out", "/proc/leakbench-x.md"], "--out"),
        (["run", "pyleak", *SAFE, "--format", "json", "--out", "/proc/leakbench-x.jsonl"], "--out"),
        (["run", "pyleak", *SAFE, "--out", "/nonexistent-leakbench/x.jsonl"], "--out"),
        (["repeat", "pyleak", *SAFE, "--out", "/proc/leakbench-x.json"], "--out"),
        (["repeat", "pyleak", *SAFE, "--out", "/nonexistent-leakbench/x.json"], "--out"),
        (
            [
                "calibrate",
                "--holders",
                "python",
                "--sizes",
                "0",
                "--runs",
                "1",
                "--out",
                "/proc/leakbench-x.json",
            ],
            "--out",
        ),
        (
            [
                "check",
                "tests/data/check_python.py:bounded",
                *SAFE,
                "--html",
                "/proc/leakbench-x.html",
            ],
            "--html",
        ),
    ],
)
def test_an_output_that_cannot_be_written_is_refused_before_measuring(root, args, option):
    """These used to measure first and end in a traceback (run --out, repeat and
    calibrate --out), or to create a mistyped folder and measure into it (repeat --out)."""
    refused(invoke(*args), option)
    assert not Path("/nonexistent-leakbench").exists()


def test_only_an_import_makes_a_file_need_tensorflow(tmp_path, monkeypatch):
    """A pure-Python scenario that cites a TensorFlow issue in its docstring runs without
    TensorFlow; one that imports it (even inside a function) is refused in one line."""
    from leakbench import scenario_source
    from leakbench.cli import base

    cites = tmp_path / "cites.py"
    cites.write_text(
        '"""Like tensorflow/tensorflow#37653, in plain '
        'Python (import tensorflow not needed)."""\nX = 1\n'
    )
    inside = tmp_path / "inside.py"
    inside.write_text("def setup():\n    from tensorflow import data\n    return data\n")
    plain = tmp_path / "plain.py"
    plain.write_text("import tensorflow_datasets_helper as t  # another package\n")
    assert not scenario_source.imports_tensorflow(cites) and not scenario_source.imports_tensorflow(
        plain
    )
    assert scenario_source.imports_tensorflow(inside)
    monkeypatch.setattr(base.importlib.util, "find_spec", lambda name: None)
    python_leak = Path(__file__).parent / "data" / "python_leak.py"
    assert base.targets_of([str(python_leak)], "both")  # no TensorFlow needed: no refusal


# --- numbers: finite, and sizes in whole bytes --------------------------------------
BIG = "1" * 309  # past 1e308: float() of it with a unit, or times a scale, is inf
PAIR = ["pyleak", "--cap", "1GiB"]
BISECT = ["bisect", "pyleak", "--good", "2.15.1", "--bad", "2.16.2"]  # refused before any network


@pytest.mark.parametrize(
    "args, option",
    [
        (["run", *PAIR, "--timeout", "nan"], "--timeout"),  # a deadline that never comes
        (["run", *PAIR, "--timeout", "inf"], "--timeout"),
        (["run", *PAIR, "--timeout", "-inf"], "--timeout"),
        (["run", *SAFE, "pyleak", "--teardown-timeout", "nan"], "--teardown-timeout"),
        (["run", *SAFE, "pyleak", "--teardown-timeout", "inf"], "--teardown-timeout"),
        (
            ["check", "tests/data/check_python.py:bounded", "--cap", "1GiB", "--timeout", "nan"],
            "--timeout",
        ),
        (["repeat", *PAIR, "--timeout", "inf"], "--timeout"),
        (["calibrate", "--holders", "python", "--timeout", "nan"], "--timeout"),
        ([*BISECT, "--timeout", "inf"], "--timeout"),
        (["compare", "2.13.1", "2.21.0", "--factor", "nan"], "--factor"),
        (["compare", "2.13.1", "2.21.0", "--factor", "inf"], "--factor"),
        (
            ["run", "pyleak", *SAFE, "--scales", "1,inf"],
            "--scales",
        ),  # crashed in leakbench/measure.py
        (["run", "pyleak", *SAFE, "--scales", "1,nan"], "--scales"),
        (["repeat", "pyleak", *SAFE, "--scales", "nan,4"], "--scales"),
        # truncated to 0: the default cap
        (["run", "pyleak", "--cap", "0.5", "--timeout", "60"], "--cap"),
        (["run", "pyleak", "--cap", "1.5", "--timeout", "60"], "--cap"),
        (["run", "pyleak", "--cap", BIG, "--timeout", "60"], "--cap"),
        (["run", "pyleak", "--cap", BIG + "GiB", "--timeout", "60"], "--cap"),  # OverflowError
        (["calibrate", "--holders", "python", "--cap", "0.5"], "--cap"),
        (["calibrate", "--holders", "python", "--cap", BIG + "GiB"], "--cap"),
        (["calibrate", "--holders", "python", "--sizes", "0,0.5"], "--sizes"),  # became the control
        (["calibrate", "--holders", "python", "--sizes", f"0,{BIG}KiB"], "--sizes"),
        ([*BISECT, "--cap", "0.5"], "--cap"),
        ([*BISECT, "--disk-budget", BIG + "GiB"], "--disk-budget"),
    ],
)
def test_numbers_must_be_finite_and_sizes_whole_bytes(root, args, option):
    refused(invoke(*args), option)


@pytest.mark.parametrize(
    "param",
    [
        "rep_seconds=nan",
        "rep_seconds=inf",
        "rep_seconds=-inf",
        f"size_bytes={BIG}",
        f"size_bytes={'1' * 400}",
    ],
)
def test_param_must_be_finite_even_times_a_scale(tmp_path, monkeypatch, param):
    """nan and inf reached the scenario; 309 digits times
    the scale 4 crashed in leakbench/measure.py."""
    monkeypatch.setenv(
        "LEAKBENCH_ROOT",
        str(pair_checkout(tmp_path, "python_peak", "python_peak_bounded", "pypeak")),
    )
    monkeypatch.chdir(tmp_path)
    refused(invoke("run", "pypeak", *SAFE, "--param", param), "pypeak")


@pytest.mark.parametrize(
    "text, size",
    [
        ("4GiB", 4 << 30),
        ("512M", 512 << 20),
        ("1.5KiB", 1536),
        (" 2 MiB ", 2 << 20),
        ("1", 1),
        (str((1 << 63) - 1), (1 << 63) - 1),
    ],
)
def test_sizes_are_read_exactly(text, size):
    from leakbench.units import parse_size

    assert parse_size(text) == size


@pytest.mark.parametrize(
    "text",
    [
        "0",
        "0.5",
        "1.5",
        "0.0GiB",
        "1.0000000000000000000000000001KiB",
        str(1 << 63),
        BIG,
        BIG + "GiB",
        "0" * 5000 + "1",
        "nan",
        "inf",
        "",
    ],
)
def test_a_size_is_a_whole_number_of_bytes_from_1_to_8_eib(text):
    from leakbench.units import parse_size

    with pytest.raises(ValueError):
        parse_size(text)


@pytest.mark.parametrize("scales", [(1, float("nan")), (1, float("inf")), (float("nan"), 4)])
def test_settings_refuse_scales_that_are_not_finite(scales):
    from leakbench.settings import Settings

    with pytest.raises(ValueError, match="finite"):
        Settings(scales=scales)


def test_format_bytes_is_the_one_byte_formatter():
    from leakbench.units import GIB, KIB, MIB, format_bytes

    assert [format_bytes(n, whole=True) for n in (256 * MIB, 4 * GIB, 16 * KIB, 1536, 100, 0)] == [
        "256 MiB",
        "4 GiB",
        "16 KiB",
        "1.5 KiB",
        "100 B",
        "0 B",
    ]  # sizes as labels
    assert [format_bytes(n) for n in (8 * MIB, 1.5 * GIB, 3 * KIB + 5, None)] == [
        "8.0 MiB",
        "1.5 GiB",
        "3 KiB",
        "—",
    ]
    assert (
        format_bytes(268_435_457, unit=1) == "268,435,457 B"
        and format_bytes(GIB, unit=GIB) == "1.0 GiB"
    )
    assert format_bytes(-0.2 * MIB, unit=MIB, digits=0, label=False) == "0"  # never "-0"
    assert format_bytes(1536.0, unit=KIB, label=False) == "1.5"


def test_markdown_table_is_the_one_table_builder():
    from leakbench.reporters import markdown_table

    assert markdown_table(["a", "n"], [["x", "1"], ["y", "22"]], "lr") == [
        "| a | n |",
        "|---|---:|",
        "| x | 1 |",
        "| y | 22 |",
    ]
    assert markdown_table(["a"], [])[1] == "|---|"
    with pytest.raises(ValueError):
        markdown_table(["a", "b"], [], "l")
