"""Admission for explanations: at most ``limits.EXPLAINING_MB`` of predicted peak memory computed at
once, the rest waiting their turn in the order they came, each shown its place in the queue.

Thirty sessions pasting long documents into a transformer at once ran thirty forward passes side
by side: 4.5 GB resident and nine allocation failures at an 8 GB cap. An explanation's peak is
predicted before it starts from the attention it holds at the model's caps
(``models.footprint.attention_cells``, what the checkpoint limits already bound): a forward pass
peaks at about three times its maps, 4 bytes a cell. A model whose attention is small (HAN: a few
thousand cells) costs next to nothing and is never held back; one larger than the whole budget
runs alone."""
from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Callable
from contextlib import contextmanager

from hierattn.app.process import process_wide
from hierattn.limits import EXPLAINING_MB, PAGE_RUNS

PEAK_PER_CELL = 3 * 4  # bytes: the maps (float32) and the forward pass around them
FLOOR = 1 << 20  # bytes every explanation counts for, whatever its maps


class Admission:
    """A first-come, first-served budget of bytes."""

    def __init__(self):
        self.changed = threading.Condition()
        self.held = 0
        self.waiting: deque[object] = deque()

    @contextmanager
    def admitted(self, cost: int, on_wait: Callable[[int], None] | None = None):
        """Hold ``cost`` bytes of the budget while the block runs; until they fit and every earlier
        request is in, wait, calling ``on_wait(ahead)`` with how many requests are in front."""
        budget = int(EXPLAINING_MB.value * 2**20)
        cost = min(max(int(cost), FLOOR), budget)  # one larger than the budget runs alone
        ticket = object()
        with self.changed:
            self.waiting.append(ticket)
            told = None
            while self.waiting[0] is not ticket or self.held + cost > budget:
                ahead = self.waiting.index(ticket) + (self.waiting[0] is ticket)  # + the running ones' turn
                if on_wait is not None and ahead != told:
                    told = ahead
                    on_wait(ahead)
                self.changed.wait(0.5)
            self.waiting.popleft()
            self.held += cost
            self.changed.notify_all()
        try:
            yield
        finally:
            with self.changed:
                self.held -= cost
                self.changed.notify_all()


@process_wide
def admission() -> Admission:
    return Admission()


class PageRuns:
    """At most ``limits.PAGE_RUNS`` page runs of this process compute at once; the rest wait their
    turn in the order they came.

    A page run is Python that holds the interpreter lock (tokenising, metrics, building figures),
    and the lock is not handed out in turn: thirty sessions pasting 200 KB documents into one
    server all got their answers at the same instant, 60 s after they pasted, while the thread
    that sends the answers (the server's event loop) waited for the lock behind thirty page runs.
    Two at a time keep a core busy while one waits for torch or the disk, and everyone else
    sleeps in line instead of taking the lock from the runs that would finish."""

    def __init__(self):
        self.changed = threading.Condition()
        self.running = 0
        self.waiting: deque[object] = deque()

    @contextmanager
    def turn(self):
        ticket = object()
        with self.changed:
            self.waiting.append(ticket)
            while self.waiting[0] is not ticket or self.running >= PAGE_RUNS.value:
                self.changed.wait()
            self.waiting.popleft()
            self.running += 1
            self.changed.notify_all()
        try:
            yield
        finally:
            with self.changed:
                self.running -= 1
                self.changed.notify_all()


@process_wide
def page_runs() -> PageRuns:
    return PageRuns()


_predicted: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def predicted_bytes(classifier) -> int:
    """The peak one explanation by ``classifier`` may reach, from its attention at its caps."""
    from hierattn.models.footprint import attention_cells

    model = classifier.model
    if model not in _predicted:
        text = classifier.text_config
        was_training = model.training
        try:
            forward = getattr(model, "forward_cells", None)  # a model that keeps less than its pass computes
            cells = (forward(text.max_sentences, text.max_words) if callable(forward)
                     else attention_cells(model.eval(), text.max_sentences, text.max_words)) or 0
        except Exception:  # noqa: BLE001  a model the probe cannot run: counted at the floor
            cells = 0
        finally:
            model.train(was_training)
        _predicted[model] = PEAK_PER_CELL * cells
    return _predicted[model]
