"""The shape library: calibration's designed cases (docs/calibration.md, "The shape library").

A design is a file of leakbench/calibrate/designs/ and what it is: its holder, its shape (one of
stats.SHAPES), the parameters it is run with, and whether it leaks. DESIGNS is the one table of
them; GROUPS are --holders' group words; resolve reads --holders' words, params_for a run's
parameters at a size (bytes kept per repetition). Nothing is measured here
(leakbench.calibrate.calibration measures the cases).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from leakbench.calibrate import stats
from leakbench.contract import read_metadata

FOLDER = Path(__file__).parent / "designs"


@dataclass(frozen=True)
class Design:
    """A designed case's file and what it is. name: what --holders and the result's "holder" key
    say; holder: what keeps the bytes ("python" or "tensorflow"); shape: one of stats.SHAPES;
    params: set over the file's PARAMS (then the size: params_for); leaks: True for a designed
    leak (BYTES_PER_REP per repetition on average), False for a control shape (bounded cache,
    sawtooth, one-off jump), which should read no-leak at every size."""

    name: str
    path: Path
    holder: str
    shape: str
    params: Mapping[str, int] = field(default_factory=dict, hash=False)
    leaks: bool = True


def _designs(*found: Design) -> dict[str, Design]:
    for d in found:
        assert d.holder in ("python", "tensorflow") and d.shape in stats.SHAPES, d
    return {d.name: d for d in found}


def _py(name: str, file: str, shape: str, leaks: bool = True, **params: int) -> Design:
    return Design(name, FOLDER / file, "python", shape, params, leaks)


def _tf(name: str, file: str, shape: str, leaks: bool = True, **params: int) -> Design:
    return Design(name, FOLDER / file, "tensorflow", shape, params, leaks)


# The one table of designs (docs/calibration.md, "The shape library"). The first three names are
# the holders of results made before the shape library: they stay as they are.
DESIGNS = _designs(
    _py("python", "python_held.py", "steady"),
    _tf("tensorflow", "tensorflow_held.py", "steady"),
    # tensorflow_held.py with TF_ONEDNN_USE_SYSTEM_ALLOCATOR=1: in no group
    _tf("tensorflow-system-allocator", "tensorflow_system_allocator.py", "steady"),
    _py("python-bytearray", "python_bytearray.py", "lumpy"),
    _py("python-list", "python_list.py", "lumpy"),
    _py("python-dict", "python_dict.py", "lumpy"),
    _py("python-numpy", "python_numpy.py", "lumpy"),
    _tf("tensorflow-concat", "tensorflow_concat.py", "lumpy"),
    _py("python-moves", "python_mmap_move.py", "moves"),
    *(_py(f"python-rare{n}", "python_rare_steps.py", "rare steps", every=n) for n in (4, 8)),
    *(
        _tf(f"tensorflow-rare{n}", "tensorflow_rare_steps.py", "rare steps", every=n)
        for n in (4, 8)
    ),
    *(
        _py(f"python-cache{n}", "python_cache.py", "bounded cache", False, entries=n)
        for n in (3, 6, 12, 24)
    ),
    *(
        _tf(f"tensorflow-cache{n}", "tensorflow_cache.py", "bounded cache", False, entries=n)
        for n in (3, 6, 12, 24)
    ),
    _py("python-sawtooth", "python_sawtooth.py", "sawtooth", False, every=8),
    _tf("tensorflow-sawtooth", "tensorflow_sawtooth.py", "sawtooth", False, every=8),
    _py("python-jump", "python_jump.py", "one-off jump", False),
    _tf("tensorflow-jump", "tensorflow_jump.py", "one-off jump", False),
)
# --holders' group words: each stands for these designs, in DESIGNS' order
_SHAPES = [d for d in DESIGNS.values() if d.name != "tensorflow-system-allocator"]
GROUPS = {
    "shapes": [d.name for d in _SHAPES],
    "python-shapes": [d.name for d in _SHAPES if d.holder == "python"],
    "tensorflow-shapes": [d.name for d in _SHAPES if d.holder == "tensorflow"],
}


def resolve(words: list[str]) -> list[str]:
    """--holders' words (design names and GROUPS' words) -> design names, each once, in the order
    given. Raises ValueError, one line, naming the unknown words (or that none was given)."""
    unknown = [w for w in words if w not in DESIGNS and w not in GROUPS]
    if unknown or not words:
        raise ValueError(
            f"unknown {', '.join(unknown) or 'none given'} (known: {', '.join(DESIGNS)}; "
            f"groups: {', '.join(GROUPS)})"
        )
    names = [n for w in words for n in GROUPS.get(w, [w])]
    return list(dict.fromkeys(names))


def params_for(design: Design, bytes_per_rep: int) -> dict:
    """A run's parameters: the design file's PARAMS, then the design's own, then the size
    (bytes_per_rep: bytes kept per repetition, under the file's size parameter)."""
    scenario = read_metadata(design.path)
    return {**scenario.params, **design.params, scenario.size_param: bytes_per_rep}
