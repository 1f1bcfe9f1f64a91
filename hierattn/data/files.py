"""Reading a file named by a user or a checkpoint, never more than a limit and never blocking; and
the file-system steps of writing a checkpoint folder atomically (``checkpoint.writing.save_checkpoint``).

A path can name a device (``/dev/zero`` never ends), a FIFO (a read waits forever, and holds every
lock its reader holds), a directory, or a huge file. Every file the app or the command line reads
because someone named it goes through here: it is opened without blocking, must be a regular file,
and is read up to its limit, so the refusal comes before the cost.
"""
from __future__ import annotations

import ctypes
import errno
import io
import os
import re
import shutil
import stat
from pathlib import Path

from hierattn.limits import Limit, LimitExceeded


class NotAFile(ValueError):
    """The path names something other than a regular file; the message says what."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: str | Path) -> io.BufferedReader:
    """``path`` opened for reading in binary, if it is a regular file (FileNotFoundError when it
    does not exist, NotAFile when it is a device, a pipe or a folder). The open never blocks: a FIFO
    is opened non-blocking, then refused."""
    path = Path(path)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotAFile(f"{path} is {_kind(mode)}, not a file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | Path, limit: Limit, subject: str = "") -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` (a size in MB): a larger file is
    refused with the limit's message, after reading at most one byte past it."""
    cap = int(limit.value * 2**20)
    with open_regular(path) as f:
        data = f.read(cap + 1)
    if len(data) > cap:
        size = max(os.path.getsize(path), len(data)) / 2**20
        raise LimitExceeded(limit.message(size, subject, f"{Path(path).name}'s size"))
    return data


class BoundedReader(io.RawIOBase):
    """A binary stream that refuses (LimitExceeded, with ``limit``'s message) to give more than
    ``limit`` bytes: a text reader over it reads a file of any shape (one endless line) within it."""

    def __init__(self, raw: io.BufferedReader, limit: Limit, subject: str):
        self.raw, self.limit, self.subject = raw, limit, subject
        self.left = int(limit.value * 2**20)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.left <= 0:
            if self.raw.read(1):
                raise LimitExceeded(self.limit.beyond(self.subject))
            return 0
        view = memoryview(buffer)[: self.left]
        n = self.raw.readinto(view)
        self.left -= n or 0
        return n or 0

    def close(self) -> None:
        self.raw.close()
        super().close()


def open_text(path: str | Path, limit: Limit, encoding: str = "utf-8", subject: str = "") -> io.TextIOWrapper:
    """A regular file opened as text (newlines kept as they are, for ``csv``), that refuses to read
    past ``limit`` MB."""
    raw = BoundedReader(open_regular(path), limit, subject or Path(path).name)
    return io.TextIOWrapper(io.BufferedReader(raw), encoding=encoding, newline="")


def fsync(path: Path) -> None:
    """Flush a file to disk before it is renamed into place, so a crash of the machine (not only of
    the process) cannot leave a renamed but empty file."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_RENAME_EXCHANGE = 2


def exchange(a: Path, b: Path) -> bool:
    """Swap two directories in one atomic step (Linux ``renameat2(RENAME_EXCHANGE)``); False where
    the system or file system cannot, and the caller falls back to two renames."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_cwd = -100
    if renameat2(at_cwd, os.fsencode(a), at_cwd, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EXDEV):
        return False
    raise OSError(code, os.strerror(code), str(b))


def is_replaceable(directory: Path) -> bool:
    """A directory a save may replace: one of ours (a config.json and nothing but files), never
    an arbitrary folder that a mistyped ``--out`` points at."""
    try:
        entries = list(directory.iterdir())
    except OSError:
        return False
    return (directory / "config.json").is_file() and all(e.is_file() and not e.is_symlink() for e in entries)


def remove_stale_temporaries(directory: Path) -> None:
    """Temporary siblings left by a save that was killed (a ``.name.*`` directory). One save per
    name runs at a time (the job manager refuses a second), so any left now is stale."""
    old = directory.with_name(f".{directory.name}.old")
    if old.is_dir() and not old.is_symlink() and not directory.exists():  # killed between the fallback's renames
        os.replace(old, directory)
    pattern = re.compile(re.escape(f".{directory.name}.") + r"([a-z0-9_]{8}|old)")  # mkdtemp's names, and ours
    for stale in directory.parent.iterdir():
        if pattern.fullmatch(stale.name) and stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)
