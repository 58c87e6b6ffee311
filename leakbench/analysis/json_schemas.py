"""The JSON Schemas (draft 7) of the files leakbench reads, one per kind (KINDS_OF_FILE):
leakbench.analysis.validate compiles them and says what is wrong with a file (see its docstring).

A record's schema is derived from its type (leakbench.analysis.record_schema); the others are
written here, of the parts in leakbench.analysis.schema_parts. A trend's keys are
estimate.Trend's fields.
"""

from __future__ import annotations

from leakbench import metrics as registry
from leakbench.analysis.judge.verdict import VERDICTS
from leakbench.analysis.record_schema import record_schema
from leakbench.analysis.schema_parts import (
    ANY_DICT,
    BOOL,
    INT,
    NUM,
    STR,
    VARIANTS,
    list_of,
    map_of,
    obj,
    opt,
    trend,
)

KINDS_OF_FILE = ("record", "repeat", "calibrate", "bisect")
# leakbench.calibrate.stats.SIGNALS' names, derived the
# same way (that module is not imported: numpy, scipy)
CALIBRATION_SIGNALS = tuple(m.signal for m in registry.metrics_in(registry.CALIBRATION))


def schema_of(kind: str) -> dict:
    """The JSON Schema of a file of `kind` (KINDS_OF_FILE). Raises ValueError for another kind."""
    schemas = {
        "record": record_schema,
        "repeat": _repeat,
        "calibrate": _calibrate,
        "bisect": _bisect,
    }
    if kind not in schemas:
        raise ValueError(f"no schema for {kind!r}: one of {', '.join(KINDS_OF_FILE)}")
    return schemas[kind]()


def _repeat() -> dict:
    """leakbench repeat's result (leakbench.repeat.repeatability.observe and repeat): what
    resuming reads."""
    slope = obj(
        {
            "signal": STR,
            "slope": opt(NUM),
            "rate": opt(NUM),
            "unit": opt(STR),
            "moved": BOOL,
        },
        required=("signal", "slope", "rate", "unit", "moved"),
    )
    seen = obj(
        {
            "pair": STR,
            "variant": {"enum": list(VARIANTS)},
            "run": INT,
            "verdict": {"enum": list(VERDICTS)},
            "signals": list_of(STR),
            "expected": STR,
            "expected_ok": BOOL,
            "tensorflow": opt(STR),
            "cap_bytes": NUM,
            "wall_seconds": NUM,
            "slopes": map_of(slope),
            "peak_exponent": opt(NUM),
            "confirmation_seconds": opt(NUM),
            "load_average": opt(NUM),
            "phase": opt(STR),
            "error": opt(STR),
        },
        required=(
            "pair",
            "variant",
            "run",
            "verdict",
            "signals",
            "expected",
            "expected_ok",
            "tensorflow",
            "cap_bytes",
            "wall_seconds",
            "slopes",
            "peak_exponent",
            "confirmation_seconds",
        ),
    )
    return obj(
        {
            "format": INT,
            "machine": STR,
            "jobs": INT,
            "cpu_hog": INT,
            "tensorflow": opt(STR),
            "settings": ANY_DICT,
            "environment": ANY_DICT,
            "started": STR,
            "updated": STR,
            "elapsed_seconds": NUM,
            "runs_requested": INT,
            "observations": list_of(seen),
            "summary": ANY_DICT,
        },
        required=("format", "elapsed_seconds", "observations"),
    )


def _calibrate() -> dict:
    """leakbench calibrate's result (leakbench.calibrate.calibration.observe, peers.run_peer):
    what resuming reads."""
    fields = {
        "holder": STR,
        "shape": STR,  # the shape library's; older results lack it and leaks (steady leaks)
        "leaks": BOOL,
        "bytes_per_rep": INT,
        "run": INT,
        "verdict": {"enum": list(VERDICTS)},
        "signals": list_of(STR),
        "phase": opt(STR),
        "error": opt(STR),
        "wall_seconds": NUM,
        "seconds": map_of(NUM),
        "peak_rss_bytes": opt(NUM),
        "max_rss_bytes": opt(NUM),
        "tensorflow": opt(STR),
        "heap_source": opt(STR),
        "confirmation_held_trend": opt(trend()),  # older results lack it
    }
    for name in CALIBRATION_SIGNALS:  # older results lack a signal added since (held): optional
        fields.update(
            {
                f"{name}_slope": opt(NUM),
                f"{name}_p": opt(NUM),
                f"{name}_moved": BOOL,
                f"{name}_trend": opt(trend()),
                f"{name}_reach": opt(NUM),
                f"{name}_trend_only": BOOL,
            }
        )
    seen = obj(
        fields,
        required=(
            "holder",
            "bytes_per_rep",
            "run",
            "verdict",
            "signals",
            "wall_seconds",
            "seconds",
            "peak_rss_bytes",
            "tensorflow",
            f"{registry.RSS.signal}_slope",
        ),
    )
    peer = obj(
        {
            "peer": STR,
            "holder": STR,
            "bytes_per_rep": INT,
            "run": INT,
            "status": STR,
            "leak": opt(BOOL),
            "wall_seconds": NUM,
            "max_rss_bytes": opt(NUM),
            "detail": opt(STR),
        },
        required=("peer", "holder", "bytes_per_rep", "run", "status", "leak", "wall_seconds"),
    )
    return obj(
        {
            "format": INT,
            "machine": STR,
            "tensorflow": opt(STR),
            "settings": ANY_DICT,
            "environment": ANY_DICT,
            "observations": list_of(seen),
            "peers": list_of(peer),
        },
        required=("format", "environment", "observations"),
    )


def _bisect() -> dict:
    """leakbench bisect's result (leakbench.history.bisect): what the matrix reads of it."""
    build = obj(
        {
            "version": STR,
            "dist": STR,
            "date": opt(STR),
            "wheel_bytes": opt(NUM),
            "tensorflow_git": opt(STR),
            "git_ref": opt(STR),
        },
        required=("version",),
    )
    boundary = obj({"good": build, "bad": build, "compare_url": opt(STR)}, required=("good", "bad"))
    return obj(
        {
            "pair": STR,
            "variant": {"enum": list(VARIANTS)},
            "status": STR,
            "message": STR,
            "boundary": opt(boundary),
            "measurements": list_of(ANY_DICT),
        },
        required=("pair", "variant", "status"),
    )
