"""Pasted documents kept by their content, so that a refresh, a shared link or a link from another
session reopens them: ``keep(text)`` returns the document's key (12 hex digits of its SHA-1, the
``doc=`` of a link), ``find(key)`` its text.

They are files in one folder (``HIERATTN_DOCUMENTS``, default ``<HIERATTN_CACHE>/documents``,
itself ``~/.cache/hierattn``), so links survive a restart of the server. Bounded by
``limits.KEPT_DOCUMENTS`` (count), ``KEPT_DOCUMENTS_MB`` (all together), ``KEPT_DOCUMENT_KB``
(one document: a longer one is not kept, and its link says so) and ``KEPT_DOCUMENT_DAYS`` (age
since last use); beyond them the least recently used go first. Files are written whole
(a temporary file renamed) and read back only by a key that is 12 hex digits, never a path.
"""
from __future__ import annotations

import os
import re
import tempfile
import threading
import time
from pathlib import Path

from hierattn.limits import KEPT_DOCUMENT_DAYS, KEPT_DOCUMENT_KB, KEPT_DOCUMENTS, KEPT_DOCUMENTS_MB

KEY = re.compile(r"[0-9a-f]{12}")
_LOCK = threading.Lock()


def folder() -> Path:
    explicit = os.environ.get("HIERATTN_DOCUMENTS")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("HIERATTN_CACHE") or Path.home() / ".cache" / "hierattn") / "documents"


def keepable(text: str) -> bool:
    return len(text.encode("utf-8", "replace")) <= KEPT_DOCUMENT_KB.value * 1024


def keep(text: str, key: str) -> bool:
    """Keep ``text`` under ``key`` (``widgets.document_key(text)``); False when it is too long to
    keep or the folder cannot be written (the link then works in this session only)."""
    if not KEY.fullmatch(key) or not keepable(text):
        return False
    path = folder() / f"{key}.txt"
    try:
        if path.exists():
            os.utime(path)  # used again: the last to be let go
            return True
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", errors="replace", dir=path.parent,
                                         suffix=".part", delete=False) as out:
            out.write(text)
        os.replace(out.name, path)
        _prune()
        return True
    except OSError:
        return False


def find(key: str) -> str | None:
    """The kept text for ``key``, or None (never kept, let go, or too old)."""
    if not KEY.fullmatch(key):
        return None
    path = folder() / f"{key}.txt"
    try:
        if time.time() - path.stat().st_mtime > KEPT_DOCUMENT_DAYS.value * 86_400:
            return None
        text = path.read_text(encoding="utf-8", errors="replace")
        os.utime(path)
        return text
    except OSError:
        return None


def _prune() -> None:
    """Let the oldest go until the folder is within its count, size and age."""
    with _LOCK:
        files = []
        for path in folder().glob("*.txt"):
            try:
                stat = path.stat()
            except OSError:
                continue
            files.append((stat.st_mtime, stat.st_size, path))
        files.sort()  # least recently used first
        cutoff = time.time() - KEPT_DOCUMENT_DAYS.value * 86_400
        total = sum(size for _, size, _ in files)
        budget = KEPT_DOCUMENTS_MB.value * 2**20
        while files and (len(files) > KEPT_DOCUMENTS.value or total > budget or files[0][0] < cutoff):
            _, size, path = files.pop(0)
            total -= size
            path.unlink(missing_ok=True)
        for stale in folder().glob("*.part"):  # a write cut short by a crash
            try:
                if time.time() - stale.stat().st_mtime > 3600:
                    stale.unlink(missing_ok=True)
            except OSError:
                continue
