"""Frees everything it allocates, yet RSS grows: designed allocator retention.

Each repetition allocates BLOCKS blocks, each larger than in the repetition
before, and frees them all. The process's environment (ENV) tells glibc never
to trim the top of its heap, so freed pages stay resident and each larger
round needs new ones: RSS grows by BLOCKS × STEP_BYTES per repetition while
the bytes malloc has in use stay flat. malloc_trim gives the pages back.
"""
TITLE = "larger blocks each repetition, all freed, heap never trimmed"
SOURCE = "stateful functions"
REPETITION = "allocate and free BLOCKS blocks"
KIND = "growth"
SIZE_PARAM = "blocks"
PARAMS = {"blocks": 1024}  # 4 MiB more RSS per repetition: past verdict.TRIM_HELD_MIN in 12
ENV = {"MALLOC_TRIM_THRESHOLD_": "4294967296", "MALLOC_MMAP_THRESHOLD_": "4194304"}

STEP_BYTES = 4096


def setup(blocks):
    return {"blocks": blocks, "rep": 0}


def repetition(state):
    state["rep"] += 1
    size = 8192 + STEP_BYTES * state["rep"]
    blocks = [bytearray(b"\x01") * size for _ in range(state["blocks"])]  # filled: resident
    del blocks
