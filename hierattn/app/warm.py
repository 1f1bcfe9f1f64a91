"""Server start-up. ``streamlit run app.py`` finds the ``st.App`` in app.py and calls its
lifespan before it accepts connections; this lifespan starts a thread that does what every first
page run would otherwise do first (import torch, plotly and pandas, load spaCy's pipeline, read the
default checkpoint's data set for its samples, import transformers when a checkpoint needs it) and
returns at once, so that this work overlaps the first visitor's browser loading Streamlit's
JavaScript instead of following it. A page that needs a module before the thread has imported it
simply waits for that import (Python's import lock)."""
from __future__ import annotations

import json
import sys
import threading
from contextlib import asynccontextmanager

# Nothing here imports torch at module level: app.py imports this module before the server listens,
# and torch's 1-1.6 s import belongs in the warm-up thread, beside the browser's loading.


def warm_up() -> None:
    import pandas  # noqa: F401

    from hierattn import viz  # noqa: F401  plotly
    from hierattn.analysis import explain  # noqa: F401  torch
    from hierattn.data.builtin import load_builtin
    from hierattn.data.text import tokenize
    from hierattn.home import all_checkpoints

    tokenize("The tokeniser is ready. Its pipeline loads once.")
    for path in all_checkpoints()[:1]:  # the one Explore opens with (its samples)
        try:
            if (path / "config.json").stat().st_size > 2**20:
                continue  # not one to read ahead of time: loading it reports its size
            dataset = json.loads((path / "config.json").read_text()).get("dataset")
            if dataset:
                load_builtin(dataset)
        except Exception:  # noqa: BLE001  a head start only: the page reports any real problem itself
            pass
    try:  # a transformer among the checkpoints opens in 1 s instead of 6-11 (importing transformers)
        if any((p / "tokenizer.json").is_file() for p in all_checkpoints()):
            from transformers import AutoModelForSequenceClassification  # noqa: F401
            from transformers.masking_utils import AttentionMaskInterface  # noqa: F401
    except Exception:  # noqa: BLE001
        pass


def settle_the_heap() -> None:
    """Move what the imports made (about 557,000 objects: torch, spaCy, plotly, pandas, Streamlit)
    out of the garbage collector's sight. Streamlit runs a full collection after every page run
    (``runner.postScriptGC``), and scanning those objects took 0.55 s of each paste's 1.1 s on
    bbc-news-han, under the interpreter lock, so every other session waited too. Objects that
    live as long as the process are never garbage; what page runs make is still collected."""
    import gc

    gc.collect()
    gc.freeze()


_IMPORTED = threading.Event()  # the warm-up's imports are done (or failed): page runs may import
_STARTED = threading.Event()


def _warm_and_settle() -> None:
    try:
        warm_up()
    finally:
        _IMPORTED.set()
    settle_the_heap()


def start() -> threading.Thread:
    _STARTED.set()
    thread = threading.Thread(target=_warm_and_settle, name="hierattn-warm-up", daemon=True)
    thread.start()
    return thread


def wait_for_imports(limit: float = 300) -> None:
    """A page run waits here until the warm-up thread has imported what it imports. The two
    importing the same modules at once in another order made Python hand one of them a module
    still being run (its deadlock avoidance), and a worker's first page died of an AttributeError
    about one time in three under a loaded machine. Without a warm-up (AppTest, a plain import)
    there is nothing to wait for."""
    if _STARTED.is_set():
        _IMPORTED.wait(limit)


@asynccontextmanager
async def lifespan(_app):
    start()
    yield
    # Shutting down (Ctrl-C, SIGTERM): uvicorn may end the process by re-raising the signal, which
    # skips the exit handlers that would end daemon children, so the training runs end here.
    jobs = sys.modules.get("hierattn.training.jobs")  # never imported: no session started a run
    if jobs is not None:
        jobs.stop_all()
