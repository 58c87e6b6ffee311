"""Measure pairs with the engine on the installed TensorFlow and file their records:
what asv's setup_cache (benchmarks/) and scripts/record-version both call."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from leakbench import catalog
from leakbench import measure as measuring
from leakbench.analysis.schema import Record
from leakbench.history import pin, store


def record_pairs(
    root: Path,
    names: list[str],
    settings,
    results: Path | None = None,
    machine: str | None = None,
    flamegraph_dir: str | None = None,
) -> tuple[str | None, list[Record], Path | None]:
    """Measure each pair's leaky and fixed variant with the engine, check the pin, file the records.

    root: the checkout holding scenarios/ and fixes/; names: pair names (all
    pairs when empty, as catalog.targets). settings: a leakbench.measure.Settings
    (cap in bytes, timeout in seconds, per child run); each variant is measured
    at its scenario's parameters. flamegraph_dir: where memray draws the leaky
    variants' flame graphs (the fixed ones get none); None draws none.

    The records file is read before anything is measured (store.existing), so a
    file that cannot be kept whole stops the sweep before its first child. Each
    record is checked against the environment's pin (pin.installed_tf_version)
    as soon as it is measured, so a pin that did not hold stops the sweep at the
    first child and nothing of this call is filed. Then, when `results` is given,
    all the records are written at once (store.write_records) under `machine`, or
    under store.default_machine(results) when None (asv's name, unless its folder
    holds another machine's records).

    Returns (the pinned TensorFlow version, the records in measurement order,
    the records file written or None). Raises store.VersionError (no TensorFlow
    installed, a pin that did not hold, a machine name that is no folder, an
    unreadable records file) and contract.ContractError (an unknown pair, a
    scenario without the contract).
    """
    pinned = pin.installed_tf_version()
    pin.check_tf_version([], pinned)  # no TensorFlow installed: nothing to measure
    assert pinned  # check_tf_version raised otherwise
    if results is not None:
        machine = machine or store.default_machine(results)[0]
        store.existing(store.records_path(results, machine, pinned))
    records = []
    for target in catalog.targets(Path(root), list(names), "both"):
        drawn = flamegraph_dir if target.variant == "leaky" else None
        rec = measuring.measure(
            target,
            dict(target.scenario.params),
            replace(settings, flamegraph_dir=drawn) if drawn else settings,
        )
        pin.check_tf_version([rec], pinned)  # fail at the first child, not after all of them
        records.append(rec)
    if results is None:
        return pinned, records, None
    assert machine  # set above, where results was given
    return pinned, records, store.write_records(results, machine, pinned, records)
