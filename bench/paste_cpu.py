"""What one paste costs the server, per model family: its CPU time, the messages and bytes it sends
the browser, and where the CPU went (a breakdown by what the sampled stacks were doing), beside the
model's own explanation of the same articles.

One ``streamlit run app.py`` on this machine, one websocket session speaking Streamlit's protocol
(``bench.load.Session``) on Explore with the model picked in the address; three warm-up pastes,
then ``PASTES`` distinct ~550-word BBC articles (``bench.load.articles``), one at a time. The
server's CPU time is read from /proc around each paste, after it has gone back to idle (so the
background work a paste starts is counted with it). An idle Streamlit server is not idle to the
kernel: it polls its config files five times a second and uvicorn ticks ten times a second, 6-8.5 ms
of CPU a second on this machine for the app and for a bare page alike, and a paste's window (the
paste, then at least one second found idle) held 6-9 ms of it. ``cpu_ms`` is net of it: the idle
server's rate (``IDLE_WINDOW_S`` seconds of it, read before the timed pastes) times each paste's
window is taken off that paste (``net_of_idle``); ``cpu_ms_gross`` is the reading itself. The
breakdown comes from ``py-spy`` sampling the server at 200 Hz during the timed pastes
(``--nonblocking``: the server is not paused), each sample put in the first category its stack
reaches, from the innermost frame out (``CATEGORIES``); the idle server's polling and ticks are
left out of it as the waiting event loop is.
The model's own figure is ``analysis.explain`` on the same articles in this process.

Beside it, Streamlit's own floor on this machine (``floor_ms``): the same server settings (this
repository's ``.streamlit/config.toml``) serving a bare page of a Document box and as many one-line
markdown elements as make the page's message count, pasted into ``FLOOR_RUNS`` times, net of its
own idle rate as above. What a page of that many elements costs before any of it is computed: a
paste can cost no less without sending fewer elements.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from bench.load import Session, articles
from bench.served import REPO, cpu_seconds, rss_mb, seconds_to_idle, start_server

MODELS = ("bbc-news-han", "bbc-news-hcan")
PASTES = 12
WARM = 3
SHARED = 8  # pastes of a document the server has explained already
FLOOR_RUNS = 100
FLOOR_PAGE = """import os
import streamlit as st
text = st.text_area("Document")
for i in range(int(os.environ["FLOOR_ELEMENTS"])):
    st.markdown(f"line {i} · {len(text)} characters")
"""
IDLE_WINDOW_S = 15.0  # the idle server's own rate, read over this long: +-10 ms counted, +-0.7 ms/s
FLOOR_MESSAGES = 5  # the bare page's own: new session, page info, the box, the end of the run...
# (category, substrings of a frame's "function (file)" that put a sample in it), tried from the
# innermost frame of a stack outwards: the first category a frame matches takes the sample
CATEGORIES = (
    ("waiting (not counted)", ("EpollSelector.select", "selectors.py")),
    ("the idle server (not counted)", ("polling_path_watcher.py", "Server.on_tick (uvicorn/",
                                       "Server.main_loop (uvicorn/")),
    ("garbage collection", ("_on_script_finished", "postScriptGC", "gc_collect")),
    ("model", ("hierattn/models/", "torch/nn/modules/")),
    ("tokenisation", ("spacy/", "hierattn/data/text.py")),
    ("figures", ("plotly/",)),
    ("tables", ("pandas/io/formats/style", "pandas/")),
    ("messages", ("google/protobuf", "forward_msg", "websocket", "tornado/", "browser_websocket")),
    ("attention and statistics", ("hierattn/analysis/", "hierattn/viz/")),
    ("the page", ("hierattn/app/", "pages/", "app.py")),
    ("streamlit", ("streamlit/",)),
)


def _category(stack: str) -> str:
    for frame in reversed(stack.split(";")):
        for name, marks in CATEGORIES:
            if any(mark in frame for mark in marks):
                return name
    return "other"


def breakdown(collapsed: str) -> dict[str, float]:
    """py-spy's collapsed stacks ("frame;frame;... count" lines) -> each category's share of the busy
    samples (an event loop waiting in ``select`` is sampled as busy by py-spy; it is left out, as is
    what the server does idle)."""
    counts: dict[str, int] = {}
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            counts[_category(stack)] = counts.get(_category(stack), 0) + int(count)
    for name, _ in CATEGORIES[:2]:
        counts.pop(name, None)
    total = sum(counts.values()) or 1
    return {k: round(v / total, 3) for k, v in sorted(counts.items(), key=lambda kv: -kv[1])}


def idle_rate(pid: int, seconds: float = IDLE_WINDOW_S) -> float:
    """The idle server's own CPU, ms per second of wall time (its polling and ticks)."""
    before, start = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return 1000 * (cpu_seconds(pid) - before) / (time.monotonic() - start)


def net_of_idle(spent_ms: float, window_s: float, rate: float) -> float:
    """A paste's CPU less what the idle server spends over its window anyway; never below 0 (the
    kernel counts to 10 ms, so a cheap paste read as 0 ms stays 0, not a negative cost)."""
    return max(0.0, spent_ms - rate * window_s)


@contextmanager
def _timed(pid: int, rate: float, cpu: list[float], gross: list[float]):
    """One timed paste: its CPU until the server is idle again, appended as read (``gross``) and net
    of the idle rate (``cpu``)."""
    before, start = cpu_seconds(pid), time.monotonic()
    yield
    seconds_to_idle(pid, 30)
    spent = 1000 * (cpu_seconds(pid) - before)
    gross.append(spent)
    cpu.append(net_of_idle(spent, time.monotonic() - start, rate))


def _model_ms(model: str, texts: list[str]) -> float:
    """The median of ``analysis.explain`` on ``texts`` in this process (after one untimed call)."""
    from hierattn.analysis.explain import explain
    from hierattn.checkpoint.reading import load_classifier
    from hierattn.home import checkpoint_root

    classifier = load_classifier(checkpoint_root() / model, device="cpu")
    explain(classifier, texts[0])
    times = []
    for text in texts:
        start = time.process_time()
        explain(classifier, text)
        times.append(1000 * (time.process_time() - start))
    return statistics.median(times)


def _display_name(model: str) -> str:
    from hierattn.checkpoint.reading import load_classifier
    from hierattn.home import checkpoint_root

    return load_classifier(checkpoint_root() / model, device="cpu").display_name


async def _pastes(url: str, model: str, texts: list[str], pid: int, profile: Path | None) -> dict:
    # the sidebar names the model that explained the paste: the bench once timed another model
    # than it named from the second paste on (bench.load.Session._remember)
    named = f"**{_display_name(model)}** ·".encode()
    session = Session(url, f"model={model}")
    await session.open()
    for text in texts[:WARM]:
        await session.paste(text)
    seconds_to_idle(pid, 30)
    rate = idle_rate(pid)
    spy = None
    if profile is not None and shutil.which("py-spy"):
        spy = subprocess.Popen(["py-spy", "record", "--pid", str(pid), "--rate", "200", "--nonblocking",
                                "--format", "raw", "--output", str(profile), "--duration", "600"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)
    cpu, gross, sizes, counts = [], [], [], []
    for text in texts[WARM:WARM + PASTES]:
        with _timed(pid, rate, cpu, gross):
            shown = await session.paste(text)
        if not shown:
            raise RuntimeError(f"the explanation was not shown: {session.shown_text()[:600]}")
        if not any(named in message for message in session.last_run):
            raise RuntimeError(f"the page did not explain with {model}: {session.shown_text()[:600]}")
        sizes.append(sum(len(m) for m in session.last_run))
        counts.append(len(session.last_run))
    if spy is not None:
        spy.send_signal(2)  # SIGINT: py-spy writes what it sampled
        spy.wait(60)
    # a class on one sample: every session after the first pastes a document already explained (the
    # explanation and its figures are the server's, shared); two such documents in turn, so that each
    # paste changes the text as a new session's does
    shared, shared_gross = [], []
    for text in texts[WARM:WARM + 2] * (SHARED // 2):
        with _timed(pid, rate, shared, shared_gross):
            await session.paste(text)
    await session.close()
    return {"cpu_ms": round(statistics.median(cpu), 1), "cpu_ms_range": [round(min(cpu), 1), round(max(cpu), 1)],
            "cpu_ms_gross": round(statistics.median(gross), 1), "idle_ms_per_s": round(rate, 1),
            "kb": round(statistics.median(sizes) / 1024, 1), "messages": int(statistics.median(counts)),
            "shared_ms": round(statistics.median(shared), 1), "rss_mb": round(rss_mb(pid))}


def floor_page(folder: Path) -> Path:
    """The bare page in ``folder``, with this repository's Streamlit settings beside it."""
    (folder / ".streamlit").mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / ".streamlit" / "config.toml", folder / ".streamlit" / "config.toml")
    (folder / "app.py").write_text(FLOOR_PAGE)
    return folder


async def _floor_runs(url: str, pid: int, texts: list[str]) -> tuple[float, int]:
    session = Session(url, "")
    await session.open()
    for text in texts[:WARM]:
        await session.paste(text)
    seconds_to_idle(pid, 30)
    rate = idle_rate(pid)
    before, start = cpu_seconds(pid), time.monotonic()
    for i in range(FLOOR_RUNS):
        await session.paste(texts[i % len(texts)])
    seconds_to_idle(pid, 30)  # the background work of the last runs is counted too, as each paste's is
    spent = net_of_idle(1000 * (cpu_seconds(pid) - before), time.monotonic() - start, rate) / FLOOR_RUNS
    await session.close()
    return spent, len(session.last_run)


def floor_ms(messages: int, texts: list[str]) -> dict:
    """Server CPU a rerun of a bare page sending ``messages`` messages (see the module)."""
    folder = floor_page(Path(tempfile.mkdtemp(prefix="hierattn-floor-")))
    env = {**os.environ, "FLOOR_ELEMENTS": str(max(0, messages - FLOOR_MESSAGES))}
    server, url = start_server(env, [sys.executable, "-m", "streamlit", "run", str(folder / "app.py")], limit=120,
                               own_group=True, cwd=folder)
    try:
        spent, sent = asyncio.run(_floor_runs(url, server.pid, texts))
    finally:
        os.killpg(server.pid, 15)
        server.wait(30)
    return {"floor_ms": round(spent, 1), "floor_messages": sent}


KEPT = (0, 500, 1_900)  # documents already kept when a paste is kept for its link


def keep_ms(texts: list[str], counts=KEPT, writers: int = 60, keeps: int = 20) -> dict[str, float]:
    """The median ms of keeping a new ~550-word paste for its link (``app.documents.keep``) with
    ``counts`` documents already kept by ``writers`` visitors, in a folder of its own. A server
    some weeks into a course holds up to ``KEPT_DOCUMENTS`` of them; the pastes above start from an
    empty folder, where a keep reads nothing."""
    from unittest import mock

    folder = Path(tempfile.mkdtemp(prefix="hierattn-kept-"))
    try:
        with mock.patch.dict(os.environ, {"HIERATTN_DOCUMENTS": str(folder / "kept"),
                                          "HIERATTN_RUNTIME": str(folder / "rt")}):
            from hierattn.app import documents

            out, written = {}, 0
            for count in counts:
                while (short := count - len(list((folder / "kept").glob("*.txt")))) > 0:  # the shortfall at once
                    for _ in range(short):
                        documents.keep(f"{texts[written % len(texts)]} ({written})", f"visitor {written % writers}")
                        written += 1
                times = []
                for i in range(keeps):
                    start = time.perf_counter()
                    documents.keep(f"{texts[i % len(texts)]} (new {count}, {i})", f"new visitor {i}")
                    times.append(1000 * (time.perf_counter() - start))
                out[str(count)] = round(statistics.median(times), 1)
            return out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run_paste_cpu(models=MODELS) -> list[dict]:
    """One row per model: the server's CPU per paste, bytes, messages, breakdown and the model's time."""
    texts = articles(550)[: WARM + PASTES]
    kept = keep_ms(texts)  # the app's, not a model's: timed once, shown on each row
    rows = []
    for model in models:
        env = {**os.environ, "HIERATTN_CACHE": tempfile.mkdtemp(prefix="hierattn-bench-")}
        server, url = start_server(env, limit=240, own_group=True)
        try:
            profile = Path(tempfile.mkdtemp()) / "stacks.txt"
            row = {"model": model, "pastes": PASTES, "words": 550,
                   **asyncio.run(_pastes(url, model, texts, server.pid, profile))}
            row["breakdown"] = breakdown(profile.read_text()) if profile.exists() else {}
        finally:
            os.killpg(server.pid, 15)
            server.wait(30)
        row["model_ms"] = round(_model_ms(model, texts[WARM:WARM + PASTES]), 1)
        row["ratio"] = round(row["cpu_ms"] / row["model_ms"], 1) if row["model_ms"] else None
        row.update(floor_ms(row["messages"], texts))
        row["keep_ms"] = kept
        rows.append(row)
    return rows


def format_paste_cpu(rows: list[dict]) -> list[str]:
    out = []
    for r in rows:
        parts = ", ".join(f"{k} {100 * v:.0f}%" for k, v in r.get("breakdown", {}).items())
        idle = (f" net of the idle server's {r['idle_ms_per_s']:.1f} ms a second ({r['cpu_ms_gross']:.0f} ms as read)"
                if "idle_ms_per_s" in r else "")
        out.append(f"{r['model']}: {r['cpu_ms']:.0f} ms of server CPU a paste ({r['cpu_ms_range'][0]:.0f}-"
                   f"{r['cpu_ms_range'][1]:.0f}){idle}, {r['messages']} messages, {r['kb']:.0f} KB; the model's own "
                   f"explanation {r['model_ms']:.0f} ms ({r['ratio']} times); a document already explained "
                   f"{r.get('shared_ms', 0):.0f} ms; a bare page of {r.get('floor_messages', 0)} messages "
                   f"{r.get('floor_ms', 0):.0f} ms; keeping a paste for its link with "
                   + ", ".join(f"{n} kept {ms:.1f} ms" for n, ms in r.get("keep_ms", {}).items()) + f"; where: {parts}")
    return out


if __name__ == "__main__":
    for line in format_paste_cpu(run_paste_cpu(sys.argv[1:] or MODELS)):
        print(line)
