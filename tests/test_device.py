"""The device dimension: the GPU allocator's bytes in use where
TensorFlow sees a GPU, null with a reason where it does not, and pairs that
REQUIRES a GPU skipped on a machine without one.

No machine this was written on has a GPU, so the GPU path itself is tested
with tests/data/python_fake_gpu.py, a fake `tensorflow` module that answers
tf.config's documented calls: that tests leakbench's plumbing (child,
probes, record, verdict), not TensorFlow. The real GPU path is untested.
Every run passes an explicit cap and timeout.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import invoke

from leakbench import catalog, cli, contract, expectation
from leakbench.analysis.judge import verdict
from leakbench.catalog import Target
from leakbench.engine import gpu
from leakbench.measure import measure
from leakbench.settings import Settings

DATA = Path(__file__).parent / "data"
KIB, MIB = 1 << 10, 1 << 20
SETTINGS = Settings(warmup=1, reps=6, heap_reps=0, cap_bytes=1 << 30, timeout_seconds=60)
NO_TF = "no GPU visible to TensorFlow (the scenario did not import TensorFlow)"


def measure_data(name: str, params: dict | None = None) -> dict:
    target = Target(contract.read_metadata(DATA / f"{name}.py"), "file")
    return measure(target, {**target.scenario.params, **(params or {})}, SETTINGS)


# --- no GPU: the fields are there, null, with the reason -------------------------------


@pytest.mark.timeout(60)
def test_without_a_gpu_the_gpu_fields_are_null_with_the_reason():
    rec = measure_data("python_leak")
    env = rec["environment"]
    assert (env["device"], env["gpu"], env["gpu_unavailable"]) == ("CPU", None, NO_TF)
    assert rec["metrics"]["gpu_memory_growth"] is None and rec["metrics"]["gpu_peak_bytes"] is None
    run_ = rec["runs"][0]
    assert (
        run_["series"]["gpu_current_bytes"] == [None] * SETTINGS.reps
        and run_["gpu_peak_bytes"] is None
    )
    assert rec["verdict"] == "leak" and "gpu" not in rec["signals"]
    json.dumps(rec, allow_nan=False)


# --- a GPU (fake): bytes in use per repetition, peak, name, the gpu signal -------------


@pytest.mark.timeout(60)
def test_gpu_allocator_growth_is_a_leak_on_the_gpu_signal():
    rec = measure_data("python_fake_gpu")
    env = rec["environment"]
    assert env["device"] == "GPU:0" and env["gpu_unavailable"] is None
    assert env["gpu"] == {
        "name": "Fake GPU 0",
        "compute_capability": "8.6",
        "driver": gpu.nvidia_driver(),
        "count": 1,
    }
    assert env["tensorflow"] == "0.0-fake"  # versions come from the module the scenario imported
    series = rec["runs"][0]["series"]["gpu_current_bytes"]
    # 1 warm-up, then one MiB kept per repetition
    assert series == [(2 + i) * MIB for i in range(SETTINGS.reps)]
    m = rec["metrics"]
    assert (
        m["gpu_memory_growth"]["slope"] == MIB
        and m["gpu_memory_growth"]["unit"] == "bytes/repetition"
    )
    # the peak since the reset before the measured repetitions
    assert m["gpu_peak_bytes"] == series[-1] + 4096
    assert rec["signals"] == ["gpu"] and rec["verdict"] == "leak"  # host memory did not move


@pytest.mark.timeout(60)
def test_bounded_gpu_use_is_no_leak():
    rec = measure_data("python_fake_gpu", {"keep": 0})
    assert rec["runs"][0]["series"]["gpu_current_bytes"] == [0] * SETTINGS.reps
    assert rec["metrics"]["gpu_memory_growth"]["slope"] == 0
    # the peak sees the tensor freed within the repetition
    assert rec["metrics"]["gpu_peak_bytes"] == MIB + 4096
    assert rec["verdict"] == "no-leak" and rec["signals"] == []


@pytest.mark.timeout(60)
def test_a_gpu_without_allocator_statistics_is_measured_without_gpu_readings():
    rec = measure_data("python_fake_gpu", {"stats": 0})
    # not an error: the host was measured
    assert rec["verdict"] == "no-leak", (rec["error"], rec["signals"])
    env = rec["environment"]
    assert env["device"] == "GPU:0" and env["gpu"]["name"] == "Fake GPU 0"
    assert env["gpu_unavailable"] == (
        "GPU memory statistics unavailable (ValueError: memory stats not supported for this device)"
    )
    assert rec["runs"][0]["series"]["gpu_current_bytes"] == [None] * SETTINGS.reps
    assert rec["metrics"]["gpu_memory_growth"] is None and rec["metrics"]["gpu_peak_bytes"] is None


def test_gpu_signal_threshold():
    def trend(slope):
        return {
            "slope": slope,
            "low": slope,
            "high": slope,
            "p_increasing": 0.0001,
            "first_half": slope,
            "second_half": slope,
        }

    assert verdict.decide(["ok"], {"gpu_memory_growth": trend(verdict.GPU_SLOPE_MIN)}) == (
        "leak",
        ["gpu"],
    )
    assert verdict.decide(["ok"], {"gpu_memory_growth": trend(verdict.GPU_SLOPE_MIN / 2)}) == (
        "no-leak",
        [],
    )
    assert verdict.decide(["ok"], {"gpu_memory_growth": None}) == ("no-leak", [])


# --- REQUIRES = "GPU" without one: skipped, not an error, not a leak --------------------


@pytest.mark.timeout(60)
def test_requires_gpu_without_one_is_skipped_before_setup():
    rec = measure_data("python_requires_gpu")  # its setup raises: it must never run
    assert rec["verdict"] == "skipped" and rec["skip_reason"] == NO_TF
    assert (rec["phase"], rec["error"], rec["signals"], rec["metrics"]) == (None, None, [], {})
    assert [r["status"] for r in rec["runs"]] == ["skipped"]
    assert rec["environment"]["gpu_unavailable"] == NO_TF
    for variant in ("leaky", "fixed"):  # skipped passes only where the contract REQUIRES the device
        assert expectation.for_variant(variant, requires="GPU").accepts(rec)
        assert not expectation.for_variant(variant).accepts(rec)
    assert cli.check_exit_code(rec) == 0
    json.dumps(rec, allow_nan=False)


@pytest.mark.timeout(60)
def test_run_reports_a_skip_and_exits_0(tmp_path):
    out = tmp_path / "records.jsonl"
    result = invoke(
        "run",
        DATA / "python_requires_gpu.py",
        "--cap",
        "1GiB",
        "--timeout",
        "60",
        "--format",
        "json",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    assert f"python_requires_gpu (file): skipped: {NO_TF}" in result.stderr
    assert "skipped" in result.stdout  # the table's verdict column
    assert json.loads(out.read_text())["verdict"] == "skipped"


def test_requires_is_checked_by_the_contract(tmp_path):
    assert contract.read_metadata(DATA / "python_requires_gpu.py").requires == "GPU"
    assert contract.read_metadata(DATA / "python_leak.py").requires is None
    bad = tmp_path / "bad.py"
    bad.write_text(
        (DATA / "python_requires_gpu.py")
        .read_text()
        .replace('REQUIRES = "GPU"', 'REQUIRES = "TPU"')
    )
    with pytest.raises(contract.ContractError, match="REQUIRES must be one of"):
        contract.read_metadata(bad)


# --- the GPU pair on this CPU-only machine ------------------------------------------------


@pytest.mark.tf
@pytest.mark.timeout(240)
def test_gpu_pair_is_skipped_without_a_gpu():
    targets = catalog.targets(catalog.find_root(), ["kept_device_batches"], "both")
    assert [t.scenario.requires for t in targets] == ["GPU", "GPU"]
    for target in targets:
        rec = measure(
            target, target.scenario.params, Settings(cap_bytes=2 << 30, timeout_seconds=120)
        )
        assert rec["verdict"] == "skipped", (rec["verdict"], rec["error"])
        assert rec["skip_reason"] == gpu.NO_GPU == "no GPU visible to TensorFlow"
        env = rec["environment"]
        assert env["tensorflow"] and env["device"] == "CPU" and env["gpu"] is None
        assert target.expected.accepts(rec)


# --- leakbench check and the pytest plugin ---------------------------------------------------


def test_check_hints_at_kept_device_tensors():
    from leakbench.check import pipeline as check

    rec = {
        "verdict": "leak",
        "signals": ["gpu"],
        "metrics": {"gpu_memory_growth": {"slope": 8.0 * MIB}},
    }
    found = {"types": [], "attribution": {}, "top_stacks": []}
    (hint,) = check.hints(rec, found)
    assert hint.startswith(
        "the GPU allocator's bytes in use grew 8.0 MiB/repetition: likely device tensors kept"
    )


@pytest.mark.timeout(60)
def test_assert_no_leak_skips_a_scenario_that_needs_a_gpu():
    from leakbench.pytest_plugin import assert_no_leak

    with pytest.raises(pytest.skip.Exception, match="no GPU visible to TensorFlow"):
        assert_no_leak(
            str(DATA / "python_requires_gpu.py"), cap="1GiB", timeout=60, reps=5, heap_reps=0
        )
