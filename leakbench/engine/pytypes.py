"""Which Python types grew: evidence read inside the measured child, as JSON data (the parent
turns it into text and hints, leakbench.check.pipeline).

`type_counts()`: Python objects tracked by the collector, by type (qualified name). Taken at the
baseline, after half the measured repetitions (`middle_reps`) and after them all: `type_growth`
says which types grew by the verdict's rule (a one-off jump does not count). Its cost is a walk of
the collector's objects (docs/measurements.md, "What the evidence costs"). The child's other
readings have modules of their own: memory per tf.data stage (leakbench.engine.buffers), the
largest live allocations by stack (leakbench.engine.frames.heap_stacks) and what keeps the type
that grew most alive (leakbench.engine.chain.reference_chain).
"""

from __future__ import annotations

import collections
import gc

# The verdict's rule (verdict.rate is metrics.rate), from the base registry: the measured child
# imports this module and nothing of the analysis (docs/layout.md; test_evidence checks that scipy
# stays out of the child).
from leakbench.metrics import rate


def type_counts(into: dict | None = None) -> dict:
    """Live objects tracked by the garbage collector, counted by type name.

    into: a dict to fill in place (every count set anew) and return, rather than a new dict: the
    middle reading, taken between two samples, then leaves nothing new alive in the samples after it
    (the child makes that dict with the baseline's counts, before the first sample).
    """
    gc.collect()
    counts = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
    if into is None:
        return dict(counts)
    into.update(dict.fromkeys(into, 0))
    into.update(counts)
    return into


TOP_TYPES = 8
TYPE_GROWTH_MIN = 3.0  # objects per repetition: below metrics.OBJECT_SLOPE_MIN, to show what moved


def middle_reps(reps: int) -> int:
    """After how many of `reps` measured repetitions the
    middle type count is taken (0: none, reps < 2)."""
    return reps // 2 if reps >= 2 else 0


def type_rate(before: int, middle: int | None, after: int, reps: int) -> float:
    """A type's growth in objects per repetition by the verdict's rule (verdict.rate): the least of
    its rate over the `reps` repetitions and over each half (baseline to middle, middle to end, the
    middle taken after middle_reps(reps)). A one-off jump lands in one half, so it reads ~0; a
    steady climb reads its rate. Without a middle (reps < 2), the whole rate."""
    whole = (after - before) / reps
    half = middle_reps(reps)
    if middle is None or not half:
        return whole
    return rate(
        {
            "slope": whole,
            "first_half": (middle - before) / half,
            "second_half": (after - middle) / (reps - half),
        }
    )


def type_growth(
    before: dict | None, middle: dict | None, after: dict | None, reps: int
) -> list[dict]:
    """Python types whose live count grew by the verdict's
    rule, most per repetition first (at most TOP_TYPES).

    before, middle, after: type_counts() at the baseline, after middle_reps(reps) and after `reps`
    measured repetitions. A type is listed when its `type_rate` reaches TYPE_GROWTH_MIN. Each entry:
    type, per_repetition (type_rate, objects/repetition), baseline, middle (None without one), end.
    """
    if not before or not after or reps <= 0:
        return []
    grown = []
    for name, count in after.items():
        start, mid = before.get(name, 0), None if middle is None else middle.get(name, 0)
        per = type_rate(start, mid, count, reps)
        if per >= TYPE_GROWTH_MIN:
            grown.append(
                {
                    "type": name,
                    "per_repetition": per,
                    "baseline": start,
                    "middle": mid,
                    "end": count,
                }
            )
    return sorted(grown, key=lambda t: -t["per_repetition"])[:TOP_TYPES]
