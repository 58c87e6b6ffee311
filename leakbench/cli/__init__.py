"""Command line: `leakbench list | run | check | compare | matrix | site | calibrate | repeat`.

One module per command family; each registers its commands on the group in
leakbench.cli.base, which also holds what they share.
"""
from leakbench.cli import calibrate, check, history, repeat, run, site  # noqa: F401  (registers the commands)
from leakbench.cli import report_back  # noqa: F401  (registers `leakbench report-back`)
from leakbench.cli.base import main
from leakbench.cli.check import check_exit_code

__all__ = ["main", "check_exit_code"]
