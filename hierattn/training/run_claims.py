"""Training runs seen by every server process of one app (``hierattn app --workers N``).

One app served by several processes behind a proxy must keep one cap on the runs that train at
once, refuse two runs that would write the same checkpoint, and count one visitor's runs once,
whichever process started them. Each process's ``JobManager`` keeps its own jobs in memory; the
processes of one app (``HIERATTN_APP_ID``, set by ``hierattn app --workers``) also write a claim
per active run, a small JSON file in ``<runtime>/runs-<app id>/``, made and counted under one
``fcntl`` lock so that two processes cannot both take the last slot. A claim names the server
process that holds it and is ignored (and swept) once that process is gone, like the thread
census's entries. A server of one process (``streamlit run app.py``) has no app id and keeps
everything in memory, as before.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hierattn.threads import alive, runtime_dir

APP_ID = "HIERATTN_APP_ID"


@dataclass(frozen=True)
class Claim:
    job: str
    out: str  # the checkpoint folder it writes, resolved
    owners: tuple[str, ...]  # the visitors who started or reopened it


def _folder() -> Path | None:
    app = os.environ.get(APP_ID, "").strip()
    if not app or not app.replace("-", "").isalnum():
        return None
    return runtime_dir() / f"runs-{app}"


class Claims:
    """The other processes' active runs, read under the lock; ``claim`` adds one of this process."""

    def __init__(self, folder: Path | None):
        self.folder = folder

    def others(self) -> list[Claim]:
        if self.folder is None:
            return []
        found = []
        for path in self.folder.glob("*.json"):
            try:
                entry = json.loads(path.read_text())
                pid = int(entry["pid"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if not alive(pid):
                path.unlink(missing_ok=True)
                continue
            if pid != os.getpid():
                found.append(Claim(str(entry["job"]), str(entry["out"]), tuple(entry.get("owners") or ())))
        return found

    def claim(self, job: str, out: Path, owners: set[str]) -> None:
        if self.folder is None:
            return
        path = self.folder / f"{os.getpid()}-{job}.json"
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps({"pid": os.getpid(), "job": job, "out": str(out.resolve()),
                                         "owners": sorted(owners)}))
        os.replace(temporary, path)


@contextmanager
def shared() -> Iterator[Claims]:
    """The app's claims, held under its lock while the block decides (nothing when the app is one
    process)."""
    folder = _folder()
    if folder is None:
        yield Claims(None)
        return
    import fcntl

    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield Claims(folder)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def release(job: str) -> None:
    """The run ``job`` of this process ended: its slot is free for every process."""
    folder = _folder()
    if folder is not None:
        (folder / f"{os.getpid()}-{job}.json").unlink(missing_ok=True)
