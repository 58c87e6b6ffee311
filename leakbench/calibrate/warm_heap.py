"""A heap as a process that has run for a while leaves it: glibc malloc holding free bytes.

A fresh Python process grows its heap at the top, so a growing block's new pages become
resident only as they are written, and held memory (RssAnon less malloc's free bytes) rises
smoothly. A process that has run for a while (TensorFlow's import alone leaves tens of MiB)
holds free chunks, already resident: a block reallocated into one of them takes it whole, and
held memory jumps by its over-allocation. `warm` makes that state for the calibration's
Python-held shapes, without importing TensorFlow (3-4 s a process).
"""

from __future__ import annotations

import random

# 3/4 freed: 24 MiB, under the 32 MiB a trim must give back to read fragmentation
WARM_BYTES = 32 * 1024 * 1024
CHUNK_BYTES = (4 * 1024, 120 * 1024)  # under glibc's default mmap threshold: heap chunks
KEEP_EVERY = 4  # keep one chunk in four, so the freed ones cannot be trimmed away

_KEPT: list[bytearray] = []


def warm(seed: int = 0) -> None:
    """Allocate WARM_BYTES in heap chunks of random sizes (bytes) and free all but one in
    KEEP_EVERY: the freed chunks stay resident as malloc's free bytes."""
    rng = random.Random(seed)
    chunks = []
    total = 0
    while total < WARM_BYTES:
        size = rng.randrange(*CHUNK_BYTES)
        chunks.append(bytearray(size))
        total += size
    _KEPT.extend(chunks[::KEEP_EVERY])
    del chunks
