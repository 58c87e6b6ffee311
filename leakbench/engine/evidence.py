"""The child's evidence readings, outside every sampled series (leakbench.engine.child runs them
after the heap pass): the memory per tf.data stage on one fresh iterator (buffers.read_stages),
then what keeps the type that grew most alive (chain.reference_chain: it unfreezes the import's
objects). A reading that fails is {"na": why}: evidence never fails a measurement.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from leakbench.engine import buffers
from leakbench.engine import chain as references


def read(
    send: Callable[..., None],
    state,
    type_growth: list[dict],
    candidates: list,
    module,
    extra: dict | None,
    seconds: dict[str, float],
) -> tuple[dict, dict]:
    """The result's "stages" and "reference_chain" for the pipeline's `state`, each begun with a
    progress message (`send`, the child's channel) and timed into `seconds`. type_growth,
    candidates: pytypes.type_growth's and references.new_instances' (candidates consumed). extra:
    check's diagnostics (its target's kind and the attribution per tf.data node), filled here;
    None outside check."""
    send(progress="stages")
    start = time.perf_counter()
    readings = _or_na(buffers.read_stages, state)
    stages = buffers.stages(readings)
    seconds["stages"] = time.perf_counter() - start
    if extra is not None:
        extra["target_kind"] = getattr(module, "kind", None)
        extra["attribution"] = buffers.attribution_from(readings)
    del readings
    send(progress="reference chain")
    start = time.perf_counter()
    chain = _or_na(references.reference_chain, type_growth, state, candidates)
    seconds["reference_chain"] = time.perf_counter() - start
    return stages, chain


def _or_na(read, *args) -> dict:
    """read(*args), or {"na": its exception in one line}: evidence never fails a measurement."""
    try:
        return read(*args)
    except Exception as err:  # noqa: BLE001
        return {
            "na": (
                f"{read.__name__} failed: {type(err).__name__}: "
                f"{str(err).splitlines()[0][:200] if str(err) else ''}"
            )
        }
