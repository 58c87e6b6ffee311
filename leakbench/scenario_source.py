"""A scenario file's source, read without running it: its syntax tree (`parse`, which refuses
anything but a regular UTF-8 Python file of at most contract_rules.MAX_BYTES) and whether it
imports TensorFlow. The scenario contract (leakbench.contract) reads its fields from the tree.
"""

from __future__ import annotations

import ast
from pathlib import Path

from leakbench import jsonfile
from leakbench.contract_rules import MAX_BYTES, _shown_path


class ContractError(ValueError):
    """A scenario file does not follow the contract; the message says what is wrong, in one line."""


def imports_tensorflow(path: Path) -> bool:
    """True if the file's code imports tensorflow (`import tensorflow ...` or `from tensorflow ...`,
    anywhere in it), read without running it; a file that does not parse or cannot be read says
    False (leakbench.contract.read_metadata reports that). A word in a docstring or comment does
    not count."""
    try:
        tree = parse(Path(path))
    except ContractError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
            a.name.split(".")[0] == "tensorflow" for a in node.names
        ):
            return True
        if (
            isinstance(node, ast.ImportFrom)
            and (node.module or "").split(".")[0] == "tensorflow"
            and not node.level
        ):
            return True
    return False


def parse(path: Path) -> ast.Module:
    """The file's AST. ContractError (one line) for anything but a regular UTF-8 file of at most
    MAX_BYTES holding Python that parses (a FIFO or a device is never opened)."""
    shown = _shown_path(path)
    try:
        if not path.exists() and not path.is_symlink():
            raise ContractError(f"no scenario file at {shown}")
    except OSError as e:  # a name too long
        raise ContractError(f"no scenario file at {shown} ({e.strerror or e})") from None
    try:
        data = jsonfile.read_bytes(path, MAX_BYTES)
    except jsonfile.Unreadable as e:
        raise ContractError(f"{shown}: not a scenario file: it {e.reason}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ContractError(
            f"{shown}: not UTF-8 (byte {data[e.start]:#04x} at offset {e.start}); "
            "scenario files are UTF-8 text"
        ) from None
    try:
        return ast.parse(text, filename=str(path))
    except SyntaxError as err:
        msg = " ".join(str(err.msg).split())
        where = f" (line {err.lineno})" if err.lineno else ""
        raise ContractError(f"{shown}: does not parse: {msg}{where}") from None
    except (RecursionError, MemoryError):
        raise ContractError(f"{shown}: does not parse: nested too deeply") from None
    except ValueError as err:  # a NUL byte, before Python 3.12
        raise ContractError(f"{shown}: does not parse: {' '.join(str(err).split())}") from None
