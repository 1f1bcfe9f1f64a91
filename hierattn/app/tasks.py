"""Long computations over a split, run once for the whole app in background threads and polled by
a fragment, so that a click elsewhere does not restart them."""
from __future__ import annotations

import streamlit as st

from hierattn import viz
from hierattn.threads import serving


class _Task:
    """One computation running in a background thread; the page polls ``done`` and ``total``."""

    def __init__(self, compute):
        import threading

        self.done, self.total, self.result, self.error = 0, 0, None, None
        self.thread = threading.Thread(target=self._run, args=(compute,), daemon=True)

    def _run(self, compute):
        try:
            with serving():  # the server's share of the cores, beside any run training now
                self.result = compute(self._progress)
        except Exception as exc:  # handed to the page that asked, which shows it
            self.error = exc

    def _progress(self, done: int, total: int):
        self.done, self.total = done, total

    @property
    def finished(self) -> bool:
        return not self.thread.is_alive()


class _ResultStore:
    """Results of long computations over a split, shared by every session and keyed by everything
    they depend on (checkpoint files' time stamp included); the oldest are dropped beyond
    ``capacity``. Each runs in a background thread, so a rerun (any click) does not abort it."""

    def __init__(self, capacity: int = 32):
        import threading
        from collections import OrderedDict

        self.capacity, self.lock, self.items = capacity, threading.Lock(), OrderedDict()
        self.running: dict[tuple, _Task] = {}

    def get(self, key):
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
            return self.items.get(key)

    def task(self, key, compute) -> _Task:
        """The task computing ``key``, started if none is running."""
        with self.lock:
            task = self.running.get(key)
            if task is None:
                task = self.running[key] = _Task(compute)
                task.thread.start()
            return task

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


@st.cache_resource
def _results() -> _ResultStore:
    return _ResultStore()


@st.fragment(run_every=1.0)
def _watch(key: tuple, label: str):
    task = _results().running.get(key)
    if task is None or task.finished:
        st.rerun()  # the whole page, which now finds the result
    fraction = task.done / task.total if task.total else 0.0
    label = viz.md_text(label)  # names a checkpoint and a data set: shown as typed
    st.progress(fraction, text=f"{label} {task.done:,} / {task.total:,} documents" if task.total else label)


def computed(key: tuple, compute, label: str):
    """The result of ``compute(progress)`` for ``key``, computed once for the whole app in a
    background thread; ``progress(done, total)`` is what the library functions call after each
    batch. While it runs: a progress bar here, and None (the page skips what depends on it).
    An exception raised by ``compute`` is raised here, once; the next call tries again."""
    store = _results()
    value = store.get(key)
    if value is not None:
        return value
    task = store.task(key, compute)
    if task.finished:
        store.finish(key, task)
        if task.error is not None:
            raise task.error
        return task.result
    _watch(key, label)
    return None


def is_computed(key: tuple) -> bool:
    return _results().get(key) is not None


def result(key: tuple):
    """A computed result, or None."""
    return _results().get(key)


def is_running(key: tuple) -> bool:
    return key in _results().running
