"""`python -m leakbench ...`: the command line, for an interpreter whose scripts are not on PATH
(a bisect's or a release's virtualenv)."""

from leakbench.cli import main

main()
