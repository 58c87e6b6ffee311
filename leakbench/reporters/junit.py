"""JUnit XML of `leakbench gate`, the format CI systems show (data: leakbench.history.compare).

One test case per pair and variant (classname "leakbench.gate", name "<pair> (<variant>)"): a
regression is a <failure>; skipped and not measured are <skipped>; fixed upstream, a change that
does not count and an unchanged variant pass. Every case has a <system-out> line: which it is,
then the summary's line (leakbench.reporters.gate.entry_line: both sides' verdicts with the
number each rests on). Built with junitparser.
"""

from __future__ import annotations

import io

from junitparser import Failure, JUnitXml, Skipped, TestCase, TestSuite

from leakbench.history.compare import NOT_MEASURED, REGRESSION, SKIPPED, Comparison
from leakbench.reporters import gate

CLASSNAME = "leakbench.gate"
_SAID = {o: heading.lower() for o, heading in gate.SECTIONS}  # "changes that do not count", ...


def case(c: Comparison, e: dict) -> TestCase:
    """One pair's variant as a test case (see the module docstring)."""
    found = TestCase(f"{e['pair']} ({e['variant']})", classname=CLASSNAME)
    sides = f"{c.old}: {e['old'] or 'no record'}\n{c.new}: {e['new'] or 'no record'}"
    if e["outcome"] == REGRESSION:
        failure = Failure(e["why"] or "regression", "regression")
        failure.text = sides
        found.result = [failure]
    elif e["outcome"] in (SKIPPED, NOT_MEASURED):
        found.result = [Skipped(e["why"] or e["new"] or e["outcome"], e["outcome"])]
    # the summary's line: both sides' verdicts, why, what moved past the factor
    said = gate.entry_line(e, c.factor).removeprefix("- ")
    found.system_out = f"{_SAID.get(e['outcome'], e['outcome'])}: {said}\n"
    return found


def document(c: Comparison, command: str = "gate") -> str:
    """The JUnit XML document of a comparison: one test suite, its properties the builds, the
    machine and the exit code."""
    suite = TestSuite(f"leakbench {command}: TensorFlow {c.old} → {c.new}")
    for name, value in (
        ("baseline", c.old),
        ("candidate", c.new),
        ("machine", c.machine or ""),
        ("exit_code", str(c.exit_code)),
    ):
        suite.add_property(name, value)
    suite.add_testcases([case(c, e) for e in c.entries])
    xml = JUnitXml(f"leakbench {command}")
    xml.add_testsuite(suite)
    xml.update_statistics()
    out = io.BytesIO()
    xml.write(out, pretty=True)
    return out.getvalue().decode("utf-8")
