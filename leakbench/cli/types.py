"""Click parameter types the commands share.

Every number a command takes must be finite: click's FLOAT (and FloatRange)
take "nan", "inf" and "-inf", and a timeout of nan or inf is a deadline that
never comes (nan also passes every range check: each comparison with it is
false). Each float option uses one of the types here; a bad value ends the
command with click's usage error, which leakbench prints in one line, exit 2.
"""

from __future__ import annotations

import math

import click


class FiniteFloat(click.FloatRange):
    """A finite float within click.FloatRange's bounds."""

    name = "finite float"

    def convert(self, value, param, ctx):
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(number, param, ctx)

    def _describe_range(self) -> str:  # the help's "[x>=1]"; nothing where there are no bounds
        return super()._describe_range() if self.min is not None or self.max is not None else ""


FINITE_SECONDS = FiniteFloat(min=1)  # --timeout, --teardown-timeout: at least a second
FINITE_FLOAT = FiniteFloat()  # --factor (compare says what range it takes)
