"""The evidence a cause is named by (leakbench.check.causes): a record's feature sets, one per
group of evidence, the evidence both a `run` record and a `check` record hold (a check record's
run also holds "diagnostics", which the committed records lack: it is not read):

- signal: the signals that moved (record["signals"]) and a verdict of fragmentation or over-cap;
- type: the Python types that grew (run["python_type_growth"]);
- chain: what keeps the type that grew most alive (run["reference_chain"]): each link's type,
  TensorFlow's private attributes and keys on the way (`_py_funcs_used_in_graph`), a library's
  module at the root (never the measured file's own module);
- stage: the tf.data stages holding at least STAGE_BYTES_MIN at the last reading, and those
  that grew by it between readings (run["stages"], the autotune model's buffered bytes);
- site: the library functions (TensorFlow, Keras, NumPy) nearest the allocation sites whose
  live bytes grew by at least SITE_BYTES_MIN per repetition in memray's pass
  (run["heap"]["stack_growth"]); a growing site with no Python frame (TensorFlow's own threads)
  reads `(native)`. The user's own frames never enter: they name the file, not the cause.

`features(record_or_evidence) -> Features` (group -> frozenset of feature names); `moved` says
whether anything grew at all.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from leakbench import metrics as registry
from leakbench.analysis.schema import first_run
from leakbench.units import KIB, MIB

MOVED = ("leak", "over-cap", "fragmentation")  # verdicts where something grew, or RSS stayed
STAGE_BYTES_MIN = 1 * MIB  # a stage holding less is no evidence (diagnosis.HOLDER_BYTES_MIN)
SITE_BYTES_MIN = 4 * KIB  # an allocation site growing less per repetition is noise
SITES_READ = 3  # the growing allocation sites read, largest first
SITE_FRAMES = 3  # library frames read per site, innermost first
TYPES_READ = 8  # Python types read, fastest-growing first
LIBRARIES = ("tensorflow/", "keras/", "tf_keras/", "numpy/")  # a library frame's path
GROUPS = ("signal", "type", "chain", "stage", "site")
TELLING = ("type", "chain", "stage", "site")  # the groups whose evidence tells causes apart
_PRIVATE = re.compile(r"\['(_\w+)'\]|\.(_\w+)")
_VERSIONED = re.compile(r"V\d+$")  # ParallelMapV2 is ParallelMap, ParallelInterleaveV4 its own

Features = dict[str, frozenset[str]]


def moved(record_or_evidence: Mapping[str, Any]) -> bool:
    """Whether anything grew: a verdict of leak, over-cap or fragmentation, or (evidence without a
    verdict) a signal that moved."""
    verdict = record_or_evidence.get("verdict")
    if verdict is None:
        return bool(record_or_evidence.get("signals"))
    return verdict in MOVED


def features(record_or_evidence: Mapping[str, Any]) -> Features:
    """The evidence groups (GROUPS) of a record, or of evidence: a mapping with any of "signals",
    "verdict", "python_type_growth", "reference_chain", "stages", "heap" (a run's keys) at the top
    level (a record's first run is read where it has "runs")."""
    rec = record_or_evidence
    run = first_run(rec) if rec.get("runs") else rec
    signal = {str(s) for s in rec.get("signals") or []}
    if rec.get("verdict") in ("fragmentation", "over-cap"):
        signal.add(str(rec["verdict"]))
    # which types grew, and what keeps one alive, say something only where Python objects grew:
    # elsewhere they are the engine's own churn
    objects = registry.OBJECTS.signal in signal
    types = sorted(run.get("python_type_growth") or [], key=lambda t: -t["per_repetition"])
    runs = rec.get("runs") or [run]
    return {
        "signal": frozenset(signal),
        "type": frozenset(t["type"] for t in types[:TYPES_READ] if objects),
        "chain": frozenset(_chain(run.get("reference_chain") or {}) if objects else ()),
        "stage": frozenset(_stages([r.get("stages") or {} for r in runs])),
        "site": frozenset(_sites((run.get("heap") or {}).get("stack_growth") or [])),
    }


def _chain(chain: Mapping[str, Any]) -> set[str]:
    """Each link's type (the state's own: "state list") and the private attributes and keys on
    the way; a module at the root is left out (which module a walk starts from varies by run)."""
    out: set[str] = set()
    for link in chain.get("chain") or []:
        words = link.split()
        if not words or words[0] == "module":
            continue
        out.add(words[0] if words[0] != "state" else " ".join(words[:2]))
        out.update(a or b for a, b in _PRIVATE.findall(link))
    return out


def _stages(readings: list[Mapping[str, Any]]) -> set[str]:
    """The stages holding at least STAGE_BYTES_MIN at any reading of any run ("holds Prefetch",
    and where it sits: "holds Prefetch in ParallelInterleave"); "holds nothing" where the stages
    were read and none holds that much. Nothing where they were not read (a function target, a
    TensorFlow without get_model_proto)."""
    out, read = set(), False
    for found in readings:
        read = read or bool(found.get("stages"))
        for row in found.get("stages") or []:
            if max(row.get("bytes") or [0]) >= STAGE_BYTES_MIN:
                name = _VERSIONED.sub("", row["stage"])
                out.add(f"holds {name}")
                if row.get("inside"):
                    out.add(f"holds {name} in {_VERSIONED.sub('', row['inside'])}")
    return out or ({"holds nothing"} if read else set())


def _sites(growth: list) -> set[str]:
    """Per growing site: its innermost library frames (what allocates) and its outermost two
    ("via fit": the API the user's code called); "(native)" for a site with no Python frame."""
    out = set()
    big = [g for g in growth if (g.get("bytes_per_rep") or 0) >= SITE_BYTES_MIN]
    for site in sorted(big, key=lambda g: -g["bytes_per_rep"])[:SITES_READ]:
        frames = site.get("frames") or []
        if not frames:
            out.add("(native)")
        library = [f.split(" (")[0] for f in frames if any(lib in f for lib in LIBRARIES)]
        out.update(library[:SITE_FRAMES])
        out.update(f"via {name}" for name in library[-2:])
    return out
