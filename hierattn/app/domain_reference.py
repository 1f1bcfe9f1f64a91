"""The out-of-domain check's reference (``analysis.domain.reference``: the model's test documents
read once), computed once per model for the whole server and kept on disk: every worker process
reads the same file, a restart reads it again, and only the first worker to need it computes it,
the others waiting on a file lock rather than computing it beside it. A class's first minute, when
every worker pastes its first document, no longer pays for it once per worker.

The file is named by the checkpoint's content digest and the reference documents, so a retrained
checkpoint of the same name or another split gets its own; it lives in ``<HIERATTN_CACHE>/domain``
(default ``~/.cache/hierattn/domain``)."""
from __future__ import annotations

import fcntl
import hashlib
import os
from functools import lru_cache
from pathlib import Path

from hierattn.analysis import domain


def cache_root() -> Path:
    return Path(os.environ.get("HIERATTN_CACHE") or Path.home() / ".cache" / "hierattn") / "domain"


@lru_cache(maxsize=64)
def _checkpoint_digest(folder: str, stamp: float) -> str:
    from hierattn.analysis.tour.record import checkpoint_digest

    return checkpoint_digest(Path(folder))


def reference_file(folder: Path, stamp: float, texts: list[str], source: str) -> Path:
    """Where the reference of the checkpoint at ``folder`` (its files' time ``stamp``) over ``texts``
    is kept."""
    documents = hashlib.sha256("\x00".join([source, *texts]).encode("utf-8", "replace")).hexdigest()[:16]
    return cache_root() / f"{_checkpoint_digest(str(folder), stamp)}-{documents}.safetensors"


def read(path: Path) -> domain.DomainReference | None:
    """The kept reference, or None: cheap (a file of at most a few MB), so a page run may call it."""
    return domain.load_reference(path) if path.is_file() else None


def computed_once(classifier, texts: list[str], source: str, path: Path, progress) -> domain.DomainReference:
    """The reference at ``path``, computed and written there unless another process has done so:
    the first to take the lock computes, the others wait for it and read its file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            found = read(path)
            if found is not None:
                return found
            ref = domain.reference(classifier, texts, source, progress)
            domain.save_reference(ref, path)
            return ref
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
