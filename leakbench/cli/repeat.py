"""`leakbench repeat`: the repeatability table (logic in leakbench.repeat, view in
leakbench.reporters.repeatability)."""

from __future__ import annotations

from pathlib import Path

import click

from leakbench import jsonfile
from leakbench.cli import exits
from leakbench.cli.base import fail, main, say, targets_of
from leakbench.cli.files import apart, machine_of, results_dir, writable
from leakbench.cli.options import CPU_HOG_OPTION, VARIANT_OPTION, measurement_options, sizes_fit


@main.command(
    "repeat",
    epilog=exits.epilog(
        DONE="the table written", BAD_INPUT="bad input (nothing measured, nothing overwritten)"
    ),
)
@click.argument("names", nargs=-1)
@click.option(
    "--runs",
    type=click.IntRange(1, 1000),
    default=10,
    show_default=True,
    help="Runs per pair × variant, each a fresh child process.",
)
@click.option(
    "--jobs",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Children measured at once (the default cap is divided between them).",
)
@VARIANT_OPTION
@measurement_options(scales=True)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="The result as JSON in FILE (.json), which --resume reads; the table goes beside it "
    "(.md). Default: results/repeatability/<machine>-tf-<version>[-jobs<N>][-hog<N>].json.",
)
@click.option(
    "--machine",
    default=None,
    metavar="NAME",
    help="Machine name for the default --out. Default: asv's machine name, as the records use.",
)
@click.option(
    "--resume/--fresh",
    default=True,
    show_default=True,
    help="Keep the runs already in --out (same settings) and measure only the missing ones; "
    "--fresh measures anew and replaces it.",
)
@CPU_HOG_OPTION
def repeat_command(
    names,
    runs,
    jobs,
    variant,
    settings,
    out,
    machine,
    resume,
    cpu_hog,
) -> None:
    """Measure pairs RUNS times each: the repeatability table.

    Every variant (all pairs by default) in --runs independent runs; the table holds the verdicts'
    agreement and the spread of each decisive slope. The result is always filed: JSON in --out,
    the markdown table beside it (.md), the table on stdout too.
    """
    from leakbench.repeat import repeatability as repeat
    from leakbench.reporters import repeatability as repeat_report

    targets = targets_of(names, variant)
    sizes_fit([(t, t.scenario.params) for t in targets], settings.scales)
    results = results_dir(None, writes=True)
    machine = machine_of(results, machine)
    default = out is None
    out = out or repeat.default_out(results, machine, jobs, cpu_hog)
    if out.suffix != ".json" or out.is_dir():
        fail(f"--out: {out} is not a .json file name (the table goes beside it as .md)")
    writable("--out", out, create_folder=default)
    writable("--out's table", out.with_suffix(".md"))
    # --out itself is resumed on purpose
    apart(
        [("--out", out), ("--out's table", out.with_suffix(".md"))],
        [("a scenario file it measures", t.scenario.path) for t in targets],
    )

    def progress(i, total, seen):
        say(
            f"[{i}/{total}] {seen['pair']} ({seen['variant']}) run {seen['run']}: "
            f"{seen['verdict']} in {seen['wall_seconds']:.1f} s"
        )

    try:
        result = repeat.repeat(
            targets,
            runs,
            settings,
            out,
            jobs=jobs,
            resume=resume,
            machine=machine,
            on_run=progress,
            cpu_hog=cpu_hog,
        )
    except repeat.RepeatError as e:
        fail(str(e))
    table = repeat_report.markdown(result)
    jsonfile.write_text_atomic(out.with_suffix(".md"), table)
    click.echo(table)
    say(f"leakbench: repeatability written to {out} and {out.with_suffix('.md')}")
