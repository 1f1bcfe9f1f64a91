"""Explanations are admitted within ``limits.EXPLAINING_MB`` of predicted memory, first come first
served, each told its place (``hierattn.app.admission``): without it, thirty sessions
pasting into a transformer at once hit allocation failures."""
from __future__ import annotations

import threading
import time

from hierattn.app.admission import FLOOR, PEAK_PER_CELL, Admission, PageRuns, predicted_bytes
from hierattn.checkpoint.reading import load_classifier
from hierattn.home import checkpoint_root
from hierattn.models.footprint import attention_cells


def test_the_budget_is_never_exceeded_and_requests_go_in_order(monkeypatch):
    monkeypatch.setenv("HIERATTN_EXPLAINING_MB", "10")
    pool, lock = Admission(), threading.Lock()
    held, most, order, told = [0], [0], [], {}

    def explain(i: int, mb: int):
        with pool.admitted(mb * 2**20, on_wait=lambda ahead: told.setdefault(i, ahead)):
            with lock:
                order.append(i)
                held[0] += mb
                most[0] = max(most[0], held[0])
            time.sleep(0.05)
            with lock:
                held[0] -= mb

    threads = []
    for i, mb in enumerate([6, 6, 3, 3, 30, 1]):  # 30 MB: over the whole budget, so it runs alone
        threads.append(threading.Thread(target=explain, args=(i, mb)))
        threads[-1].start()
        time.sleep(0.01)  # they arrive in this order
    for t in threads:
        t.join(10)
    assert order == [0, 1, 2, 3, 4, 5]  # first come, first served: none overtakes a larger one ahead
    assert most[0] <= 10 or most[0] == 30  # within the budget, or one alone past it
    assert told[1] >= 1 and told[5] >= 1  # each that waited was told its place
    assert pool.held == 0 and not pool.waiting


def test_an_explanation_is_predicted_from_its_attention_at_the_caps():
    transformer = load_classifier(checkpoint_root() / "bbc-news-transformer", device="cpu")
    text = transformer.text_config
    held = attention_cells(transformer.model, text.max_sentences, text.max_words)
    computed = transformer.model.forward_cells(text.max_sentences, text.max_words)  # its pass, in float32
    assert computed > held  # it keeps less than its pass computes: the peak is the pass's
    assert predicted_bytes(transformer) == PEAK_PER_CELL * computed > 50 * 2**20  # about 100 MB: held in turn
    han = load_classifier(checkpoint_root() / "bbc-news-han", device="cpu")
    assert predicted_bytes(han) < FLOOR  # a few thousand cells: counted at the floor, never held back


def test_page_runs_take_turns_in_the_order_they_came(monkeypatch):
    """At most ``HIERATTN_PAGE_RUNS`` page runs of a process compute at once, in arrival order: the
    interpreter lock is not handed out in turn, and thirty page runs side by side starved the thread
    that sends every session's answers."""
    monkeypatch.setenv("HIERATTN_PAGE_RUNS", "2")
    gate, lock = PageRuns(), threading.Lock()
    running, most, order = [0], [0], []

    def page(i: int):
        with gate.turn():
            with lock:
                order.append(i)
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.05)
            with lock:
                running[0] -= 1

    threads = []
    for i in range(8):
        threads.append(threading.Thread(target=page, args=(i,)))
        threads[-1].start()
        time.sleep(0.01)
    for t in threads:
        t.join(10)
    assert order == list(range(8)) and most[0] == 2
    assert gate.running == 0 and not gate.waiting

    def stopped():  # st.stop() or a rerun leaves the page by an exception: its turn is given back
        with gate.turn():
            raise RuntimeError("stopped")
    try:
        stopped()
    except RuntimeError:
        pass
    assert gate.running == 0
