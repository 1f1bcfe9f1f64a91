"""Long computations over a split, run once for the whole app in background threads and polled by
a fragment, so that a click elsewhere does not restart them, and stopped when no visitor waits for
them any more or the server exits."""
from __future__ import annotations

import atexit
import contextvars
import logging
import os
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager

import streamlit as st

from hierattn import viz
from hierattn.app import app_store
from hierattn.app.process import process_wide
from hierattn.app.sessions import connected, session_id
from hierattn.app.visitors import visitor
from hierattn.threads import cores, serving

_LOG = logging.getLogger(__name__)
LEASE = 20.0  # seconds a claim holds for a session that never finished a page run (see _Task)
STOP_WAIT = 10.0  # seconds the process waits at exit for each computation to reach a stopping point


class Cancelled(Exception):
    """A computation that no connected session wants any more, or the server is stopping."""


def _visitor() -> str | None:
    try:
        return visitor()
    except Exception:  # noqa: BLE001  outside a page: no visitor
        return None


_finished_runs: dict[str, float] = {}  # session -> when its last page run that finished began
_FINISHED_KEPT = 1_000  # sessions remembered before closed ones are forgotten


@contextmanager
def page_run():
    """Around a page run (``app.py``): when it finishes, the session has moved on from every
    computation it did not claim during it. A run ended by a rerun or ``st.stop`` records nothing:
    its successor decides."""
    started, session = time.monotonic(), session_id()
    watched = _WATCHED.set(set())
    try:
        yield
    finally:
        _WATCHED.reset(watched)
    if session is not None:
        _finished_runs[session] = started
        if len(_finished_runs) > _FINISHED_KEPT:
            for gone in [s for s in list(_finished_runs) if not connected(s)]:
                _finished_runs.pop(gone, None)


# The computations this page run already shows a progress bar for. A second bar for the same one
# (Evaluation asks for its model's test split at the top and again in its every-checkpoint table)
# was a second one-second poll that reran the whole page as the first did, and a browser once
# received the second poll's bar for a place the first rerun had already removed ("Bad delta path").
_WATCHED: contextvars.ContextVar[set | None] = contextvars.ContextVar("hierattn_watched", default=None)


def in_server() -> bool:
    """Whether this process is a running Streamlit server (not AppTest, not a script)."""
    from streamlit import runtime

    return runtime.exists()


def _still_waits(session: str | None, claimed_at: float, now: float) -> bool:
    """Whether ``session``'s claim made at ``claimed_at`` still holds (see ``_Task``). Outside a
    server no session is ever seen to close (AppTest's are simply dropped), so there a claim
    lapses after ``LEASE`` seconds: else every abandoned test session's analyses ran to their end
    in the test process, beside the tests after them."""
    if not connected(session):
        return False
    last_run = _finished_runs.get(session) if session is not None else None
    if last_run is None or not in_server():
        return now - claimed_at < LEASE
    return last_run <= claimed_at


_WORKERS = None
_VISITING = threading.Condition()
_CLAIMS_CHECKED = False  # this process's stale claims in the app store dropped once


def per_visitor() -> int:
    """How many computations one visitor runs at once, on every worker of the app together: half the
    cores, at least one, so that one visitor's six tabs of Dataset statistics leave cores to
    everyone else (another visitor's paste took 63.6 s instead of 0.5 s)."""
    from hierattn.limits import ANALYSES_PER_VISITOR

    configured = ANALYSES_PER_VISITOR.value if ANALYSES_PER_VISITOR.variable in os.environ else 0
    return int(configured) or max(1, cores() // 2)


@contextmanager
def _visitors_turn(task: _Task):
    """Wait until the visitor who asked first for ``task`` runs fewer than ``per_visitor()``, counted
    in the app store (``app_store.claim_analysis``) so that the same visitor on two workers shares
    one turn (a computation no page asked for, outside the server, waits for nothing)."""
    global _CLAIMS_CHECKED
    if task.visitor is None:
        yield
        return
    with _VISITING:  # once, before this process's first claim (a thread claiming meanwhile would lose it)
        if not _CLAIMS_CHECKED:
            app_store.forget_this_process()
            _CLAIMS_CHECKED = True
    while (claim := app_store.claim_analysis(task.visitor, per_visitor())) is None:
        with _VISITING:
            _VISITING.wait(0.25)  # woken early when an analysis of this process ends
        if not task.wanted():
            raise Cancelled("no session is waiting for this computation")
    try:
        yield
    finally:
        app_store.release_analysis(claim)
        with _VISITING:
            _VISITING.notify_all()


@contextmanager
def _workers(task: _Task):
    """One of ``cores()`` slots for a computation, within its visitor's turn (``per_visitor``); while
    it waits, it stops if no one wants it."""
    global _WORKERS
    if _WORKERS is None:
        _WORKERS = threading.BoundedSemaphore(cores())
    slots = _WORKERS
    with _visitors_turn(task):
        while not slots.acquire(timeout=0.25):
            if not task.wanted():
                raise Cancelled("no session is waiting for this computation")
        try:
            yield
        finally:
            slots.release()


class _Task:
    """One computation running in a background thread; the page polls ``done`` and ``total``.

    It is tied to the sessions that asked for it: each page run (and each poll of its progress
    bar) renews its claim, and at its next progress report the computation stops (``Cancelled``)
    once every claim has lapsed: the tab was closed (at once), or the visitor moved on to another
    input or page, i.e. a page run of that session that began after its last claim finished
    without asking for it. A result another session still waits for goes on.

    A claim does not lapse with time while its tab is open and has not moved on: under a class's
    load the polls of the progress bar came 20-35 s apart, a time-based lease cancelled the
    computations they waited for, every poll started them again, and eight trust panels never
    finished. Only a session that never finished a page run (a test's AppTest, a call outside
    the server) falls back to ``LEASE`` seconds since its last claim."""

    def __init__(self, compute):
        self.done, self.total, self.result, self.error = 0, 0, None, None
        self.claims: dict[str | None, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(compute,), name="hierattn-task", daemon=True)
        self.visitor = _visitor()  # whose turn it takes (``per_visitor``)
        self.claim()

    def claim(self) -> None:
        self.claims[session_id()] = time.monotonic()

    def wanted(self) -> bool:
        now = time.monotonic()
        return not self.stop.is_set() and any(_still_waits(session, at, now)
                                              for session, at in list(self.claims.items()))

    def _run(self, compute):
        try:
            with _workers(self):  # waits its turn: never more computations at once than the cores
                with serving(shared_by=cores()):  # its part of the server's share, beside any training
                    self.result = compute(self._progress)
        except Exception as exc:  # handed to the page that asked, which shows it
            self.error = exc

    def _progress(self, done: int, total: int):
        self.done, self.total = done, total
        if not self.wanted():
            if self.stop.is_set():  # the server is stopping
                raise Cancelled("the server is stopping")
            now = time.monotonic()
            _LOG.info("a computation stopped at %d / %d: no session waits for it (claims renewed %s s ago)",
                         done, total, [round(now - at) for at in self.claims.values()])
            raise Cancelled("no session is waiting for this computation")

    @property
    def finished(self) -> bool:
        return not self.thread.is_alive()

    @property
    def cancelled(self) -> bool:
        return isinstance(self.error, Cancelled)


class _ResultStore:
    """Results of long computations over a split, shared by every session and keyed by everything
    they depend on (checkpoint files' time stamp included); the oldest are dropped beyond
    ``capacity``. Each runs in a background thread, so a rerun (any click) does not abort it;
    closing the tab, or leaving it for another input, does (``_Task``). At exit, every running
    computation is stopped and waited for (``stop_all``): a thread killed inside PyTorch at
    interpreter shutdown aborts the process."""

    def __init__(self, capacity: int = 32):
        self.capacity, self.lock, self.items = capacity, threading.Lock(), OrderedDict()
        self.running: dict[tuple, _Task] = {}
        atexit.register(self.stop_all)

    def get(self, key):
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
            return self.items.get(key)

    def task(self, key, compute) -> _Task:
        """The task computing ``key`` (claimed for this session), started if none is running or the
        last one was cancelled."""
        with self.lock:
            task = self.running.get(key)
            if task is None or (task.finished and task.cancelled):
                task = self.running[key] = _Task(compute)
                task.thread.start()
            else:
                task.claim()
            return task

    def keep(self, key, value) -> None:
        """File a result found elsewhere (read from a file another worker wrote)."""
        with self.lock:
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > self.capacity:
                self.items.popitem(last=False)

    def finish(self, key, task: _Task) -> None:
        """File a finished task's result (a failed one is dropped, so the next request retries)."""
        with self.lock:
            if self.running.get(key) is task:
                del self.running[key]
            if task.error is None:
                self.items[key] = task.result
                self.items.move_to_end(key)
                while len(self.items) > self.capacity:
                    self.items.popitem(last=False)

    def stop_all(self, wait: float = STOP_WAIT) -> int:
        """Stop every running computation at its next progress report and wait for each; returns
        how many were running."""
        with self.lock:
            tasks = list(self.running.values())
        for task in tasks:
            task.stop.set()
        for task in tasks:
            task.thread.join(wait)
        return len(tasks)


@process_wide  # computations under way: a dropped store would start them all again beside the old ones
def _results() -> _ResultStore:
    return _ResultStore()


@st.fragment(run_every=1.0)
def _watch(key: tuple, label: str, unit: str):
    task = _results().running.get(key)
    if task is None or task.finished:
        st.rerun()  # the whole page, which now finds the result
    task.claim()  # this session still shows its progress
    fraction = task.done / task.total if task.total else 0.0
    label = viz.md_text(label)  # names a checkpoint and a data set: shown as typed
    st.progress(fraction, text=f"{label} {task.done:,} / {task.total:,} {unit}" if task.total else label)


def computed(key: tuple, compute, label: str, unit: str = "documents"):
    """The result of ``compute(progress)`` for ``key``, computed once for the whole app in a
    background thread; ``progress(done, total)`` is what the library functions call after each
    batch (``unit``: what ``done`` and ``total`` count). While it runs: a progress bar here, and
    None (the page skips what depends on it). An exception raised by ``compute`` is shown here as an
    error box, once, and None returned: one analysis that fails takes nothing else of the page with
    it; the next call tries again."""
    store = _results()
    value = store.get(key)
    if value is not None:
        return value
    task = store.task(key, compute)
    if task.finished:
        store.finish(key, task)
        if task.cancelled:
            if task.stop.is_set():  # the server is stopping
                return None
            # it lapsed between being claimed above and finishing: this run asks for it, so it
            # starts again, watched (returning None without a watcher left the page waiting forever)
            store.task(key, compute)
            _watch_once(key, label, unit)
            return None
        if task.error is not None:
            _LOG.error("%s failed", label, exc_info=task.error)
            st.error(f"{viz.md_text(label.rstrip(':'))} failed: {viz.md_text(type(task.error).__name__)}: "
                     f"{viz.md_text(task.error)}. The rest of the page is not affected; a rerun tries again.")
            return None
        return task.result
    _watch_once(key, label, unit)
    return None


def _watch_once(key: tuple, label: str, unit: str) -> None:
    watched = _WATCHED.get()
    if watched is not None:
        if key in watched:
            return
        watched.add(key)
    _watch(key, label, unit)


def is_computed(key: tuple) -> bool:
    return _results().get(key) is not None


def result(key: tuple):
    """A computed result, or None."""
    return _results().get(key)


def keep(key: tuple, value) -> None:
    """File ``value`` as the result of ``key``, as if computed here (it was read from a shared file)."""
    _results().keep(key, value)


def is_running(key: tuple) -> bool:
    return key in _results().running
