"""Pasted documents kept on the server, so that a refresh, a shared link or a link from another
session reopens them: ``keep(text, writer)`` returns the document's key (the ``doc=`` of a link),
``find(key)`` its text.

A key is 32 hex digits (128 bits) of an HMAC-SHA-256 of the text under a secret of this server
(``.secret`` in the folder, made once): two texts cannot be made to share a key (12 hex digits of
a SHA-1 collided in 219 s of one core, so a teacher's link opened another text), and no one can
tell from outside whether a known text was pasted. The same text keeps its key, and a stored file
is compared with the text before it is reused.

They are files in one folder (``HIERATTN_DOCUMENTS``, default ``<HIERATTN_CACHE>/documents``,
itself ``~/.cache/hierattn``), shared by every worker of the app, so links survive a restart of the
server. Bounded by ``limits.KEPT_DOCUMENTS`` (count), ``KEPT_DOCUMENTS_MB`` (all together),
``KEPT_DOCUMENT_KB`` (one document: a longer one is not kept, and its link says so) and
``KEPT_DOCUMENT_DAYS`` (age since last use). Beyond the count or size, the unopened least recently
used go first, then the opened ones (a document whose link was opened moves to ``opened/``), until
the folder is 1/20 below the bound (``_prune``: a full folder is not read on every paste).

Two protections for a class's links, the first whatever identities the clients present:

- **Held**: a document pasted or opened within ``KEPT_DOCUMENT_HOLD_MINUTES`` is never let go for
  another. A client that sends no cookie is a new visitor per connection, so twenty of them could
  each fill a visitor's share; now they can fill the store, and then a new paste is not kept (its
  link says so, and works in its own session), but the teacher's link of an hour ago still opens.
- **A visitor's share**: a visitor (a browser) keeps at most ``WRITER_SHARE`` of the count and of
  the size of unopened documents; beyond it its own least recently kept go, so one visitor pasting
  140 long documents does not push out the class's older links. Counted in the app-wide store
  (``app_store``), so a visitor's share is the same on every worker and after a restart.

Files are written whole (a temporary file renamed) and read back only by a key, never a path.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import sqlite3
import tempfile
import threading
import time
from pathlib import Path

from hierattn.app import app_store
from hierattn.limits import (
    KEPT_DOCUMENT_DAYS,
    KEPT_DOCUMENT_HOLD_MINUTES,
    KEPT_DOCUMENT_KB,
    KEPT_DOCUMENTS,
    KEPT_DOCUMENTS_MB,
)

KEY = re.compile(r"[0-9a-f]{32}")
WRITER_SHARE = 1 / 8  # of the count and of the size, per visitor
SWEEP_SECONDS = 600.0  # the longest between two reads of the whole folder, while documents are kept
HEADROOM = 20  # a folder over a bound lets go down to 1/20 below it (2,000 documents: 1,900)
_LOCK = threading.Lock()  # this process's threads; the workers of an app meet in the folder and the store


def folder() -> Path:
    explicit = os.environ.get("HIERATTN_DOCUMENTS")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("HIERATTN_CACHE") or Path.home() / ".cache" / "hierattn") / "documents"


def keepable(text: str) -> bool:
    return len(text.encode("utf-8", "replace")) <= KEPT_DOCUMENT_KB.value * 1024


def _secret() -> bytes:
    """This server's key for document keys, made once (mode 0600) and kept with the documents."""
    path = folder() / ".secret"
    try:
        return bytes.fromhex(path.read_text().strip())
    except (OSError, ValueError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = secrets.token_hex(32)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write(fresh)
    except FileExistsError:  # another thread or process made it first: theirs counts
        return bytes.fromhex(path.read_text().strip())
    return bytes.fromhex(fresh)


def link_key(text: str) -> str:
    """The key of ``text``'s link (see the module); where the folder cannot be written, a plain
    SHA-256 (such a link works in its own session only: nothing is kept)."""
    data = text.encode("utf-8", "replace")
    try:
        return hmac.new(_secret(), data, hashlib.sha256).hexdigest()[:32]
    except OSError:
        return hashlib.sha256(data).hexdigest()[:32]


def _path(key: str) -> Path | None:
    """Where the document of ``key`` is (opened or not), or None."""
    for path in (folder() / "opened" / f"{key}.txt", folder() / f"{key}.txt"):
        if path.is_file():
            return path
    return None


def keep(text: str, writer: str | None = None) -> str | None:
    """Keep ``text``; its key, or None when it is too long to keep, the store is full of held
    documents (see the module) or the folder cannot be written (the link then works in this session
    only). ``writer``: the visitor, for its share."""
    if not keepable(text):
        return None
    try:
        key = link_key(text)
        existing = _path(key)
        if existing is not None:
            if existing.read_text(encoding="utf-8", errors="replace") != text.encode("utf-8", "replace").decode():
                return None  # never another text under this key
            os.utime(existing)  # used again: the last to be let go
            return key
        path = folder() / f"{key}.txt"
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", errors="replace", dir=path.parent,
                                         suffix=".part", delete=False) as out:
            out.write(text)
        os.replace(out.name, path)
        size = path.stat().st_size
        files, freed = _within_share(writer, key, size)
        _prune(path, (1 - files, size - freed))
        return key if path.is_file() else None
    except (OSError, sqlite3.Error):
        return None


def is_kept(key: str) -> bool:
    """Whether a document is kept under ``key`` (a link to it opens it for anyone)."""
    return bool(KEY.fullmatch(key)) and _path(key) is not None


def _within_share(writer: str | None, key: str, size: int) -> tuple[int, int]:
    """Within the writer's share: its own least recently kept unopened documents go first. Returns
    the documents let go and their bytes.

    The store's rows of a writer's documents that were opened or let go since are dropped only when
    the rows, those included, exceed the share: within it, nothing is let go either way, and looking
    for each file cost a paste 10 ms for a writer of 240 documents."""
    if writer is None:
        return 0, 0
    place = folder()
    mine = app_store.record_document(place, key, writer, size)
    most, budget = KEPT_DOCUMENTS.value * WRITER_SHARE, KEPT_DOCUMENTS_MB.value * 2**20 * WRITER_SHARE
    if len(mine) <= most and sum(b for _, b in mine) <= budget:
        return 0, 0
    base = os.fspath(place)
    gone = [k for k, _ in mine if not os.path.isfile(os.path.join(base, f"{k}.txt"))]  # opened, or let go
    absent = set(gone)
    mine = [(k, b) for k, b in mine if k not in absent]
    total, files, freed = sum(b for _, b in mine), 0, 0
    while len(mine) > 1 and (len(mine) > most or total > budget):
        old, size = mine.pop(0)
        total -= size
        try:
            os.unlink(os.path.join(base, f"{old}.txt"))  # an opened one (in opened/) stays
            files, freed = files + 1, freed + size
        except FileNotFoundError:
            pass
        gone.append(old)
    if gone:
        app_store.forget_documents(place, writer, gone)
    return files, freed


def find(key: str) -> str | None:
    """The kept text for ``key``, or None (never kept, let go, or too old). A document found here was
    opened by a link: it moves to ``opened/`` and outlives the unopened ones."""
    if not KEY.fullmatch(key):
        return None
    path = _path(key)
    try:
        if path is None or time.time() - path.stat().st_mtime > KEPT_DOCUMENT_DAYS.value * 86_400:
            return None
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.parent == folder():
            opened = folder() / "opened" / path.name
            opened.parent.mkdir(exist_ok=True)
            os.replace(path, opened)
            path = opened
        os.utime(path)
        return text
    except OSError:
        return None


def _prune(newest: Path, came: tuple[int, int]) -> None:
    """Let documents go until the folder is within its count, size and age: too old ones first, then
    the unopened, least recently used first, then the opened ones; never one used within the hold.
    If that is not enough, ``newest`` (just written) goes: it is not kept. ``came``: the documents
    and bytes this keep added to the folder (the new one, less the writer's own let go).

    Reading the folder (a sweep: one ``os.scandir`` pass per folder, which also finds the ``.part``
    files of interrupted writes) is what a keep cost: 2,000 documents, the default bound that a
    class server reaches in some lectures, took 11-15 ms of every paste. So the app store counts
    the folder's documents and bytes, and a keep sweeps only when the count says the folder is over
    a bound, or ``SWEEP_SECONDS`` after the last sweep (for the expired documents and stale partial
    writes, which ``find`` refuses meanwhile). A sweep over a bound lets go down to ``HEADROOM``
    below it, so that the next pastes of a full folder do not each sweep again; a sweep corrects
    the count (a document deleted by hand, one counted twice)."""
    place = folder()
    state = app_store.count_documents(place, *came)
    if state is not None:
        count, total, swept = state
        if (count <= KEPT_DOCUMENTS.value and total <= KEPT_DOCUMENTS_MB.value * 2**20
                and time.time() - swept < SWEEP_SECONDS):
            return
    with _LOCK, app_store.sweeping(place) as record:
        files, parts = [], []
        for opened, where in ((False, place), (True, place / "opened")):
            try:
                listing = os.scandir(where)
            except OSError:
                continue
            with listing:
                for entry in listing:
                    kept = entry.name.endswith(".txt")
                    if not kept and (opened or not entry.name.endswith(".part")):
                        continue
                    try:
                        stat = entry.stat()
                    except OSError:
                        continue
                    if kept:
                        files.append((opened, stat.st_mtime, stat.st_size, entry.path))
                    else:
                        parts.append((stat.st_mtime, entry.path))
        now = time.time()
        cutoff, held = now - KEPT_DOCUMENT_DAYS.value * 86_400, now - KEPT_DOCUMENT_HOLD_MINUTES.value * 60
        files.sort(key=lambda f: (f[1] >= cutoff, f[0], f[1]))  # expired, then unopened, each oldest first
        count, total = len(files), sum(size for _, _, size, _ in files)
        most, budget = KEPT_DOCUMENTS.value, KEPT_DOCUMENTS_MB.value * 2**20

        def over(most: float, budget: float) -> bool:
            return count > most or total > budget

        # over a bound: down to the headroom below it; within them: only the expired go
        lower = (most - most // HEADROOM, budget - budget // HEADROOM) if over(most, budget) else (most, budget)
        let_go = set()
        for _, used, size, path in files:
            if used >= cutoff and not over(*lower):
                break  # the rest are within their age, and the folder within its bounds
            if not (used < cutoff or used < held):
                continue
            count, total = count - 1, total - size
            Path(path).unlink(missing_ok=True)
            let_go.add(path)
        if over(most, budget):  # every other document was used within the hold
            try:
                size = newest.stat().st_size
                newest.unlink()
                count, total = count - 1, total - size
                let_go.add(os.fspath(newest))
            except FileNotFoundError:
                pass
        record(count, total, [os.path.basename(path)[:-4] for opened, _, _, path in files  # less ".txt"
                              if not opened and path not in let_go])
        for used, stale in parts:  # a write cut short by a crash
            if now - used > 3600:
                Path(stale).unlink(missing_ok=True)
