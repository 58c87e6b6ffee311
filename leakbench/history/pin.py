"""The TensorFlow pin: which release an environment installed, and whether every
measurement used it. Nothing here imports TensorFlow: the version an
environment asked for is what pip reports (importlib.metadata), the version a
measurement used is what its child saw (record["environment"]["tensorflow"]).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import metadata
from typing import Any

from leakbench.history.builds import same_build
from leakbench.history.store import VersionError

# Distributions that provide the `tensorflow` module, in the order we ask pip. The
# nightlies (tf-nightly, tf-nightly-cpu) come after the releases: an environment has one.
TF_DISTRIBUTIONS = (
    "tensorflow-cpu",
    "tensorflow",
    "tensorflow-intel",
    "tensorflow-macos",
    "tf-nightly-cpu",
    "tf-nightly",
)


def installed_tf_version() -> str | None:
    """The TensorFlow version pip installed in this
    interpreter's environment (no import), or None."""
    for dist in TF_DISTRIBUTIONS:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def check_tf_version(records: Sequence[Mapping[str, Any]], expected: str | None) -> None:
    """Raise VersionError unless every record's TensorFlow is `expected`.

    `expected` is the environment's pin (installed_tf_version()); a record's
    version is the `tf.__version__` its child process imported. A mismatch
    means pip replaced the pin, or the child ran another interpreter: every
    number measured would be filed under the wrong release.
    """
    if not expected:
        raise VersionError(
            "no TensorFlow distribution installed in this environment "
            f"(looked for {', '.join(TF_DISTRIBUTIONS)})"
        )
    for rec in records:
        seen = rec["environment"].get("tensorflow")
        if seen is None and rec["verdict"] in ("error", "hang", "over-cap"):
            continue  # the child died before reporting its versions; its verdict says so
        if not same_build(seen, expected):
            raise VersionError(
                f"{rec['pair']} ({rec['variant']}) imported TensorFlow {seen}, "
                f"but this environment pins {expected}: the pin did not hold"
            )
