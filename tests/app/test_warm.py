"""Server start-up: `streamlit run app.py` serves app.py's `st.App`, whose lifespan starts the
warm-up thread and returns at once; the thread leaves the first page's work done."""
import asyncio
import json
import subprocess
import sys
from pathlib import Path

from streamlit.web.server.app_discovery import discover_asgi_app

from hierattn.app import warm

ROOT = Path(__file__).resolve().parents[2]


def test_streamlit_run_finds_the_app_with_its_lifespan():
    found = discover_asgi_app(ROOT / "app.py")
    assert found.is_asgi_app and found.import_string == "app:app"


def test_the_lifespan_returns_at_once_and_its_thread_readies_the_first_page(tmp_path, monkeypatch):
    from hierattn import home
    from hierattn.data import builtin, spacy_pipeline
    from hierattn.training import jobs

    first = tmp_path / "a-first"
    first.mkdir()
    (first / "config.json").write_text(json.dumps({"dataset": "tweets"}))
    monkeypatch.setattr(home, "all_checkpoints", lambda: [first, tmp_path / "b-second"])
    read = []
    monkeypatch.setattr(builtin, "load_builtin", read.append)
    started = []
    monkeypatch.setattr(warm, "start", lambda real=warm.start: started.append(real()) or started[-1])
    monkeypatch.setattr(spacy_pipeline, "_current", None)

    async def serve():
        async with warm.lifespan(None):
            return len(started)  # the server accepts connections from here on, the thread still working

    stopped = []
    monkeypatch.setattr(jobs, "stop_all", lambda: stopped.append(True))
    assert asyncio.run(serve()) == 1
    assert stopped == [True]  # the server's shutdown ended the training runs it started
    started[0].join(timeout=120)
    assert not started[0].is_alive()
    import gc

    assert gc.get_freeze_count() > 0  # the heap the imports made is out of the collector's sight
    gc.unfreeze()  # a server's; not this test process's
    assert spacy_pipeline._current is not None  # spaCy's pipeline is built
    assert read == ["tweets"]  # the data set of the checkpoint Explore opens with, for its samples


def test_the_server_listens_before_torch_is_imported():
    """app.py imports the warm-up module before the server accepts connections: torch (1-1.6 s)
    is imported by the warm-up thread, not on that path."""
    probe = "import sys, app; print('torch' in sys.modules, 'pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_a_served_page_run_pays_for_neither_a_full_heap_scan_nor_a_source_watcher():
    """Two costs Streamlit adds to every page run of every session, both under the interpreter lock:
    a full garbage collection over the ~557,000 objects the imports made (0.55 s of a 1.1 s paste),
    and the source watcher resolving every imported module's path on the thread that sends the
    answers (30 sessions' 200 KB pastes all answered at once, after 60 s)."""
    import gc
    import tomllib

    from hierattn.app.warm import settle_the_heap
    from hierattn.home import home

    config = tomllib.loads((home() / ".streamlit" / "config.toml").read_text())
    assert config["server"]["fileWatcherType"] == "none"
    import torch  # noqa: F401  what a server has imported by its first page
    settle_the_heap()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 100_000 and len(gc.get_objects()) < frozen / 5  # what a full collection still scans
    finally:
        gc.unfreeze()
