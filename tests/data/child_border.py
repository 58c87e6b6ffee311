"""Check targets that tamper with leakbench's own channel, the pipe the child's messages go to
(its descriptor is in the child's config, the last argument of its command line): each one is a
zero-argument repetition of `leakbench check child_border.py:NAME` (tests/test_child_border.py).

A message of the wrong type, written on the pipe as the child would write it; the pipe's
descriptor closed (os.closerange, as a library that closes every inherited descriptor does) or
reused (os.dup2 over it, or a file opened into its number once it was closed), at the target's
CALL-th call (1: check's setup, which calls it once; 3: a warm-up or measured repetition).
"""
import json
import os
import sys
import time

CALLS = [0]
CALL = int(os.environ.get("CHILD_BORDER_CALL", "1"))  # the call that tampers


def _channel() -> int:
    return json.loads(sys.argv[-1])["fd"]


def _now() -> bool:
    CALLS[0] += 1
    return CALLS[0] == CALL


def _send(line: bytes) -> None:
    if _now():
        os.write(_channel(), line)


def int_result():
    _send(b'{"result": 5}\n')


def int_error():
    _send(b'{"error": 5, "phase": "setup"}\n')


def str_in_a_sample():
    sample = dict.fromkeys(
        ("held_bytes", "rss_anon_bytes", "uss_bytes", "heap_used_bytes", "mmap_used_bytes",
         "malloc_used_bytes", "pymalloc_used_bytes", "allocated_bytes", "heap_free_bytes",
         "threads", "open_files", "python_objects",
         "gpu_current_bytes"),
        None,
    )
    sample["rss_bytes"] = "22 MB"
    _send(json.dumps({"sample": sample, "rep": 0}).encode() + b"\n")


def closes_fds():
    if _now():
        os.closerange(3, 1024)


def dup2_over():
    if _now():
        os.dup2(os.open(os.devnull, os.O_WRONLY), _channel())


def reopens():
    """Closes the pipe's descriptor, then opens files (each the lowest free number) until one
    gets the pipe's number."""
    if _now():
        fd = _channel()
        os.close(fd)
        while os.open(os.devnull, os.O_RDONLY) != fd:
            pass


def dup2_and_stay():
    """Replaces the pipe's descriptor, then runs on for a minute without a message."""
    if _now():
        os.dup2(os.open(os.devnull, os.O_WRONLY), _channel())
        time.sleep(60)


def same_pipe():
    """os.dup2 of the pipe onto itself, and a second descriptor of it: still the pipe."""
    if _now():
        fd = _channel()
        os.dup2(fd, fd)
        os.dup(fd)
