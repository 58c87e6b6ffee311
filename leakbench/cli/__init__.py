"""Command line: `leakbench list | run | check | causes | compare | matrix | gate | bisect
| report-back | site | calibrate | repeat | publish`, and `leakbench --version`.

One module per command family; each registers its commands on the group in
leakbench.cli.base. What they share: base (errors, progress), options (the measurement options)
and files (output checks, the results options, --format and --out). The grammar, each command's
exit codes and the old spellings kept: docs/cli.md.
"""

from leakbench.cli import (  # noqa: F401  (registers them)
    bisect,
    calibrate,
    causes,
    check,
    gate,
    history,
    publish,
    repeat,
    report_back,
    run,
    site,
)
from leakbench.cli.base import main
from leakbench.cli.check import check_exit_code

__all__ = ["main", "check_exit_code"]
