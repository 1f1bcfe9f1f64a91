"""The app as a visitor meets it: its resident memory with every checkpoint loaded, an Explore
rerun (AppTest), the cold start and a long document drawn in headless Chromium."""
from __future__ import annotations

import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path


def app_memory_mb(checkpoints: str | Path) -> float:
    """Resident memory (MB) of a fresh process that imports what the app imports and loads every
    checkpoint in ``checkpoints`` and the tokeniser (Linux: VmRSS)."""
    import subprocess

    code = ("import streamlit, plotly, pandas, torch\n"
            "from hierattn.checkpoint.reading import load_classifier\n"
            "from hierattn.home import list_checkpoints\n"
            "from hierattn.analysis.explain import explain\n"
            f"models = [load_classifier(p) for p in list_checkpoints({str(checkpoints)!r})]\n"
            "[explain(m, 'The market rallied. Shares rose.') for m in models]\n"
            "print(next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmRSS')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1]) / 1024


def _chromium() -> str | None:
    """Debian's Chromium when it and Playwright are installed (test tools, not requirements of the
    app); None otherwise, and the browser figures are left out."""
    import shutil

    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return None
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    return chromium if Path(chromium).exists() else None


@contextmanager
def _served_app(port: int, timeout: float):
    """``streamlit run app.py`` on ``port``, from the moment it answers its health check until the
    block ends."""
    import subprocess
    import urllib.request

    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                               "--server.port", str(port)], cwd=Path(__file__).resolve().parent.parent,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            try:
                urllib.request.urlopen(f"http://localhost:{port}/_stcore/health", timeout=1)
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://localhost:{port}"
    finally:
        server.terminate()
        server.wait()


def cold_start_seconds(port: int = 8597, timeout: float = 120.0) -> float | None:
    """Seconds from launching ``streamlit run app.py`` to the first chart drawn in headless
    Chromium (the browser is started beforehand, as a user's is). None without Playwright and
    Chromium."""
    chromium = _chromium()
    if chromium is None:
        return None
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        start = time.perf_counter()
        with _served_app(port, timeout) as url:
            page.goto(url + "/")
            page.wait_for_selector(".js-plotly-plot", timeout=timeout * 1000)
            seconds = time.perf_counter() - start
        browser.close()
    return seconds


def fresh_visit_seconds(visits: int = 5, port: int = 8596, timeout: float = 120.0) -> dict | None:
    """Seconds from opening Explore in a browser that has never visited (a new context: no cache, no
    cookie) to its first chart drawn, on a warm server (``streamlit run app.py``, one visit made
    before the timed ones, so its models and tokeniser are loaded): the median and the slowest of
    ``visits``; and when the server's last message of that first page run reached the browser
    (``answered``), which splits the time between the server and the browser's own work (loading
    and running Streamlit's and plotly's scripts, drawing). One more visit, not timed, is profiled
    (``browser_ms``: ``main_thread_ms``)."""
    chromium = _chromium()
    if chromium is None:
        return None
    from playwright.sync_api import sync_playwright

    times, answered = [], []
    with sync_playwright() as p, _served_app(port, timeout) as url:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        for visit in range(visits + 1):
            context = browser.new_context(viewport={"width": 1920, "height": 1080})
            page = context.new_page()
            frames: list[float] = []
            page.on("websocket", lambda socket, frames=frames: socket.on(
                "framereceived", lambda _payload: frames.append(time.perf_counter())))
            start = time.perf_counter()
            page.goto(url + "/")
            page.wait_for_selector(".js-plotly-plot", timeout=timeout * 1000)
            drawn = time.perf_counter()
            if visit:  # the first visit warms the server
                times.append(drawn - start)
                answered.append(max((f for f in frames if f <= drawn), default=drawn) - start)
            context.close()
        spent = main_thread_ms(browser, url, timeout)
        browser.close()
    return {"median_s": round(statistics.median(times), 2), "slowest_s": round(max(times), 2), "visits": visits,
            "answered_median_s": round(statistics.median(answered), 2), "browser_ms": spent}


def main_thread_ms(browser, url: str, timeout: float) -> dict[str, int]:
    """Where the browser's main thread went between opening Explore in a fresh context and its first
    chart: V8's sampling profiler (Chrome DevTools Protocol, a sample every 0.5 ms), each sample's
    time put under the script it ran (plotly's chunk; Streamlit's own scripts, React among them),
    the browser's own work outside scripts (``(program)``: parsing, style, layout, painting; and
    garbage collection), or ``idle`` (waiting for the network or the server). Profiling slows the
    visit a little; its sum is that visit's seconds."""
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    page = context.new_page()
    devtools = context.new_cdp_session(page)
    devtools.send("Profiler.enable")
    devtools.send("Profiler.setSamplingInterval", {"interval": 500})
    devtools.send("Profiler.start")
    page.goto(url + "/")
    page.wait_for_selector(".js-plotly-plot", timeout=timeout * 1000)
    profile = devtools.send("Profiler.stop")["profile"]
    context.close()
    frames = {node["id"]: node["callFrame"] for node in profile["nodes"]}
    spent: dict[str, float] = {}
    # timeDeltas[i] is the time before sample i: sample i ran until sample i + 1
    for sample, after in zip(profile["samples"], profile["timeDeltas"][1:] + [0]):
        frame = frames[sample]
        script = frame["url"].rsplit("/", 1)[-1]
        name = ("plotly" if script.startswith("PlotlyChart") else "streamlit's scripts" if script
                else {"(idle)": "idle", "(program)": "browser outside scripts",
                      "(garbage collector)": "browser outside scripts"}.get(frame["functionName"],
                                                                            "streamlit's scripts"))
        spent[name] = spent.get(name, 0.0) + after / 1000
    return {name: round(ms) for name, ms in sorted(spent.items(), key=lambda item: -item[1])}


def long_document_render_seconds(text: str, checkpoints: tuple[str, ...], port: int = 8598,
                                 timeout: float = 180.0) -> dict[str, float] | None:
    """Seconds from pasting ``text`` (Ctrl+Enter) into Explore in headless Chromium to the page
    finished and drawn (no script running, the document view and a heatmap on screen), for each
    checkpoint. None without Playwright and Chromium."""
    chromium = _chromium()
    if chromium is None:
        return None
    from playwright.sync_api import sync_playwright

    busy = "!!document.querySelector('[data-testid=stStatusWidget], [data-testid=stSkeleton]')"
    out = {}
    with _served_app(port, timeout) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        for checkpoint in checkpoints:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/?model={checkpoint}")
            page.wait_for_selector(".js-plotly-plot", timeout=timeout * 1000)
            page.wait_for_function(f"() => !({busy})", timeout=timeout * 1000)
            box = page.get_by_role("textbox", name="Document", exact=True)
            box.fill(text)
            before = page.get_by_text("tokens read").first.inner_text()
            start = time.perf_counter()
            box.press("Control+Enter")
            # done: the prediction's caption names the new document, nothing runs, the charts are drawn
            page.wait_for_function(
                f"""before => {{ const c = [...document.querySelectorAll('[data-testid=stCaptionContainer]')]
                                 .find(e => e.innerText.includes('tokens read'));
                               return c && c.innerText !== before && !({busy})
                                      && document.querySelectorAll('.js-plotly-plot').length >= 2; }}""",
                arg=before, timeout=timeout * 1000)
            page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
            out[checkpoint] = time.perf_counter() - start
            page.close()
        browser.close()
    return out


def explore_rerun_seconds(text: str, checkpoint: str, repeats: int) -> float:
    """Median seconds of an Explore page rerun (AppTest, the shipped checkpoints) for ``text``."""
    from streamlit.testing.v1 import AppTest

    app = str(Path(__file__).resolve().parent.parent / "pages" / "explore.py")
    at = AppTest.from_file(app, default_timeout=120)
    at.session_state["model"] = checkpoint
    at.session_state["document"] = text
    at.run()  # the first run explains (cached after)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def explore_drawn_seconds(texts: list[str], checkpoint: str, checkpoints: str | Path,
                          timeout: float = 180.0) -> list[float] | None:
    """Seconds from pasting each of ``texts`` (Ctrl+Enter) into Explore in headless Chromium to the
    page drawn: no script running and no element left stale from the text before. Works for a
    model without a prediction (a base encoder), which ``long_document_render_seconds`` waits for.
    ``checkpoints`` is added beside the shipped ones (``HIERATTN_CHECKPOINTS``). The page is
    polled five times a second: polling faster cost the page's own drawing a second (Playwright's
    queries run on the page's thread). None without Playwright and Chromium."""
    import os
    from unittest import mock

    chromium = _chromium()
    if chromium is None:
        return None
    from playwright.sync_api import sync_playwright

    busy = ("() => !!document.querySelector('[data-testid=stStatusWidget], [data-testid=stSkeleton]') "
            "|| !!document.querySelector('[data-stale=true]')")
    out = []
    with mock.patch.dict(os.environ, {"HIERATTN_CHECKPOINTS": str(checkpoints)}):  # restored after
        with _served_app(8599, timeout) as url, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/?model={checkpoint}")
            page.wait_for_selector(".js-plotly-plot", timeout=timeout * 1000)
            _quiet_since(page, busy, timeout)
            for text in texts:
                box = page.get_by_role("textbox", name="Document", exact=True)
                box.fill(text)
                start = time.perf_counter()
                box.press("Control+Enter")
                time.sleep(0.3)  # the rerun starts
                out.append(_quiet_since(page, busy, timeout) - start)
            browser.close()
    return out


def _quiet_since(page, busy: str, timeout: float, hold: float = 0.6) -> float:
    """The moment the page went quiet (``busy`` false) and stayed so for ``hold`` seconds."""
    deadline, quiet = time.perf_counter() + timeout, None
    while time.perf_counter() < deadline:
        if page.evaluate(busy):
            quiet = None
        elif quiet is None:
            quiet = time.perf_counter()
        elif time.perf_counter() - quiet >= hold:
            return quiet
        time.sleep(0.2)
    raise TimeoutError("the page did not settle")
