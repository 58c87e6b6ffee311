"""What the measured child (leakbench.engine.child) does and reads once the scenario is imported:
TensorFlow's one-off first tf.data pipeline, paid before any baseline, and the versions it runs.
"""

from __future__ import annotations

import sys


def first_tf_data_use() -> None:
    """Pay TensorFlow's one-off cost of the first tf.data pipeline before any baseline.

    The first pipeline a process iterates loads what TensorFlow defers to first
    use; a second pipeline costs nothing more. That one-off RSS (tens of MiB on
    the nightly: docs/measurements.md, "TensorFlow") would otherwise sit in every
    peak above baseline and, being the same at every size, pull k in peak ∝ size^k
    down. Only where the scenario imported TensorFlow.
    """
    tf = sys.modules.get("tensorflow")
    if tf is None or not hasattr(tf, "data"):
        return
    for _ in tf.data.Dataset.range(4).map(lambda x: x + 1).shuffle(4).batch(2).prefetch(1):
        pass


def versions() -> dict:
    """The versions the child runs: Python's, and TensorFlow's and its commit where the scenario
    imported it (the device message's and the result's "versions")."""
    found: dict[str, str | None] = {"python": sys.version.split()[0]}
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        found["tensorflow"] = getattr(tf, "__version__", "unknown")
        # the build's commit (e.g. "v2.16.1-0-g5bc9d26649c"): what bisect names a boundary by
        found["tensorflow_git"] = getattr(getattr(tf, "version", None), "GIT_VERSION", None)
    return found
