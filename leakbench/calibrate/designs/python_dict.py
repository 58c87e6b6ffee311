"""Calibration shape "lumpy": one dict grown by about `bytes_per_rep` bytes per repetition.

Each repetition inserts new int keys (value None). A key costs its entry in the dict's table
(an index and a 24-byte entry, 3.11's compact dict) and its int object (32 bytes, in pymalloc's
arenas): KEY_BYTES together, at the table's fill. The table doubles when two thirds full, so
part of the growth comes in ever larger lumps and part (the ints) steadily. About
BYTES_PER_REP per repetition on average; 0 is the control.
"""

TITLE = "calibration (lumpy): one dict grown by about bytes_per_rep per repetition"
SOURCE = "dangling references"
REPETITION = "insert bytes_per_rep / KEY_BYTES new int keys into one module-level dict"
KIND = "growth"
SIZE_PARAM = "bytes_per_rep"
PARAMS = {"bytes_per_rep": 16384}

# int object (32) + its share of the table (24-byte entries, indices, at 1/3 to 2/3 full): 62
# bytes a key on average over 75 repetitions (sys.getsizeof of the dict, plus the ints)
KEY_BYTES = 62
KEPT: dict = {}  # never cleared: this is the leak


def setup(bytes_per_rep):
    return {"keys": bytes_per_rep // KEY_BYTES, "next": 10**9}  # ints past the small-int cache


def repetition(state):
    start = state["next"]
    state["next"] += state["keys"]
    KEPT.update(dict.fromkeys(range(start, state["next"])))
