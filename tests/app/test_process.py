"""What enforces a limit outlives any client message (``hierattn.app.process``): a visitor's
``clear_cache`` once dropped Streamlit's caches, and with them the training runs' cap, the remembered
refusals of hostile folders and the computations under way."""
from __future__ import annotations

import json
import threading

import pytest

from hierattn.app import loading, process, tasks, train_form
from hierattn.checkpoint.format import CheckpointError


def _clear_cache_message() -> None:
    """What Streamlit does when any client sends ``BackMsg{clear_cache: true}``
    (``AppSession._handle_clear_cache_request``)."""
    from streamlit.runtime import caching

    caching.cache_data.clear()
    caching.cache_resource.clear()


def test_a_clients_clear_cache_leaves_every_limit_and_refusal_in_force(tmp_path, monkeypatch):
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    (hostile / "config.json").write_text(json.dumps({"model_type": "han", "num_labels": 15_000_000}))
    (hostile / "model.safetensors").write_bytes(b"\0" * 16)
    loads = []
    original = loading.load_classifier
    monkeypatch.setattr(loading, "load_classifier", lambda path: loads.append(path) or original(path))
    with pytest.raises(CheckpointError) as first:
        loading.load(hostile)
    jobs, models, store, kept = (train_form.job_manager(), loading.models(), tasks._results(),
                                 loading.explanations())
    _clear_cache_message()
    assert train_form.job_manager() is jobs and loading.models() is models  # the cap on runs, the budget
    assert tasks._results() is store and loading.explanations() is kept
    with pytest.raises(CheckpointError) as again:
        loading.load(hostile)
    assert str(again.value) == str(first.value) and len(loads) == 1  # remembered: no second look at it


def test_a_process_wide_object_is_made_once_for_every_thread():
    made = []

    @process.process_wide
    def slow_to_make():
        made.append(1)
        threading.Event().wait(0.05)
        return object()

    got = []
    threads = [threading.Thread(target=lambda: got.append(slow_to_make())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and len({id(g) for g in got}) == 1
    slow_to_make.forget()
    assert slow_to_make() is not got[0] and len(made) == 2
