"""A file-descriptor leak: each repetition opens /dev/null and keeps it."""
TITLE = "one file kept open per repetition"
SOURCE = "dangling references"
REPETITION = "open one file"
KIND = "growth"
SIZE_PARAM = "files_per_rep"
PARAMS = {"files_per_rep": 1}

KEPT = []


def setup(files_per_rep):
    return files_per_rep


def repetition(files_per_rep):
    for _ in range(files_per_rep):
        KEPT.append(open("/dev/null", "rb"))
