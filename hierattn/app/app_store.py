"""What every server process of an app must agree on, and a restarted server must still know: one
SQLite database in WAL mode (the standard library's ``sqlite3``; its file locks serialise the
workers' writes), ``app-store.sqlite3`` in the runtime folder (``threads.runtime_dir``).

It holds the visitors' checkpoints (which visitor's run wrote each, and its size), the pasted
documents each visitor keeps for links (``app.documents``: a visitor's share), how many documents
and bytes the documents folder holds (so that a paste reads the folder only when it may be over its
bounds) and the background
analyses each visitor runs (``app.tasks``: at most ``per_visitor()`` at once). Limits kept in one
process's memory were per worker and forgotten on a restart (a visitor kept 5 checkpoints per
worker), and limits per visitor follow an identity the client chooses (a client that sends no
cookie is a new visitor per connection). So the per-visitor cap counts this store's rows, and
server-wide totals (``limits.VISITOR_CHECKPOINTS`` and ``VISITOR_CHECKPOINTS_MB``) bound every
visitor together, whatever identities they present. A row whose folder is gone (deleted by hand) no
longer counts.
"""
from __future__ import annotations

import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from hierattn.threads import alive, runtime_dir

FILE = "app-store.sqlite3"
SCHEMA = """CREATE TABLE IF NOT EXISTS visitor_checkpoints (
    path TEXT PRIMARY KEY,  -- the checkpoint folder, resolved
    owner TEXT NOT NULL,  -- the visitor whose run wrote it (app.visitors)
    mb REAL NOT NULL,  -- its size on disk
    written REAL NOT NULL  -- time.time() when it was recorded
);
CREATE TABLE IF NOT EXISTS kept_documents (
    folder TEXT NOT NULL,  -- the documents folder (app.documents.folder()), resolved
    key TEXT NOT NULL,  -- the document's key
    writer TEXT NOT NULL,  -- the visitor who pasted it
    bytes INTEGER NOT NULL,
    written REAL NOT NULL,  -- time.time() when it was last kept
    PRIMARY KEY (folder, key, writer)
);
CREATE INDEX IF NOT EXISTS kept_documents_by_writer ON kept_documents (folder, writer, written);
CREATE TABLE IF NOT EXISTS document_folders (
    folder TEXT PRIMARY KEY,  -- a documents folder, resolved
    files INTEGER NOT NULL,  -- its documents (opened or not) at its last sweep, and those kept since
    bytes INTEGER NOT NULL,
    swept REAL NOT NULL  -- time.time() of its last sweep (the whole folder read)
);
CREATE TABLE IF NOT EXISTS running_analyses (
    visitor TEXT NOT NULL,
    pid INTEGER NOT NULL,  -- the worker running it: a row of a worker that died no longer counts
    started REAL NOT NULL
)"""


_READY: set[Path] = set()  # store files this process has made the tables of
_OPEN: dict[tuple[int, Path], sqlite3.Connection] = {}  # this process's connection, by store file
_OPEN_LOCK = threading.RLock()


def _connect() -> sqlite3.Connection:
    path = runtime_dir() / FILE
    ready = path in _READY and path.exists()  # a file removed meanwhile is made again, tables and all
    path.parent.mkdir(parents=True, exist_ok=True)
    # autocommit; shared by this process's threads one at a time (``_store``)
    connection = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA busy_timeout=30000")
    # in WAL mode, NORMAL syncs at checkpoints, not at every commit (a paste's 7 ms went to fsync);
    # a power cut may lose the last commits, never the file
    connection.execute("PRAGMA synchronous=NORMAL")
    if not ready:
        connection.executescript(SCHEMA)  # a no-op for tables that exist
        if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":  # kept in the file: set once
            connection.execute("PRAGMA journal_mode=WAL")
        _READY.add(path)
    return connection


@contextmanager
def _store():
    """This process's connection to the store, to one thread at a time. It stays open: the last
    connection to a WAL database to close checkpoints the database and deletes its log, and a
    connection opened and closed for each call did that in every paste (3.1 of a keep's 5.0 ms of
    CPU, with 300 documents kept). One per process (a forked child opens its own) and per store
    file; a file removed meanwhile is opened again."""
    path = runtime_dir() / FILE
    key = (os.getpid(), path)
    with _OPEN_LOCK:
        connection = _OPEN.get(key)
        if connection is None or not path.exists():
            for old in [k for k in _OPEN if k[0] == key[0]]:  # another file (a test's) or one removed
                _OPEN.pop(old).close()
            connection = _OPEN[key] = _connect()
        try:
            yield connection
        except BaseException:  # a call that failed, perhaps inside its transaction: never left open, holding
            _OPEN.pop(key, None)  # the write lock against every worker; closing rolls it back
            connection.close()
            raise


def folder_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file()) / 2 ** 20


def record_checkpoint(path: Path, owner: str) -> None:
    """``owner``'s run wrote the checkpoint at ``path`` (a replacement keeps one row)."""
    with _store() as connection:
        connection.execute("INSERT OR REPLACE INTO visitor_checkpoints VALUES (?, ?, ?, ?)",
                           (str(Path(path).resolve()), owner, folder_mb(path), time.time()))


def visitor_checkpoints(root: Path) -> list[tuple[Path, str, float]]:
    """(folder, owner, MB) of every visitor's checkpoint in the checkpoints folder ``root`` that
    still exists, oldest first (another app on this machine writes into another folder)."""
    root = Path(root).resolve()
    with _store() as connection:
        rows = connection.execute("SELECT path, owner, mb FROM visitor_checkpoints ORDER BY written").fetchall()
    return [(Path(p), owner, mb) for p, owner, mb in rows if Path(p).parent == root and Path(p).is_dir()]


def owner_of(path: Path) -> str | None:
    """The visitor whose run wrote the checkpoint at ``path`` (while it exists); None for any other."""
    resolved = Path(path).resolve()
    with _store() as connection:
        row = connection.execute("SELECT owner FROM visitor_checkpoints WHERE path = ?", (str(resolved),)).fetchone()
    return row[0] if row is not None and resolved.is_dir() else None


def record_document(folder: Path, key: str, writer: str, size: int) -> list[tuple[str, int]]:
    """``writer`` kept the document ``key`` (``size`` bytes) in the documents folder ``folder``;
    returns that writer's documents there, (key, bytes), least recently kept first."""
    place = str(Path(folder).resolve())
    with _store() as connection:
        connection.execute("INSERT OR REPLACE INTO kept_documents VALUES (?, ?, ?, ?, ?)",
                           (place, key, writer, size, time.time()))
        return connection.execute("SELECT key, bytes FROM kept_documents WHERE folder = ? AND writer = ? "
                                  "ORDER BY written", (place, writer)).fetchall()


def forget_documents(folder: Path, writer: str, keys: list[str]) -> None:
    """``writer``'s documents ``keys`` no longer count in its share (let go, or opened by a link)."""
    place = str(Path(folder).resolve())
    with _store() as connection:
        connection.executemany("DELETE FROM kept_documents WHERE folder = ? AND writer = ? AND key = ?",
                               [(place, writer, key) for key in keys])


def count_documents(folder: Path, files: int, size: int) -> tuple[int, int, float] | None:
    """``files`` documents of ``size`` bytes in all came into the documents folder ``folder`` (negative:
    went); returns what it now holds, (files, bytes, time of its last sweep), or None before its first
    sweep. Counted by every worker in one transaction each, so a sum is never lost."""
    place = str(Path(folder).resolve())
    with _store() as connection:  # no RETURNING: SQLite before 3.35 has none
        connection.execute("UPDATE document_folders SET files = files + ?, bytes = bytes + ? WHERE folder = ?",
                           (files, size, place))
        return connection.execute("SELECT files, bytes, swept FROM document_folders WHERE folder = ?",
                                  (place,)).fetchone()


@contextmanager
def sweeping(folder: Path):
    """Around a sweep of the documents folder ``folder``: yields ``record(files, bytes, unopened)``, to
    be called with what the folder holds when the sweep is done (``unopened``: the keys of the
    documents no link has opened). The writers' rows of any other document go: a visitor's share
    counts only its unopened documents, and rows of documents let go would pile up over a course.
    The store's write lock is held throughout, so a document another worker keeps meanwhile is
    counted after the sweep's figure, never lost in it (it may be counted twice: too many only
    makes the next sweep come sooner)."""
    place = str(Path(folder).resolve())

    def record(files: int, size: int, unopened: list[str]) -> None:
        connection.execute("INSERT OR REPLACE INTO document_folders VALUES (?, ?, ?, ?)",
                           (place, files, size, time.time()))
        present = {(key,) for key in unopened}
        stale = [(place, key) for (key,) in connection.execute(
            "SELECT DISTINCT key FROM kept_documents WHERE folder = ?", (place,)) if (key,) not in present]
        connection.executemany("DELETE FROM kept_documents WHERE folder = ? AND key = ?", stale)

    with _store() as connection:
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield record
        finally:
            connection.execute("COMMIT")


def claim_analysis(visitor: str, most: int) -> int | None:
    """A slot for one of ``visitor``'s analyses, if it runs fewer than ``most`` on every worker of the
    app together: its id (give it back with ``release_analysis``), else None. The count and the claim
    are one transaction (``BEGIN IMMEDIATE`` takes the write lock first), so two workers cannot both
    take the last slot."""
    with _store() as connection:
        connection.execute("BEGIN IMMEDIATE")
        try:
            rows = connection.execute("SELECT rowid, pid FROM running_analyses WHERE visitor = ?",
                                      (visitor,)).fetchall()
            dead = [(rowid,) for rowid, pid in rows if pid != os.getpid() and not alive(pid)]
            connection.executemany("DELETE FROM running_analyses WHERE rowid = ?", dead)
            if len(rows) - len(dead) >= most:
                return None
            return connection.execute("INSERT INTO running_analyses VALUES (?, ?, ?)",
                                      (visitor, os.getpid(), time.time())).lastrowid
        finally:
            connection.execute("COMMIT")


def release_analysis(claim: int) -> None:
    with _store() as connection:
        connection.execute("DELETE FROM running_analyses WHERE rowid = ?", (claim,))


def forget_this_process() -> None:
    """This worker's claims go (it starts, or a previous process with its pid ended without releasing)."""
    with _store() as connection:
        connection.execute("DELETE FROM running_analyses WHERE pid = ?", (os.getpid(),))
