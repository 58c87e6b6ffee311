"""Cells measured round-robin into a result file that resumes: the loop `leakbench repeat`
(leakbench.repeat.repeatability) and `leakbench calibrate` (leakbench.calibrate.calibration) share.

A cell is what a caller measures again and again (repeat: a pair's variant; calibrate: a designed
case, or a peer on it); an observation is what the caller keeps of one run of one cell, keyed by
the cell and the run number (from 1). Runs go round-robin (run 1 of every cell, then run 2, ...)
so that a spell of load on the machine spreads over all cells instead of one.

The result is a JSON object (jsonfile.resumable's rule: its "format", what it was made with,
its "observations"). It is replaced atomically after every observation, so an interrupted call
keeps what it measured, and a later call with the same settings (resume) measures only the
observations whose key is not in it yet. A file made otherwise, corrupt, or not the caller's kind
of result is never overwritten: the caller's error, one line, before anything is measured.

What a cell is, how one run of it is measured, what is kept of it and where, how it is keyed,
and what is computed from the observations before each write are the caller's, as arguments;
the order, the skipping, the children at once and the saving are here. The children at once
alone (measure_each) serve `leakbench run --jobs` too.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed, wait
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from leakbench import jsonfile
from leakbench.analysis import record, validate
from leakbench.engine import children, memlimit
from leakbench.settings import Settings

Cell = TypeVar("Cell")


def open_result(
    out: Path,
    made: dict,
    fmt: int,
    kind: str,
    what: str,
    error: type[Exception],
    resume: bool = True,
    **fresh: Any,
) -> dict:
    """The result to add observations to: the one in `out` when resume and it can be resumed
    (jsonfile.resumable: made the same way; validate.check_resumed: the schema of `kind`, "repeat"
    or "calibrate"), else a new one: format, `made`, the environment, `fresh`, no observations.

    what: the result's name in messages ("a repeatability result"). Raises `error` with one line,
    and leaves `out` as it is, when `out` is there to resume but cannot be.
    """
    found = jsonfile.resumable(out, made, fmt, what, error) if resume else None
    found = validate.check_resumed(found, kind, out, what, fmt, error)  # its types, once
    if found is not None:
        return found
    return {
        "format": fmt,
        **made,
        "environment": record.environment(None),
        **fresh,
        "observations": [],
    }


def shared_cap(settings: Settings, jobs: int) -> Settings:
    """`settings` for `jobs` children at once: where they name no cap (cap_bytes 0), the default
    cap (memlimit.default_cap_bytes, in bytes, read once, here, before any child runs) divided
    between them; a cap given is each child's as it is."""
    if settings.cap_bytes:
        return settings
    return replace(settings, cap_bytes=memlimit.default_cap_bytes() // jobs)


def plan(cells: Iterable[tuple[Cell, int]]) -> list[tuple[int, Cell]]:
    """(run, cell) in measuring order: run 1 of every cell, then run 2, ...

    cells: (cell, how many runs it gets), in the order every run goes through them; a cell with
    fewer runs than another drops out of the later rounds."""
    cells = list(cells)
    most = max((runs for _, runs in cells), default=0)
    return [(run, cell) for run in range(1, most + 1) for cell, runs in cells if run <= runs]


def measure_rounds(
    out: Path,
    result: dict,
    cells: Iterable[tuple[Cell, int]],
    *,
    key: Callable[[int, Cell], Hashable],
    done: Callable[[dict], set],
    run_one: Callable[[int, Cell], Any],
    keep: Callable[[int, Cell, Any], dict],
    finish: Callable[[dict], dict],
    jobs: int = 1,
    on_run: Callable[[int, int, int, Cell, dict], None] | None = None,
) -> dict:
    """Measure every (run, cell) of plan(cells) whose key(run, cell) is not in done(result), the
    keys of the observations `result` already holds, writing `out` after each; return `result`.

    run_one(run, cell): one run of the cell (a record, say); with jobs > 1 it runs in a worker
    thread, `jobs` at once, else in this one. keep(run, cell, what run_one returned): adds the
    observation to `result` and returns it (in this thread, one at a time). finish(result): the
    result as written (its summary computed), after every observation and once at the end.
    on_run(i, total, run, cell, observation) after each write.

    Raises RuntimeError if an observation just kept is not in done(result) under its key: key
    and done spell the key each their own way, and a resume would measure that run again.

    Ctrl-C (any exception) with jobs > 1 kills the children the engine started
    (leakbench.engine.runner), cancels the runs not begun, and records nothing more; with one
    job it reaches the runner in this thread, which kills its child.
    """
    finished = done(result)
    todo = [(run, cell) for run, cell in plan(cells) if key(run, cell) not in finished]

    def kept(i: int, run: int, cell: Cell, measured: Any) -> None:
        seen = keep(run, cell, measured)
        if (this := key(run, cell)) not in done(result):
            raise RuntimeError(f"run {this!r} was kept but does not read as done")
        jsonfile.write_atomic(out, finish(result))
        if on_run:
            on_run(i, len(todo), run, cell, seen)

    measure_each(todo, lambda item: run_one(*item), jobs, lambda i, item, got: kept(i, *item, got))
    jsonfile.write_atomic(out, finish(result))
    return result


Item = TypeVar("Item")


def measure_each(
    items: list[Item],
    run_one: Callable[[Item], Any],
    jobs: int,
    done: Callable[[int, Item, Any], None],
) -> None:
    """run_one(item) for every item, `jobs` at once (each in a worker thread; with one job, in
    this thread, in order), and done(i, item, what run_one returned) in this thread, one at a
    time, as each ends (i: 1, 2, ... in the order they end).

    An exception from run_one or done, Ctrl-C among them, with jobs > 1 kills the children the
    engine started (leakbench.engine.runner), cancels the items not begun, and is raised; with
    one job it reaches the runner in this thread, which kills its child.
    """
    if jobs == 1:
        for i, item in enumerate(items, 1):
            done(i, item, run_one(item))
        return
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_one, item): item for item in items}
        try:
            for i, future in enumerate(as_completed(futures), 1):
                done(i, futures[future], future.result())
        except BaseException:
            # Ctrl-C reaches this thread only: stop the children, record nothing more
            pool.shutdown(wait=False, cancel_futures=True)
            while not all(f.done() for f in futures):
                children.stop_children()
                wait(futures, timeout=0.2)
            raise
