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
                      {"LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"}
                      when the fix is the allocator, not the pipeline.
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
                      memray's pass cost minutes: shuffle_fragmentation makes
                      ~6 M small allocations per epoch, and 5 tracked epochs
                      passed a 120 s timeout here. The verdict then rests on
                      the other signals.

The engine does everything else (warm-up, baseline, sampling, verdict), so a
scenario reads like a page of the tf.data guide.  `scenarios/X.py` and
`fixes/X.py` share a file name; the diff between them is the fix.

Loading executes the file, so load it only inside the measured child process
(the parent reads metadata with `read_metadata`, which does not import it).
"""
from __future__ import annotations

import ast
import importlib.util
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

SOURCES = ("caching", "dangling references", "chaining/parallelism", "stateful functions")
KINDS = ("growth", "peak")
METADATA = ("TITLE", "SOURCE", "REPETITION", "KIND", "SIZE_PARAM", "PARAMS")
OPTIONAL = ("ENV", "REQUIRES", "REPORTED", "HEAP_REPS", "EXPECTED")
EXPECTATIONS = ("fragmentation",)  # what EXPECTED may declare (leakbench.expectation.DECLARABLE)
REQUIREMENTS = ("GPU",)
FUNCTIONS = ("setup", "repetition")


class ContractError(ValueError):
    """A scenario file does not follow the contract; the message says what is wrong."""


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
                raise ContractError(f"{self.name}: parameter {key}={text!r} is not {kind.__name__}") from None
            if not _finite(value):  # nan passes `value <= 0`; inf, or an int past a float, fails later
                raise ContractError(f"{self.name}: parameter {key}={text!r} is not a finite number")
            if value <= 0:
                raise ContractError(f"{self.name}: parameter {key} must be positive, got {text}")
            params[key] = value
        return params


def _finite(value) -> bool:
    """A number that is finite as a float (what a size times a scale is computed in)."""
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


def imports_tensorflow(path: Path) -> bool:
    """True if the file's code imports tensorflow (`import tensorflow ...` or `from tensorflow ...`,
    anywhere in it), read without running it; a file that does not parse or cannot be read says False
    (read_metadata reports that). A word in a docstring or comment does not count."""
    try:
        tree = ast.parse(Path(path).read_text(), filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "tensorflow" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "tensorflow" and not node.level:
            return True
    return False


def read_metadata(path: Path) -> Scenario:
    """Read a scenario's metadata from its source, without importing it.

    The metadata must be literals (strings, a dict of numbers) so that listing
    scenarios costs no TensorFlow import.  Raises ContractError when the file is
    missing, does not parse, or lacks a name of the contract.
    """
    path = Path(path)
    if not path.is_file():
        raise ContractError(f"no scenario file at {path}")
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except SyntaxError as err:
        raise ContractError(f"{path}: does not parse: {err.msg} (line {err.lineno})") from None
    found: dict = {}
    functions = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            functions.add(node.name)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id in METADATA + OPTIONAL:
                try:
                    found[target.id] = ast.literal_eval(node.value)
                except ValueError:
                    raise ContractError(f"{path}: {target.id} must be a literal") from None
    missing = [n for n in METADATA if n not in found] + [f"{n}()" for n in FUNCTIONS if n not in functions]
    if missing:
        raise ContractError(f"{path}: not a leakbench scenario, missing {', '.join(missing)}")
    return _validated(path, found)


def _validated(path: Path, meta: dict) -> Scenario:
    if meta["KIND"] not in KINDS:
        raise ContractError(f"{path}: KIND must be one of {KINDS}, got {meta['KIND']!r}")
    source = meta["SOURCE"]
    if source not in SOURCES and "#" not in str(source):
        raise ContractError(f"{path}: SOURCE must be one of {SOURCES} or 'owner/repo#issue'")
    params = meta["PARAMS"]
    if not isinstance(params, dict) or meta["SIZE_PARAM"] not in params:
        raise ContractError(f"{path}: PARAMS must be a dict holding SIZE_PARAM {meta['SIZE_PARAM']!r}")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in params.values()):
        raise ContractError(f"{path}: PARAMS values must be numbers")
    env = meta.get("ENV", {})
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise ContractError(f"{path}: ENV must be a dict of strings")
    if meta.get("REQUIRES") not in (None, *REQUIREMENTS):
        raise ContractError(f"{path}: REQUIRES must be one of {REQUIREMENTS}, got {meta['REQUIRES']!r}")
    heap_reps = meta.get("HEAP_REPS", 0)
    if not isinstance(heap_reps, int) or isinstance(heap_reps, bool) or heap_reps < 0:
        raise ContractError(f"{path}: HEAP_REPS must be an int >= 0, got {heap_reps!r}")
    if meta.get("EXPECTED") not in (None, *EXPECTATIONS):
        raise ContractError(f"{path}: EXPECTED must be one of {EXPECTATIONS}, got {meta['EXPECTED']!r}")
    reported = meta.get("REPORTED")
    if reported is not None:
        _check_reported(path, reported)
    return Scenario(path, meta["TITLE"], source, meta["REPETITION"], meta["KIND"], meta["SIZE_PARAM"], params, env,
                    requires=meta.get("REQUIRES"), reported=reported, heap_reps=meta.get("HEAP_REPS"),
                    expects=meta.get("EXPECTED"))


def _check_reported(path: Path, reported) -> None:
    """Raise ContractError unless REPORTED has the documented shape."""
    def versions(value) -> bool:
        return isinstance(value, list) and all(isinstance(v, str) and v for v in value)

    problem = None
    if not isinstance(reported, dict):
        problem = "must be a dict"
    elif set(reported) - {"issue", "leaks_on", "fixed_in", "note"}:
        problem = f"has unknown keys {sorted(set(reported) - {'issue', 'leaks_on', 'fixed_in', 'note'})}"
    elif not isinstance(reported.get("issue"), str) or "#" not in reported["issue"]:
        problem = "needs issue 'owner/repo#N'"
    elif not versions(reported.get("leaks_on")):
        problem = "needs leaks_on, a list of version strings"
    elif "fixed_in" not in reported or not (reported["fixed_in"] is None or isinstance(reported["fixed_in"], str)):
        problem = "needs fixed_in, a version string or None"
    elif not isinstance(reported.get("note", ""), str):
        problem = "note must be a string"
    if problem:
        raise ContractError(f"{path}: REPORTED {problem}")


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
