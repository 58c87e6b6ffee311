"""The exit codes of every command, in one table (docs/cli.md shows it; a test compares the two).

A command exits with one of these and says in its help which it can return (epilog): 0 done, 1
a verdict or the gate says so, 2 bad input, 3 a failure while it ran, 130 interrupted.
"""

from __future__ import annotations

DONE = 0
VERDICT = 1
BAD_INPUT = 2
FAILED = 3
INTERRUPTED = 130

NAMES = {
    "DONE": DONE,
    "VERDICT": VERDICT,
    "BAD_INPUT": BAD_INPUT,
    "FAILED": FAILED,
    "INTERRUPTED": INTERRUPTED,
}
# code -> its one meaning, every command alike
TABLE = {
    DONE: "done: no leak, no regression, the result written",
    VERDICT: "the verdict or the gate says so: a leak, a regression, a hang, an over-cap",
    BAD_INPUT: "bad input: a usage error or a refusal, one line on stderr, nothing run",
    FAILED: "a failure while it ran: an install, a measurement that could not run",
    INTERRUPTED: "interrupted (Ctrl-C)",
}


def epilog(**said: str) -> str:
    """A command's help epilog naming the codes it can return, each with what it means for that
    command: epilog(DONE="the pairs listed", BAD_INPUT="bad input") -> "Exit 0 the pairs listed;
    2 bad input (docs/cli.md)." Keywords are this module's names of codes; a name that is none
    raises KeyError."""
    parts = sorted((NAMES[name], what) for name, what in said.items())
    return f"Exit {'; '.join(f'{code} {what}' for code, what in parts)} (docs/cli.md)."


def name(code: int) -> str:
    """The name of `code` in this module (1 -> "VERDICT"); KeyError where it is none of them."""
    return {c: n for n, c in NAMES.items()}[code]


def markdown_table() -> str:
    """TABLE as the markdown table docs/cli.md holds."""
    rows = [f"| {code} | {what} |" for code, what in TABLE.items()]
    return "\n".join(["| code | meaning |", "|---|---|", *rows]) + "\n"
