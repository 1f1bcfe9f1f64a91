"""A run's name: the checkpoint folder it writes, checked before anything is trained."""
from __future__ import annotations

import re
from pathlib import Path

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Names Windows reserves for devices; refused everywhere so checkpoints copy between systems.
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))}


class JobError(ValueError):
    """A run cannot start; the message is for the user."""


def validate_run_name(name: str, root: Path, replace_existing: bool = False) -> Path:
    """The checkpoint directory for ``name`` under ``root``, or a JobError saying what is wrong."""
    name = name or ""
    if not _NAME.fullmatch(name):
        raise JobError("a run name is 1 to 64 letters, digits, '-' or '_' (no spaces, dots or slashes)")
    if name.lower() in _RESERVED:
        raise JobError(f"'{name}' is a reserved device name on Windows; choose another")
    if name.startswith(("-", "_")):
        raise JobError("a run name starts with a letter or a digit")
    out = root / name
    if out.exists() and not replace_existing:
        raise JobError(f"a checkpoint named '{name}' already exists; tick 'replace' to overwrite it")
    return out
