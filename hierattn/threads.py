"""Thread budgets for the PyTorch processes that share this machine's cores.

PyTorch gives every process as many intra-op threads as the machine has cores. Two trainings on
two cores then run four threads, and an OpenMP thread that waits at the end of a parallel region
spins on its core, so each process spends its time waiting for the other's spinning threads: two
runs took 25 times as long as one, not twice. Here every heavy process takes part in a census,
one small JSON file per process in a runtime folder, and sizes its threads from it:

- a training run gets ``max(1, (cores - serving) // trainings)``, where ``serving`` is the threads
  a server holds while it computes for a visitor (a lease that each computation renews for
  ``SERVE_LEASE`` seconds), so the pages stay quick while runs train;
- the server, while it computes, gets ``max(1, cores // (trainings + other servers + 1))``: alone,
  every core; two servers of one app (``hierattn app --workers 2``) computing at once, one each;
- ``HIERATTN_THREADS=N`` fixes a process's threads (the experiments registry's runs set 1); the
  process is still counted, so the others make room for it.

A run re-reads the census between steps, at most every ``RECHECK`` seconds, and changes its thread
count when its share changes (``torch.set_num_threads`` between steps costs microseconds). The
entry of a process that died is ignored (its pid is gone) and removed by the next reader.

The folder is ``HIERATTN_RUNTIME`` or ``<tmp>/hierattn-<user>/census``: one per user, since
processes of one user share the machine's cores in the way that matters here.
"""
from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SERVE_LEASE = 10.0  # seconds a server keeps its threads reserved after its last computation
RECHECK = 0.5  # seconds between a training run's looks at the census
FIXED = "HIERATTN_THREADS"


def cores() -> int:
    """The CPUs this process may run on (its affinity mask: a container's or taskset's limit), or
    ``HIERATTN_CORES`` when set: the cores every hierattn process together should use."""
    configured = os.environ.get("HIERATTN_CORES", "").strip()
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def fixed_threads() -> int | None:
    """``HIERATTN_THREADS`` when it is a positive whole number, else None."""
    value = os.environ.get(FIXED, "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else None


def runtime_dir() -> Path:
    configured = os.environ.get("HIERATTN_RUNTIME")
    if configured:
        return Path(configured)
    user = os.getuid() if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    return Path(tempfile.gettempdir()) / f"hierattn-{user}" / "census"


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process with that pid: alive
        return True
    return True


@dataclass(frozen=True)
class Census:
    trainings: int  # training processes alive, this one included if it trains
    serving: int  # threads held by servers computing now or within their lease
    other_servers: int = 0  # servers other than the caller computing now or within their lease


def census(root: Path | None = None, now: float | None = None) -> Census:
    """Count the live entries (and sweep the dead ones)."""
    root = root or runtime_dir()
    now = time.time() if now is None else now
    trainings = serving = other_servers = 0
    for path in root.glob("*.json") if root.is_dir() else ():
        try:
            entry = json.loads(path.read_text())
            pid, role = int(entry["pid"]), entry["role"]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # being written, or not ours
        if not alive(pid):
            path.unlink(missing_ok=True)
            continue
        if role == "train":
            trainings += 1
        elif role == "serve" and float(entry.get("until") or 0) > now:
            serving += int(entry.get("threads") or 1)
            other_servers += pid != os.getpid()
    return Census(trainings, serving, other_servers)


def threads_of(pid: int, root: Path | None = None) -> int | None:
    """The threads a training process reported for itself (its census entry), None if unknown."""
    try:
        return int(json.loads(((root or runtime_dir()) / f"train-{pid}.json").read_text())["threads"]) or None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def training_budget(state: Census, available: int) -> int:
    return max(1, (available - state.serving) // max(state.trainings, 1))


def serving_budget(state: Census, available: int) -> int:
    return max(1, available // (state.trainings + state.other_servers + 1))


def _write(path: Path, entry: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(entry))
    os.replace(temporary, path)  # readers never see half an entry


class TrainingThreads:
    """A training process's place in the census; ``refresh()`` between steps keeps its share.

    Use as a context manager around the training loop: the entry is removed when the run ends."""

    def __init__(self, root: Path | None = None, available: int | None = None):
        self.root = root or runtime_dir()
        self.available = available or cores()
        self.path = self.root / f"train-{os.getpid()}.json"
        self.threads = 0
        self._checked = 0.0
        self._before = None

    def __enter__(self) -> TrainingThreads:
        import torch

        self._before = torch.get_num_threads()
        self._record(0)  # counted before its share is worked out, so that it counts itself
        self.refresh(force=True)
        return self

    def __exit__(self, *exc) -> None:
        import torch

        self.path.unlink(missing_ok=True)
        if self._before and torch.get_num_threads() != self._before:  # a process that goes on (tests, the bench)
            torch.set_num_threads(self._before)

    def refresh(self, force: bool = False) -> int:
        now = time.monotonic()
        if not force and now - self._checked < RECHECK:
            return self.threads
        self._checked = now
        wanted = fixed_threads() or training_budget(census(self.root), self.available)
        if wanted != self.threads:
            import torch

            torch.set_num_threads(wanted)
            self.threads = wanted
            self._record(torch.get_num_threads())
        return self.threads

    def _record(self, threads: int) -> None:
        try:  # what torch reports back, for anyone who wants to see each process's share
            _write(self.path, {"pid": os.getpid(), "role": "train", "threads": threads})
        except OSError:
            pass


_serving_lock = threading.Lock()
_serving_now = 0  # computations of this process under way (sessions' reruns, background tasks)


@contextmanager
def serving(root: Path | None = None, available: int | None = None, shared_by: int = 1):
    """Around a computation the server does for a visitor: take the server's share of the cores,
    and hold it (for the running trainings to see) while any computation of this process runs
    and for ``SERVE_LEASE`` seconds after the last one ends. ``shared_by``: how many computations
    may run at once in this share (the background tasks: one a core), each taking its part of the
    threads, so that they do not oversubscribe the cores (OpenMP teams of two on each of two busy
    cores wait on each other at every operation). The thread count is the calling thread's own:
    OpenMP keeps it per thread."""
    global _serving_now
    import torch  # here, not at the top: importing this module must not start OpenMP (prepare_environment)

    root = root or runtime_dir()
    share = fixed_threads() or serving_budget(census(root), available or cores())
    threads = max(1, share // shared_by)
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    path = root / f"serve-{os.getpid()}.json"
    with _serving_lock:
        _serving_now += 1
        _lease(path, share, float("inf"))
    try:
        yield threads
    finally:
        with _serving_lock:
            _serving_now -= 1
            if _serving_now == 0:  # the lease runs from the end of the last computation
                _lease(path, share, time.time() + SERVE_LEASE)


def _lease(path: Path, threads: int, until: float) -> None:
    try:
        _write(path, {"pid": os.getpid(), "role": "serve", "threads": threads, "until": until})
    except OSError:  # a read-only or full temp folder: the trainings just cannot make room
        pass


def prepare_environment(environ: dict | None = None) -> dict:
    """Settings that must be in place before the OpenMP runtime starts (before torch is imported,
    or in a child's environment): waiting threads sleep instead of spinning, so a process whose
    threads share a core with another's does not burn it while it waits. A user's own setting
    wins. Returns the environment it changed."""
    environ = os.environ if environ is None else environ
    environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return environ
