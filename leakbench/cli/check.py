"""`leakbench check`: a pipeline of your own (logic in
leakbench.check, views in leakbench.reporters.check)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from leakbench import expectation
from leakbench.analysis.record_type import Record
from leakbench.cli import exits
from leakbench.cli.base import (
    as_text,
    err,
    fail,
    flamegraph_note,
    main,
    one_line,
    progress,
    say,
)
from leakbench.cli.base import out as terminal
from leakbench.cli.files import OUT_OPTION, apart, emit, format_option, writable
from leakbench.cli.options import measurement_options
from leakbench.contract import ContractError
from leakbench.reporters import check as view


def check_exit_code(rec: Record) -> int:
    """The exit code of a check (leakbench.cli.exits): DONE (0) when the record reads what a check
    target should (expectation.CHECK: no-leak, fragmentation, or skipped for a scenario file that
    needs a GPU or a library the machine lacks); FAILED (3) error (the target could not be
    measured); VERDICT (1) otherwise (leak, over-cap, hang)."""
    if expectation.CHECK.accepts(rec):
        return exits.DONE
    return exits.FAILED if rec["verdict"] == "error" else exits.VERDICT


def _target_file(spec: str) -> Path | None:
    """The file TARGET names: FILE.py, or a top-level module's file (finding a submodule's would
    import its parents); None when there is none to name."""
    import importlib.util

    from leakbench.engine import target as check_target

    parsed = check_target.parse(spec)
    if parsed.path is not None or parsed.module is None or "." in parsed.module:
        return parsed.path
    found = importlib.util.find_spec(parsed.module)
    return Path(found.origin) if found is not None and found.has_location and found.origin else None


@main.command(
    "check",
    epilog=exits.epilog(
        DONE="no-leak or fragmentation (or skipped)",
        VERDICT="leak, over-cap or hang",
        BAD_INPUT="bad input or a bad target",
        FAILED="error: the target could not be measured",
    ),
)
@click.argument("target")
@measurement_options()
@format_option(table="the tables a terminal shows", json="the record, one line of JSON")
@OUT_OPTION
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Also write a self-contained report page (charts, stages, stacks, chain) to FILE.",
)
def check_command(target, settings, fmt, out, html_path) -> None:
    """Check a pipeline of your own for leaks.

    Measures TARGET as `run` measures a pair and says where the memory is: the line whose
    allocations grow, the tf.data stage that buffers, the chain that keeps the objects alive.
    TARGET is FILE.py:NAME or module:NAME, where NAME is a function returning a
    tf.data.Dataset (iterated to its end once per repetition) or a zero-argument
    function doing one repetition of work; or a scenario FILE.py.
    """
    from leakbench.check import pipeline as checking

    outputs = [("--out", out), ("--html", html_path)]
    for option, path in outputs:
        if path is not None:
            writable(option, path)
    try:
        checking.plan(target)
    except ContractError as e:
        fail(str(e))
    if out is not None or html_path is not None:
        apart(outputs, [("the check target's file", _target_file(target))])
    with err.status("starting") as status:
        rec = checking.check(target, settings, on_message=progress(status, target, settings.reps))

    def tables() -> None:
        for part in view.check_view(rec):
            terminal.print(part, highlight=False)

    def text_of(form: str) -> str:
        return json.dumps(rec) + "\n" if form == "json" else as_text(*view.check_view(rec))

    emit(fmt, out, text_of, tables, "table")
    if html_path is not None:
        from leakbench.site import report

        try:
            report.write_check_page(rec, html_path)
        except OSError as e:
            fail(f"--html: cannot write {html_path}: {e.strerror or e}")
        say(f"leakbench: report written to {html_path}")
    if rec.get("flamegraph"):
        say(f"leakbench: {flamegraph_note(rec, settings.flamegraph_dir)}")
    if rec["verdict"] == "skipped":
        say(f"leakbench: skipped: {rec['skip_reason']}")
    if rec["verdict"] in ("error", "hang"):
        where = f" in {rec['phase']}" if rec.get("phase") else ""
        reason = (rec.get("error") or "").strip()
        why = (
            one_line(reason)
            if reason
            else f"no progress within {settings.timeout_seconds:g} s (--timeout)"
        )
        say(f"leakbench: {rec['verdict']}{where}: {why}")
    sys.exit(check_exit_code(rec))
