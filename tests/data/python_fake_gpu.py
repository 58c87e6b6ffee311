"""A stand-in for a GPU, for testing the engine's device dimension without one.

Importing this file puts a fake `tensorflow` module into sys.modules whose
tf.config answers like TensorFlow's documented API on a machine with one GPU:
list_physical_devices("GPU"), experimental.get_memory_info("GPU:0")
(current and peak bytes of a made-up allocator), reset_memory_stats and
get_device_details. Each repetition allocates GPU_BYTES_PER_REP on the fake
GPU and keeps it when `keep` is 1; with `keep` 0 it frees it again. With
`stats` 0 the fake GPU keeps no allocator statistics (get_memory_info
raises, as on a device that does not support it). This
tests leakbench's plumbing, not TensorFlow: the real GPU path is untested.
"""
import sys
import types

TITLE = "fake GPU tensors kept across repetitions"
SOURCE = "dangling references"
REPETITION = "allocate one tensor on the fake GPU"
KIND = "growth"
SIZE_PARAM = "gpu_bytes_per_rep"
PARAMS = {"gpu_bytes_per_rep": 1048576, "keep": 1, "stats": 1}
REQUIRES = "GPU"


class _Allocator:
    current = 0
    peak = 0
    stats = 1


def _get_memory_info(device):
    assert device == "GPU:0", device
    if not _Allocator.stats:
        raise ValueError("memory stats not supported for this device")
    return {"current": _Allocator.current, "peak": _Allocator.peak}


def _reset_memory_stats(device):
    assert device == "GPU:0", device
    _Allocator.peak = _Allocator.current


_experimental = types.SimpleNamespace(
    get_memory_info=_get_memory_info, reset_memory_stats=_reset_memory_stats,
    get_device_details=lambda device: {"device_name": "Fake GPU 0", "compute_capability": (8, 6)})
_config = types.SimpleNamespace(
    list_physical_devices=lambda kind=None: ["/physical_device:GPU:0"] if kind in (None, "GPU") else [],
    experimental=_experimental)
sys.modules["tensorflow"] = types.SimpleNamespace(__version__="0.0-fake", config=_config)


def setup(gpu_bytes_per_rep, keep, stats):
    _Allocator.stats = stats
    return {"bytes": gpu_bytes_per_rep, "keep": keep}


def repetition(state):
    _Allocator.current += state["bytes"]
    _Allocator.peak = max(_Allocator.peak, _Allocator.current + 4096)  # a short-lived workspace on top
    if not state["keep"]:
        _Allocator.current -= state["bytes"]
