"""The GPU, through TensorFlow's documented API: tf.config.list_physical_devices,
tf.config.experimental.get_memory_info / reset_memory_stats / get_device_details,
and the driver from nvidia-smi.

TensorFlow is only touched if the scenario imported it (sys.modules), never
imported here. Untested on a GPU: no machine this was written on has one;
tests/test_device.py drives it with a fake tf module.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from types import ModuleType

NO_GPU = "no GPU visible to TensorFlow"


@dataclass(frozen=True)
class Gpu:
    """The first GPU TensorFlow sees ("GPU:0"), read through tf.config.experimental."""

    tf: ModuleType  # the tensorflow module the scenario imported
    device: str = "GPU:0"

    @staticmethod
    def find() -> tuple[Gpu | None, str | None]:
        """(Gpu, None) where TensorFlow sees a GPU, else (None, why not).

        Only looks if the scenario imported TensorFlow; listing physical
        devices does not initialise them, so setup may still configure them
        (tf.config.experimental.set_memory_growth).
        """
        tf = sys.modules.get("tensorflow")
        if tf is None:
            return None, f"{NO_GPU} (the scenario did not import TensorFlow)"
        try:
            found = tf.config.list_physical_devices("GPU")
        except Exception as err:  # a broken CUDA install must not end the measurement
            return None, f"{NO_GPU} (list_physical_devices: {err})"
        return (Gpu(tf), None) if found else (None, NO_GPU)

    def current_bytes(self) -> int:
        """Bytes the GPU allocator has in use now (live tensors), get_memory_info()["current"]."""
        return int(self.tf.config.experimental.get_memory_info(self.device)["current"])

    def peak_bytes(self) -> int:
        """The allocator's peak bytes in use since the last reset_peak()."""
        return int(self.tf.config.experimental.get_memory_info(self.device)["peak"])

    def reset_peak(self) -> None:
        """Start a new peak at the current bytes in use (reset_memory_stats)."""
        self.tf.config.experimental.reset_memory_stats(self.device)

    def start(self) -> str | None:
        """Reset the peak and read the bytes in use once: None if that works, else why not.

        A device TensorFlow lists as a GPU may not keep allocator statistics
        (get_memory_info raises there): the measurement then goes on without
        GPU readings instead of failing.
        """
        try:
            self.reset_peak()
            self.current_bytes()
        except Exception as err:
            return f"GPU memory statistics unavailable ({type(err).__name__}: {err})"
        return None

    def details(self) -> dict:
        """Name, compute capability (get_device_details),
        driver (nvidia-smi, if installed), count."""
        gpus = self.tf.config.list_physical_devices("GPU")
        try:
            info = self.tf.config.experimental.get_device_details(gpus[0])
        except Exception:
            info = {}
        capability = info.get("compute_capability")
        return {
            "name": info.get("device_name"),
            "compute_capability": ".".join(map(str, capability)) if capability else None,
            "driver": nvidia_driver(),
            "count": len(gpus),
        }


def nvidia_driver() -> str | None:
    """The NVIDIA driver version from nvidia-smi; None without nvidia-smi or when it fails."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.strip().splitlines()
    return lines[0].strip() if done.returncode == 0 and lines else None
