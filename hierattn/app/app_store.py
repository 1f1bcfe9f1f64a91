"""What every server process of an app must agree on, and a restarted server must still know: one
SQLite database in WAL mode (the standard library's ``sqlite3``; its file locks serialise the
workers' writes), ``app-store.sqlite3`` in the runtime folder (``threads.runtime_dir``).

It holds the visitors' checkpoints: which visitor's run wrote each, and its size. Limits kept in one
process's memory were per worker and forgotten on a restart (a visitor kept 5 checkpoints per
worker), and limits per visitor follow an identity the client chooses (a client that sends no
cookie is a new visitor per connection). So the per-visitor cap counts this store's rows, and
server-wide totals (``limits.VISITOR_CHECKPOINTS`` and ``VISITOR_CHECKPOINTS_MB``) bound every
visitor together, whatever identities they present. A row whose folder is gone (deleted by hand) no
longer counts.
"""
from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from pathlib import Path

from hierattn.threads import runtime_dir

FILE = "app-store.sqlite3"
SCHEMA = """CREATE TABLE IF NOT EXISTS visitor_checkpoints (
    path TEXT PRIMARY KEY,  -- the checkpoint folder, resolved
    owner TEXT NOT NULL,  -- the visitor whose run wrote it (app.visitors)
    mb REAL NOT NULL,  -- its size on disk
    written REAL NOT NULL  -- time.time() when it was recorded
)"""


def _connect() -> sqlite3.Connection:
    path = runtime_dir() / FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path, timeout=30, isolation_level=None)  # autocommit
    connection.execute("PRAGMA busy_timeout=30000")
    connection.execute(SCHEMA)  # a no-op once the table exists, even if the file was removed meanwhile
    if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":  # kept in the file: set once
        connection.execute("PRAGMA journal_mode=WAL")
    return connection


def folder_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file()) / 2 ** 20


def record_checkpoint(path: Path, owner: str) -> None:
    """``owner``'s run wrote the checkpoint at ``path`` (a replacement keeps one row)."""
    with closing(_connect()) as connection:
        connection.execute("INSERT OR REPLACE INTO visitor_checkpoints VALUES (?, ?, ?, ?)",
                           (str(Path(path).resolve()), owner, folder_mb(path), time.time()))


def visitor_checkpoints(root: Path) -> list[tuple[Path, str, float]]:
    """(folder, owner, MB) of every visitor's checkpoint in the checkpoints folder ``root`` that
    still exists, oldest first (another app on this machine writes into another folder)."""
    root = Path(root).resolve()
    with closing(_connect()) as connection:
        rows = connection.execute("SELECT path, owner, mb FROM visitor_checkpoints ORDER BY written").fetchall()
    return [(Path(p), owner, mb) for p, owner, mb in rows if Path(p).parent == root and Path(p).is_dir()]


def owner_of(path: Path) -> str | None:
    """The visitor whose run wrote the checkpoint at ``path`` (while it exists); None for any other."""
    resolved = Path(path).resolve()
    with closing(_connect()) as connection:
        row = connection.execute("SELECT owner FROM visitor_checkpoints WHERE path = ?", (str(resolved),)).fetchone()
    return row[0] if row is not None and resolved.is_dir() else None
