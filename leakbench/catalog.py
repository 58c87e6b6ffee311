"""Find scenario pairs: scenarios/NAME.py (leaky) and fixes/NAME.py (fixed)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from leakbench import expectation, version
from leakbench.contract import ContractError, Scenario, read_metadata

VARIANT_DIRS = {"leaky": "scenarios", "fixed": "fixes"}


@dataclass(frozen=True)
class Target:
    """One scenario file to measure, and the verdict its variant should give (None: unknown)."""

    scenario: Scenario
    variant: str  # "leaky", "fixed", "file" for a user's own file, or "check" (leakbench check)
    # what its record calls it ("pair"): check's TARGET string; None: the file's name
    name: str | None = None

    @property
    def pair(self) -> str:
        """The record's "pair": `name`, else the scenario file's name."""
        return self.name if self.name is not None else self.scenario.name

    @property
    def expected(self) -> expectation.Expectation:
        """What this variant should read, as its contract declares (leakbench.expectation)."""
        s = self.scenario
        return expectation.for_variant(self.variant, s.reported, s.expects, s.needs)


# The suite a wheel carries (pyproject.toml maps scenarios/, fixes/ and the committed results
# there): the root of last resort, outside any checkout.
SHIPPED = Path(__file__).resolve().parent / "suite"


def find_root(start: Path | None = None) -> Path:
    """The directory holding scenarios/ and fixes/, the one rule for it: $LEAKBENCH_ROOT, else
    a checkout (the current directory or a parent of it, else the checkout this package lives
    in: an editable install), else the copy of the suite shipped in the installed package
    (SHIPPED). Raises ContractError (one line) where there is none."""
    if os.environ.get("LEAKBENCH_ROOT"):
        root = Path(os.environ["LEAKBENCH_ROOT"])
        if not (root / "scenarios").is_dir():
            raise ContractError(f"LEAKBENCH_ROOT={root} has no scenarios/ directory")
        return root
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents, Path(__file__).resolve().parents[1], SHIPPED):
        if (candidate / "scenarios").is_dir():
            return candidate
    raise ContractError(
        "no scenarios/ directory found: not in a leakbench checkout, none shipped in the "
        f"installed package ({SHIPPED}); run from a checkout or set LEAKBENCH_ROOT"
    )


def is_shipped(root: Path) -> bool:
    """True if `root` (find_root's) is the suite shipped in the installed package, not a
    checkout: its results are read, never written."""
    return Path(root).resolve() == SHIPPED


def pair_names(root: Path) -> list[str]:
    """Names of files in scenarios/, sorted."""
    return sorted(p.stem for p in (root / "scenarios").glob("*.py") if not p.name.startswith("_"))


def targets(root: Path, names: list[str], variant: str) -> list[Target]:
    """Targets for pair names or file paths; all pairs when `names` is empty.

    variant: "leaky", "fixed" or "both" (applies to pair names).
    Raises ContractError for an unknown name or a file without the contract.
    """
    variants = list(VARIANT_DIRS) if variant == "both" else [variant]
    found = []
    for name in names or pair_names(root):
        if name.endswith(".py") or os.sep in name:
            found.append(Target(read_metadata(Path(name)), "file"))
            continue
        if not _is_file(root / "scenarios" / f"{name}.py"):
            known = ", ".join(pair_names(root))
            raise ContractError(f"unknown scenario {_short(name)} (known: {known})")
        for v in variants:
            found.append(Target(read_metadata(root / VARIANT_DIRS[v] / f"{name}.py"), v))
    return found


def source_hash(root: Path) -> str:
    """12 hex digits of SHA-256 over the catalog's files at `root` (scenarios/*.py and
    fixes/*.py: the path and bytes of each, in path order), as leakbench.version hashes the
    engine's. A record names the engine that measured it, not the scenario file it ran:
    leakbench publish files this hash beside each build's records, so that a changed scenario
    makes every build measured before it not done."""
    files = {p for d in VARIANT_DIRS.values() for p in (Path(root) / d).glob("*.py")}
    return version.files_hash(Path(root), files)


def _is_file(path: Path) -> bool:
    """Path.is_file, False where the name cannot be a file at all (too long: ENAMETOOLONG)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _short(name: str, limit: int = 80) -> str:
    """repr of a name from the command line, cut to `limit` characters."""
    text = repr(name)
    return (
        text
        if len(text) <= limit
        else f"{text[: limit - 4]}...{text[-1]} ({len(name):,} characters)"
    )
