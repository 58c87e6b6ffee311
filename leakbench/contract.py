"""The scenario contract: what a file in scenarios/ or fixes/ must define.

A scenario is a plain Python module, loaded by path, with these names:

    TITLE       str   one line: what the pipeline does wrong (or right, in a fix).
    SOURCE      str   one of SOURCES, or a public report such as
                      "tensorflow/tensorflow#37653".
    REPETITION  str   what one repetition of work is ("one epoch over the dataset").
    KIND        str   "growth": memory should grow with each repetition;
                      "peak": the peak above baseline should scale with SIZE_PARAM.
    SIZE_PARAM  str   the name of the parameter that scales the effect.
    PARAMS      dict  parameter name -> default (int or float); holds SIZE_PARAM.
    setup(**params) -> state     builds the pipeline; called once.
    repetition(state) -> None    one repetition of work; called many times.

Optional:
    ENV         dict  environment variables for the measured process, e.g.
                      {"LD_PRELOAD": "libjemalloc.so.2"} when the fix is the
                      allocator, not the pipeline. A bare soname is searched
                      for by the dynamic loader (its cache: `ldconfig -p`), so
                      it names the library on any distribution and machine.
                      Where the loader would not find a library LD_PRELOAD
                      names, nothing runs and the record reads `skipped`,
                      naming the library and its package
                      (leakbench.engine.preload), as for a missing GPU.
    REQUIRES    str   "GPU": the pair only means something on a GPU. Where
                      TensorFlow sees none, the measured child stops after the
                      import and the record reads `skipped` ("no GPU visible
                      to TensorFlow"): not an error, not a leak, no exit code.
    REPORTED    dict  what a public report claims about TensorFlow versions,
                      for a leak it ties to some releases only, e.g.
                      {"issue": "tensorflow/tensorflow#61344",
                       "leaks_on": ["2.13.0"], "fixed_in": "2.15.0",
                       "note": "the reporter's later measurement ..."}
                      issue "owner/repo#N"; leaks_on the versions the thread
                      reports a leak on; fixed_in the first release it says is
                      free of it, or None; note (optional) the conditions in
                      words (a Python version, an OS). It is the thread's claim,
                      never a measurement: what a release does is in the
                      committed results (results/records/<machine>/tf-<v>.jsonl).
                      Its leaky variant is expected to read leak or no-leak
                      (expectation.VERSION_DEPENDENT), its fix still no-leak.
    EXPECTED    str   "fragmentation": the pair's point is allocator fragmentation,
                      not a leak, so its leaky variant should read that
                      (leakbench.expectation). Scenarios (leaky) only.
    HEAP_REPS   int   at most this many repetitions in memray's heap pass (0:
                      no heap pass), for a pipeline whose allocations make
                      memray's pass cost minutes: memray records every one,
                      and a shuffle of small tensors makes millions per epoch
                      (shuffle_fragmentation: docs/measurements.md, "memray").
                      The verdict then rests on the other signals.

The engine does everything else (warm-up, baseline, sampling, verdict), so a
scenario reads like a page of the tf.data guide.  `scenarios/X.py` and
`fixes/X.py` share a file name; the diff between them is the fix.

Loading executes the file, so load it only inside the measured child process
(the parent reads metadata with `read_metadata`, which does not import it).

`read_metadata` checks the contract once, from the syntax tree: FIELDS below is
the one table of its names, the type of each literal and the rule it follows
(docs/check.md shows it as a table). A file that breaks it is refused with one
ContractError line naming the file and the field: not a regular file, over
MAX_BYTES, not UTF-8, not Python, nested too deeply for the parser, a name
missing, assigned twice, not a literal, of the wrong type or out of its rule, or
setup()/repetition() unable to take PARAMS/the state.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from leakbench.contract_rules import (
    EXPECTATIONS,
    FUNCTIONS,
    KINDS,
    REQUIREMENTS,
    _a,
    _env,
    _finite,
    _functions,
    _heap_reps,
    _of_type,
    _one_line,
    _one_of,
    _params,
    _reported,
    _shown,
    _shown_path,
    _size_param,
    _source,
    preloads,
)

# re-exported: callers read them here (contract.SOURCES, contract.ISSUE)
from leakbench.contract_rules import ISSUE as ISSUE
from leakbench.contract_rules import SOURCES as SOURCES

# The error every function here raises; read_metadata reads the file's tree with parse
from leakbench.scenario_source import ContractError, parse


@dataclass(frozen=True)
class Scenario:
    """Metadata of one scenario file, read without executing it."""

    path: Path
    title: str
    source: str
    repetition: str
    kind: str
    size_param: str
    params: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    requires: str | None = None  # REQUIRES: "GPU" or None
    reported: dict | None = None  # REPORTED: a report's claim about TF versions, or None
    heap_reps: int | None = None  # HEAP_REPS: a cap on memray's heap pass (0: none), or None
    expects: str | None = None  # EXPECTED: "fragmentation", or None (a leak)

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def needs(self) -> str | None:
        """What a machine may lack for this file to be measured, in words: REQUIRES ("GPU"), else
        the libraries ENV's LD_PRELOAD names ("libtcmalloc_minimal.so.4"), else None. Where it
        lacks it the record reads `skipped`, and that passes (leakbench.expectation)."""
        return self.requires or " ".join(preloads(self.env.get("LD_PRELOAD", ""))) or None

    def with_params(self, overrides: dict[str, str]) -> dict:
        """Defaults updated by `overrides` (name -> text from the command line).

        Each value is converted to the type of its default.
        Raises ContractError for an unknown name or a value of the wrong type.
        """
        params = dict(self.params)
        for key, text in overrides.items():
            if key not in params:
                known = ", ".join(sorted(params)) or "none"
                raise ContractError(f"{self.name}: unknown parameter {key!r} (known: {known})")
            kind = type(params[key])
            try:
                value = kind(text)
            except (TypeError, ValueError):
                raise ContractError(
                    f"{self.name}: parameter {key}={text!r} is not {kind.__name__}"
                ) from None
            # nan passes `value <= 0`; inf, or an int past a float, fails later
            if not _finite(value):
                raise ContractError(f"{self.name}: parameter {key}={text!r} is not a finite number")
            if value <= 0:
                raise ContractError(f"{self.name}: parameter {key} must be positive, got {text}")
            params[key] = value
        return params


# --- the contract's fields: name, Python type of the
# literal, required, rule (leakbench.contract_rules)


@dataclass(frozen=True)
class Field:
    """One name of the contract: the type of its literal, whether a scenario must define it, and the
    rule its value follows beyond the type (None: any value of the type)."""

    name: str
    type: type
    required: bool
    rule: Callable | None
    means: str  # what it is, in words (the type error says it)


FIELDS = (
    Field(
        "TITLE", str, True, _one_line, "one line: what the pipeline does wrong (or right, in a fix)"
    ),
    Field("SOURCE", str, True, _source, "a seed source or a public report 'owner/repo#N'"),
    Field("REPETITION", str, True, _one_line, "one line: what one repetition of work is"),
    Field("KIND", str, True, _one_of(KINDS), f"one of {KINDS}"),
    Field("SIZE_PARAM", str, True, _size_param, "the name of the parameter that scales the effect"),
    Field("PARAMS", dict, True, _params, "parameter name -> default number"),
    Field("ENV", dict, False, _env, "environment variable -> value for the measured process"),
    Field("REQUIRES", str, False, _one_of(REQUIREMENTS), f"one of {REQUIREMENTS}"),
    Field("REPORTED", dict, False, _reported, "a public report's claim about TensorFlow versions"),
    Field("HEAP_REPS", int, False, _heap_reps, "a cap on memray's heap pass"),
    Field("EXPECTED", str, False, _one_of(EXPECTATIONS), f"one of {EXPECTATIONS}"),
)
METADATA = tuple(f.name for f in FIELDS if f.required)
OPTIONAL = tuple(f.name for f in FIELDS if not f.required)


def read_metadata(path: Path) -> Scenario:
    """Read a scenario's metadata from its source, without importing it.

    The metadata must be literals (strings, a dict of numbers) so that listing
    scenarios costs no TensorFlow import.  Raises ContractError, one line naming
    the file and the field, when the file is missing or not a regular file, is
    not UTF-8, does not parse, or breaks a rule of FIELDS (the first one broken).
    """
    path = Path(path)
    tree = parse(path)
    shown = _shown_path(path)
    names = {f.name: f for f in FIELDS}
    found: dict = {}
    functions: dict = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions[node.name] = node
            continue
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if not (isinstance(target, ast.Name) and target.id in names):
            continue
        if target.id in found:
            raise ContractError(
                f"{shown}: {target.id} is assigned twice (line {node.lineno}); "
                "the metadata is one literal each"
            )
        try:
            found[target.id] = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            # TypeError: an unhashable key ({[1]: 2}); RecursionError: nested too deeply
            raise ContractError(
                f"{shown}: {target.id} must be a literal ({names[target.id].means}), "
                f"line {node.lineno}"
            ) from None
    missing = [n for n in METADATA if n not in found] + [
        f"{n}()" for n in FUNCTIONS if n not in functions
    ]
    if missing:
        raise ContractError(f"{shown}: not a leakbench scenario, missing {', '.join(missing)}")
    for f in FIELDS:  # types first: a rule may look at another field
        if f.name in found and not _of_type(found[f.name], f.type):
            raise ContractError(
                f"{shown}: {f.name} must be {_a(f.type)} ({f.means}), "
                f"got {_a(type(found[f.name]))} {_shown(found[f.name])}"
            )
    for f in FIELDS:
        problem = f.rule(found[f.name], found) if f.name in found and f.rule else None
        if problem:
            raise ContractError(f"{shown}: {f.name} {problem}")
    problem = _functions(functions, found["PARAMS"])
    if problem:
        raise ContractError(f"{shown}: {problem}")
    return Scenario(
        path,
        found["TITLE"],
        found["SOURCE"],
        found["REPETITION"],
        found["KIND"],
        found["SIZE_PARAM"],
        found["PARAMS"],
        found.get("ENV", {}),
        requires=found.get("REQUIRES"),
        reported=found.get("REPORTED"),
        heap_reps=found.get("HEAP_REPS"),
        expects=found.get("EXPECTED"),
    )


def load_module(path: Path) -> ModuleType:
    """Execute a scenario file and return its module (this imports TensorFlow).

    Raises ContractError for a file Python cannot load as a module (not .py).
    """
    path = Path(path)
    spec = importlib.util.spec_from_file_location(f"leakbench_scenario_{path.stem}", path)
    if spec is None or spec.loader is None:  # not a .py file: Python has no loader for it
        raise ContractError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pickling and tf.function tracing look modules up here
    spec.loader.exec_module(module)
    return module
