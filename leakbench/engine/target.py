"""Check targets: a user's own pipeline, adapted to the scenario contract.

`leakbench check TARGET` measures code that is not a scenario file:

    FILE.py:NAME    NAME defined in the file FILE.py
    module:NAME     NAME in an importable module (dotted names allowed)
    FILE.py         a scenario file (leakbench.contract): measured as `run` does

NAME is either a function returning a `tf.data.Dataset` (a dataset factory:
called once in setup; one repetition iterates the dataset to its end), a
`tf.data.Dataset` itself, or a zero-argument function doing one repetition
of work (it is called once in setup too, to learn which it is: that call is
one more warm-up repetition).

`parse` runs in the parent and checks only what can be checked without
executing the target (file exists, module found, NAME well formed). `load`
runs in the measured child: it executes the target and returns an object
with `setup(**params)` and `repetition(state)`, so the child runs it with the
one protocol it runs scenarios with. Whatever is wrong with NAME (missing,
not callable, needs arguments, raises) is raised there as a ContractError
with a one-line message, and the record's verdict is `error`.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path

from leakbench.contract import ContractError, load_module


@dataclass(frozen=True)
class CheckTarget:
    """A parsed TARGET. Exactly one of `path` and `module`
    is set; `name` is None for a scenario file."""

    spec: str
    path: Path | None
    module: str | None
    name: str | None

    def as_config(self) -> dict:
        """What the child needs to load it (JSON)."""
        return {
            "spec": self.spec,
            "path": self.path and str(self.path.resolve()),
            "module": self.module,
            "name": self.name,
        }


def parse(spec: str) -> CheckTarget:
    """Parse FILE.py:NAME, module:NAME or FILE.py. Raises ContractError with one line."""
    text = (spec or "").strip()
    where, sep, name = text.rpartition(":")
    if not sep:
        if text.endswith(".py"):
            path = Path(text)
            if not path.is_file():
                raise ContractError(f"no file at {path}")
            return CheckTarget(text, path, None, None)
        raise ContractError(
            f"{text!r}: give FILE.py:NAME or module:NAME (NAME: a dataset factory or a "
            "zero-argument function)"
        )
    if not name.isidentifier() and not all(p.isidentifier() for p in name.split(".")):
        raise ContractError(f"{text!r}: {name!r} is not a Python name")
    if not where:
        raise ContractError(f"{text!r}: nothing before ':' (give FILE.py:NAME or module:NAME)")
    if where.endswith(".py") or "/" in where or "\\" in where:
        path = Path(where)
        if not path.is_file():
            raise ContractError(f"no file at {path}")
        if path.suffix != ".py":
            raise ContractError(f"{path} is not a Python file (FILE.py:NAME)")
        return CheckTarget(text, path, None, name)
    if not all(p.isidentifier() for p in where.split(".")):
        raise ContractError(f"{text!r}: {where!r} is neither a .py file nor a module name")
    top = where.split(".")[0]
    # Only the top-level package is looked up: finding
    # a submodule would import (execute) its parents.
    if top not in sys.modules and importlib.util.find_spec(top) is None:
        raise ContractError(
            f"no module named {top!r} (for {where!r}; is it installed, or run from its directory?)"
        )
    return CheckTarget(text, None, where, name)


def load(config: dict):
    """In the child: import the target and return its scenario-like adapter."""
    if config["path"]:
        path = Path(config["path"])
        sys.path.insert(0, str(path.parent))  # the file's own imports of its neighbours
        module = load_module(path)
        where = path.name
    else:
        module = importlib.import_module(config["module"])
        where = config["module"]
    obj = module
    for part in config["name"].split("."):
        if not hasattr(obj, part):
            known = sorted(
                n
                for n, v in vars(module).items()
                if callable(v)
                and not n.startswith("_")
                and getattr(v, "__module__", None) == module.__name__
            )
            hint = f" (it defines: {', '.join(known)})" if known else ""
            raise ContractError(f"{where} has no name {config['name']!r}{hint}")
        obj = getattr(obj, part)
    return Adapted(obj, f"{where}:{config['name']}")


def is_dataset(obj) -> bool:
    """True for a tf.data.Dataset, without importing TensorFlow when the target did not."""
    tf = sys.modules.get("tensorflow")
    return tf is not None and isinstance(obj, tf.data.Dataset)


# What one repetition is, in the record's words ("repetition"), for each kind of target.
REPETITIONS = {"dataset": "one pass over the dataset", "function": "one call of the function"}


class Adapted:
    """A dataset factory, a dataset or a repetition function, behind setup/repetition.

    kind: "dataset" or "function", known after setup; repetition_text says what one repetition
    then is (REPETITIONS). The child reports it (result "repetition"), and the record takes it in
    place of the "one repetition of NAME" check wrote before the target ran (analysis.record.build).
    """

    def __init__(self, obj, label: str):
        self.obj = obj
        self.label = label
        self.kind: str | None = None

    def setup(self, **_params):
        if is_dataset(self.obj):
            self.kind = "dataset"
            return self.obj
        if not callable(self.obj):
            raise ContractError(
                f"{self.label} is a {type(self.obj).__name__} object: neither a tf.data.Dataset, a "
                "function returning one, nor a zero-argument function"
            )
        try:
            required = [
                p.name
                for p in inspect.signature(self.obj).parameters.values()
                if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            ]
        except (TypeError, ValueError):  # builtins without a signature: let the call say
            required = []
        if required:
            raise ContractError(
                f"{self.label} takes arguments ({', '.join(required)}): give a function "
                "that needs none"
            )
        result = self.obj()
        if is_dataset(result):
            self.kind = "dataset"
            return result
        self.kind = "function"
        return None

    @property
    def repetition_text(self) -> str | None:
        """What one repetition is (REPETITIONS), None before setup has learned the kind."""
        return REPETITIONS.get(self.kind) if self.kind else None

    def repetition(self, state) -> None:
        if self.kind == "dataset":
            for _ in state:
                pass
        else:
            self.obj()
