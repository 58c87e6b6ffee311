"""Calibration shape "bounded cache" (a control): an lru_cache of `entries` blocks, a new key
every repetition.

functools.lru_cache(maxsize=entries) keeps the newest `entries` results and evicts the oldest:
it grows by bytes_per_rep per repetition until full, then holds steady. Not a leak. A window
shorter than the cache's turnover sees only growth; so does memray's heap pass, which counts
the entries added while it tracks and not the evictions of entries made before it.
"""

import functools

TITLE = "calibration (bounded cache, a control): an lru_cache of `entries` blocks"
SOURCE = "caching"
REPETITION = "call an lru_cache'd function with a new key: one new block, the oldest evicted"
KIND = "growth"
SIZE_PARAM = "bytes_per_rep"
PARAMS = {"bytes_per_rep": 16384, "entries": 6}


def setup(bytes_per_rep, entries):
    @functools.lru_cache(maxsize=entries)
    def block(key):
        return bytearray(bytes_per_rep)

    return {"block": block, "calls": 0}


def repetition(state):
    state["calls"] += 1
    state["block"](state["calls"])
