"""The type of one entry of the registry (leakbench.metrics.METRICS): a number of
record["metrics"], and how every view shows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Metric:
    """One number of record["metrics"], and how every view shows it. key: its key in
    record["metrics"]. unit: as stored ("bytes/repetition" for a trend, "bytes" for a level). shown,
    scale, digits: the display unit, the divisor into it, the decimals. series: the sample series it
    is the trend of (None: computed otherwise). signal: its name in record["signals"] when it
    decides a verdict, with threshold (in `unit`); fallback: it decides only in held memory's place,
    where glibc's counters are n/a. compare_floor: the smallest change `leakbench compare` counts
    (None: not compared). asv: the name of its asv track_ benchmark (None: not tracked). check:
    shown by `leakbench check`. help: what its growth means in your own pipeline. short: its name
    where a view uses a short one (a column head, a matrix cell's evidence, the memory chart).
    mallinfo2: computed from glibc malloc's counters, so n/a under another allocator. views: the
    views that show it, each with its place there (leakbench.series: TABLE and the others)."""

    key: str
    label: str
    unit: str
    shown: str
    scale: float
    digits: int
    help: str
    series: str | None = None
    signal: str | None = None
    threshold: float | None = None
    fallback: bool = False
    compare_floor: float | None = None
    asv: str | None = None
    check: bool = False
    short: str | None = None
    mallinfo2: bool = False
    views: dict = field(default_factory=dict, compare=False)

    def display(self, value: float | None, sign: bool = False, fit: bool = False) -> str:
        """value in the display unit ("—" for None), e.g. 65536 bytes/repetition -> "64". fit: the
        decimals its size needs, not `digits` (none from 100, one from 10, else two: compare's)."""
        if value is None:
            return "—"
        v = value / self.scale
        places = (0 if abs(v) >= 100 else 1 if abs(v) >= 10 else 2) if fit else self.digits
        return f"{v:{'+' if sign else ''},.{places}f}"

    @property
    def per_repetition(self) -> bool:
        """True for a rate per repetition (shown with its sign), False for a level (bytes, MiB)."""
        return self.unit.endswith("/repetition")

    @property
    def counts(self) -> bool:
        """True for a count of things (threads, objects): exact, so a move is never marginal."""
        return not self.unit.startswith("bytes")
