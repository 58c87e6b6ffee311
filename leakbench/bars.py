"""Every bar of the verdict, and the floors `leakbench compare` counts: a slope's in its unit per
repetition (a metric's rate: leakbench.metrics.rate), a level's in bytes. The registry
(leakbench.metrics) sets them on its metrics; the verdict (leakbench.analysis) compares with them.
Why each has its value: docs/verdicts.md.
"""

from leakbench.units import KIB, MIB

# Every bar of the verdict, a slope's per repetition (docs/verdicts.md says why each has its value)
HELD_SLOPE_MIN = 13 * KIB  # held memory: the memory signal the verdict rests on
RSS_SLOPE_MIN = 256 * KIB  # RSS: decides only where held memory is n/a (another allocator)
HEAP_SLOPE_MIN = 64 * KIB  # memray's heap: few repetitions in its pass
GPU_SLOPE_MIN = 64 * KIB  # the GPU allocator's bytes in use (untested: no GPU here)
COUNT_SLOPE_MIN = 0.5  # threads, open files: exact counts
OBJECT_SLOPE_MIN = 8  # Python objects: exact, but a bounded pipeline may keep a few
TREND_P_MAX = 0.01  # a slope counts only where the one-sided Mann–Kendall p is below this
PEAK_RISE_MIN = 32 * MIB  # the peak must rise this much between the smallest and largest size
PEAK_EXPONENT_MIN = 0.5  # ...and k in peak ∝ size^k reach this, for a peak pair to leak
TRIM_SHARE_MIN = 0.5  # fragmentation: the share of RSS malloc_trim gives back or malloc keeps free
TRIM_HELD_MIN = 32 * MIB  # fragmentation: the least RSS growth, or trim, that counts
FREE_HELD_MIN = 96 * MIB  # free bytes above the process before setup (docs/fragmentation.md)
# A leak spreads its growth over the repetitions; a creep in a few steps (a block malloc mapped
# whole and touched deeper later, a buffer AUTOTUNE widens) puts it in a few rises. `steady`
# reads both numbers (docs/verdicts.md, "Steady growth").
STEADY_RISE_SHARE = 0.5
STEP_SHARE_MAX = 0.9
# A change in held growth between two builds that `leakbench compare` counts: a fix's creep
# moves about this much between runs of one build (docs/measurements.md, "Held memory").
HELD_COMPARE_FLOOR = 16 * KIB
# malloc_trim's give-back that compare counts and the site calls a swing; every pair but
# shuffle_fragmentation gives back at most 21 MiB, 2.6x it
# (docs/measurements.md, "psutil and glibc malloc")
TRIM_FLOOR = 8 * MIB
