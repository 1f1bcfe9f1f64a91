"""A class pasting at once, measured at the server: pastes per second with 1 and 2 workers, and each
paste's latency, for 30 sessions pasting a ~500-word BBC article (a lecture) and ~200 KB documents
(the attack's load), each session its own distinct documents, for a fixed time.

The sessions are raw websocket clients speaking Streamlit's protocol, not browsers: 30 Chromium
tabs would take the same two cores as the server and measure the browser. Each session opens
Explore on ``bbc-news-han`` as a browser does (the page, its health check for the XSRF cookie,
the websocket), finds the Document box's widget id in the page the server sends, and then sends
the box's value as Ctrl+Enter does; a paste's latency runs from that message to the server's
"script finished" for the run that shows the explanation ("Where the model looks"). What a browser
adds after that (drawing the page) is not counted. The health check is probed once a second
throughout, and its slowest answer is reported.

``1 worker`` is ``streamlit run app.py``, ``2 workers`` is ``hierattn app --workers 2`` (the proxy in
front); both on this machine's cores with nothing else running.
"""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from http.cookies import SimpleCookie
from pathlib import Path

from bench.served import cpu_seconds, rss_mb, seconds_to_idle, start_server

MODEL = "bbc-news-han"
MARKER = b"Where the model looks"


def articles(words: int = 500) -> list[str]:
    """BBC articles of about ``words`` words (two short ones joined where needed), in a fixed order."""
    import random

    from hierattn.data.builtin import load_builtin

    texts = [t for t in load_builtin("bbc-news").texts if len(t.split()) >= 150]
    random.Random(0).shuffle(texts)  # the data set is sorted by class: every session's share spans them
    out, pending = [], ""
    for text in texts:
        pending = (pending + "\n\n" + text).strip()
        if len(pending.split()) >= words * 0.8:
            out.append(" ".join(pending.split(" ")[: int(words * 1.2)]))
            pending = ""
    return out


def long_documents(count: int, size: int = 200_000) -> list[str]:
    """``count`` distinct documents of about ``size`` characters, each BBC articles in its own order."""
    import random

    texts = articles(400)
    out = []
    for i in range(count):
        rng = random.Random(i)
        picked, length = [], 0
        while length < size:
            text = rng.choice(texts)
            picked.append(text)
            length += len(text) + 2
        out.append(f"Document {i}.\n\n" + "\n\n".join(picked)[:size])
    return out


def _start(workers: int, env: dict) -> tuple[subprocess.Popen, str]:
    """``workers`` 0: ``streamlit run app.py`` (one process, no proxy); else ``hierattn app --workers``."""
    command = None if workers == 0 else [sys.executable, "-m", "hierattn", "app", "--workers", str(workers)]
    return start_server(env, command, limit=240, own_group=True)


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (the workers behind the proxy)."""
    out = [pid]
    try:
        children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    except OSError:
        return out
    for child in children:
        out += _tree(int(child))
    return out


async def _get(url: str, cookies: dict) -> dict:
    """GET ``url`` with ``cookies``; the cookies it sets added."""
    def fetch():
        request = urllib.request.Request(url, headers={"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())})
        with urllib.request.urlopen(request, timeout=300) as answer:
            answer.read()
            return answer.headers.get_all("Set-Cookie") or []
    for header in await asyncio.get_running_loop().run_in_executor(None, fetch):
        jar = SimpleCookie()
        jar.load(header)
        cookies.update({k: v.value for k, v in jar.items()})
    return cookies


class Session:
    """One student: a websocket to Explore, pasting documents."""

    def __init__(self, url: str, query: str = f"model={MODEL}"):
        self.url, self.cookies, self.socket, self.box = url, {}, None, None
        self.query = query  # the page's address after "?", as a link gives it
        self.last_run: list[bytes] = []  # the messages of the latest run, as sent
        # what a browser sends back with every rerun: each widget's value as the page last drew it
        # (a select box's choice above all). Without them a rerun sent only the Document box, the
        # Model box fell back to the page's default, and every paste after the first was explained
        # by bbc-news-hcan, whatever the address asked for.
        self.widgets: dict[str, tuple[str, object]] = {}
        self.first_chart: float | None = None  # when the latest run's first figure arrived (monotonic)

    async def open(self) -> None:
        await _get(f"{self.url}/?{self.query}", self.cookies)
        await _get(f"{self.url}/_stcore/health", self.cookies)
        xsrf = self.cookies.get("_streamlit_xsrf", "")
        await self._stream({"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items()), "Origin": self.url},
                           ["streamlit", xsrf] if xsrf else None)

    async def _stream(self, headers: dict, subprotocols: list[str] | None) -> None:
        """Open the page's websocket with ``headers`` and run the page once, finding its Document box."""
        import websockets
        from streamlit.proto.BackMsg_pb2 import BackMsg

        self.socket = await websockets.connect(
            self.url.replace("http", "ws") + "/_stcore/stream", subprotocols=subprotocols,
            additional_headers=headers, max_size=None, open_timeout=300,
            ping_interval=None)  # a busy server answers late; the latency is what is measured
        message = BackMsg()
        message.rerun_script.query_string = self.query
        await self.socket.send(message.SerializeToString())
        await self._until_finished(find_box=True)
        if self.box is None:
            raise RuntimeError(f"the Document box was not on the page; it showed: {self.shown_text()[:1500]}")

    async def _until_finished(self, find_box: bool = False) -> bool:
        """Read until the run's end; whether the explanation was shown."""
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        shown, self.last_run, self.first_chart = False, [], None
        while True:
            raw = await self.socket.recv()
            self.last_run.append(raw)
            shown = shown or MARKER in raw
            message = ForwardMsg()
            message.ParseFromString(raw)
            kind = message.WhichOneof("type")
            if kind == "delta" and message.delta.WhichOneof("type") == "new_element":
                element = message.delta.new_element
                if self.first_chart is None and element.WhichOneof("type") == "plotly_chart":
                    self.first_chart = time.monotonic()  # the page's first figure reached the browser
                if find_box and element.WhichOneof("type") == "text_area" and element.text_area.label == "Document":
                    self.box = element.text_area.id
                self._remember(element)
            if kind == "script_finished" and message.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                return shown

    def _remember(self, element) -> None:
        """The value a browser would send back for a select box or a check box as drawn."""
        kind = element.WhichOneof("type")
        if kind == "selectbox":
            box = element.selectbox
            # a run that sets the box's value sends it (``set_value``); a run that does not leaves the
            # browser's value as it was. Taking the default there put Model back on the list's first
            # checkpoint from the second paste on, so a bbc-news-hcan session pasted into bbc-news-han
            if box.set_value:
                self.widgets[box.id] = ("string_value", box.raw_value)
            elif box.id not in self.widgets:
                self.widgets[box.id] = ("string_value", box.options[box.default] if box.options else "")
        elif kind == "checkbox":
            box = element.checkbox
            if box.set_value:
                self.widgets[box.id] = ("bool_value", box.value)
            elif box.id not in self.widgets:
                self.widgets[box.id] = ("bool_value", box.default)

    def shown_text(self) -> str:
        """What the latest run drew as text (markdown, alerts, exceptions), for a failure's message."""
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        said = []
        for raw in self.last_run:
            message = ForwardMsg()
            message.ParseFromString(raw)
            if message.WhichOneof("type") == "delta" and message.delta.WhichOneof("type") == "new_element":
                element = message.delta.new_element
                kind = element.WhichOneof("type")
                body = getattr(element, kind)
                text = getattr(body, "body", "") or getattr(body, "message", "") or getattr(body, "label", "")
                if kind == "exception":
                    text = f"{body.type}: {body.message} {' '.join(body.stack_trace)}"
                said.append(f"{kind}: {text}"[:300])
        return " | ".join(said)

    async def paste(self, text: str) -> bool:
        from streamlit.proto.BackMsg_pb2 import BackMsg

        message = BackMsg()
        message.rerun_script.query_string = self.query
        for key, (field, value) in self.widgets.items():
            if key != self.box:
                state = message.rerun_script.widget_states.widgets.add()
                state.id = key
                setattr(state, field, value)
        widget = message.rerun_script.widget_states.widgets.add()
        widget.id, widget.string_value = self.box, text
        await self.socket.send(message.SerializeToString())
        return await self._until_finished()

    async def close(self) -> None:
        if self.socket is not None:
            await self.socket.close()


async def _probe_health(url: str, stop: asyncio.Event, slowest: list[float]) -> None:
    loop = asyncio.get_running_loop()

    def ask() -> float:
        start = time.monotonic()
        try:
            urllib.request.urlopen(f"{url}/_stcore/health", timeout=120).read()
        except OSError:
            return 120.0
        return time.monotonic() - start

    while not stop.is_set():
        slowest.append(await loop.run_in_executor(None, ask))
        await asyncio.sleep(1)


def _workers(runtime: Path) -> list[dict]:
    """The supervisor's record of its workers (index, port, pid, cookie, restarts)."""
    import json

    return json.loads(next(runtime.glob("app-*/workers.json")).read_text())["workers"]


async def _class(url: str, documents: list[list[str]], seconds: float, think: float, processes: list[int],
                 kill: Path | None = None) -> dict:
    """``kill``: the runtime folder of ``hierattn app --workers``; worker 0 is killed (SIGKILL, as an
    out-of-memory kill would) half-way through, and its students open the page again and paste on."""
    import random
    import signal

    sessions = [Session(url) for _ in documents]
    record = {"latency": [], "failed": 0, "health": [], "failed_live": 0, "back_s": []}
    await asyncio.gather(*(s.open() for s in sessions))
    await asyncio.gather(*(s.paste(f"A warm-up note from student {i}. It is short.") for i, s in enumerate(sessions)))
    # each worker's first explanation starts its once-per-model background work (the out-of-domain
    # reference: 3.8 s alone); a class arrives at a server that has done it
    await asyncio.get_running_loop().run_in_executor(None, lambda: [seconds_to_idle(p) for p in processes])
    stop = asyncio.Event()
    probe = asyncio.create_task(_probe_health(url, stop, record["health"]))
    cpu_before = {p: cpu_seconds(p) for p in processes}
    started = time.monotonic()
    last = [started]

    killed: dict = {}
    victims = set()
    if kill is not None:
        doomed = _workers(kill)[0]
        victims = {i for i, s in enumerate(sessions) if s.cookies.get("hierattn_worker") == doomed["cookie"]}

        async def killer() -> None:
            await asyncio.sleep(seconds / 2)
            os.kill(doomed["pid"], signal.SIGKILL)
            killed["at"] = time.monotonic()
        asyncio.create_task(killer())

    async def student(index: int, session: Session, mine: list[str], rng: random.Random) -> None:
        if think:
            await asyncio.sleep(rng.uniform(0, think))  # students start within one reading time
        lost = False
        for text in mine:
            if time.monotonic() - started > seconds and not lost:  # a student who lost its worker tries on
                return
            begin = time.monotonic()
            try:
                if lost:  # its worker was killed: the student reloads the page
                    session = Session(url)
                    session.cookies = dict(sessions[index].cookies)
                    await asyncio.wait_for(session.open(), 120)
                shown = await asyncio.wait_for(session.paste(text), 600)
            except Exception:  # noqa: BLE001  an unanswered paste, counted
                shown = False
            if shown:
                record["latency"].append(time.monotonic() - begin)
                record.setdefault("trace", []).append((round(begin - started, 1), round(time.monotonic() - begin, 2)))
                last[0] = time.monotonic()
                if lost:
                    record["back_s"].append(time.monotonic() - killed["at"])
                    lost = False
            else:
                record["failed"] += 1
                if index in victims and "at" in killed:
                    lost = True
                    await asyncio.sleep(0.5)
                    continue  # reloads at once, as a student whose page went blank would
                else:
                    record["failed_live"] += 1
            if think:
                await asyncio.sleep(rng.uniform(think / 2, think * 1.5))  # reading the answer

    await asyncio.gather(*(student(i, s, d, random.Random(i)) for i, (s, d) in enumerate(zip(sessions, documents,
                                                                                            strict=True))))
    record["victims"] = len(victims)
    stop.set()
    await probe
    await asyncio.gather(*(s.close() for s in sessions))
    record["seconds"] = last[0] - started
    # a killed worker reads 0 at the end: its time up to the start is taken, its time after is lost
    record["cores_busy"] = (sum(max(cpu_seconds(p), before) for p, before in cpu_before.items())
                            - sum(cpu_before.values())) / (time.monotonic() - started)
    return record


def _stop(server: subprocess.Popen) -> None:
    """End the server and its workers (its own process group), killed if they linger."""
    os.killpg(server.pid, 15)
    try:
        server.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, 9)


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))], 2)


def run_load(workers: int, sessions: int, kind: str, seconds: float = 60.0, think: float = 0.0,
             kill: bool = False) -> dict:
    """``sessions`` students pasting ``kind`` documents ("article": ~500 words; "200kb") into one
    fresh server of ``workers`` processes for ``seconds``; the figures. ``think``: 0, each pastes
    again as soon as it is answered (the server saturated: its throughput); else a lecture, where a
    student reads each answer for 0.5-1.5 x ``think`` seconds before the next paste, and the class
    starts within ``think`` seconds. ``kill``: worker 0 is killed half-way (see ``_class``)."""
    pool = articles() if kind == "article" else long_documents(sessions * 8)
    per = max(1, len(pool) // sessions)
    documents = [pool[i * per:(i + 1) * per] or pool[i % len(pool):][:1] for i in range(sessions)]
    env = {k: v for k, v in os.environ.items() if k not in ("HIERATTN_CHECKPOINTS", "HIERATTN_THREADS")}
    runtime = Path(tempfile.mkdtemp(prefix="hierattn-load-"))
    env["HIERATTN_RUNTIME"] = str(runtime)
    server, url = _start(workers, env)
    try:
        processes = _tree(server.pid)
        record = asyncio.run(_class(url, documents, seconds, think, processes, runtime if kill else None))
        memory = sum(rss_mb(p) for p in _tree(server.pid))
    finally:
        _stop(server)
    answered = len(record["latency"])
    return {"workers": workers, "sessions": sessions, "document": kind, "think_s": think,
            "words": round(sum(len(d.split()) for d in pool) / len(pool)),
            "characters": round(sum(map(len, pool)) / len(pool)),
            "answered": answered, "failed": record["failed"],
            "pastes_per_s": round(answered / record["seconds"], 2) if record["seconds"] > 0 else None,
            "p50_s": _percentile(record["latency"], 50), "p95_s": _percentile(record["latency"], 95),
            "health_slowest_s": round(max(record["health"], default=0), 2),
            "server_cores_busy": round(record["cores_busy"], 2), "server_rss_mb": round(memory),
            **({"killed_worker": {"its_students": record["victims"], "failed_on_live_workers": record["failed_live"],
                                  "served_again_s": sorted(round(b, 1) for b in record["back_s"])}} if kill else {}),
            "trace": sorted(record.get("trace", []))}


async def _wave(url: str, texts: list[str], processes: list[int], model: str) -> dict:
    """Every session pastes its text at the same moment, once, into a warm server; the seconds from
    each paste to its page's first figure and to the end of its run."""
    sessions = [Session(url, f"model={model}") for _ in texts]
    await asyncio.gather(*(s.open() for s in sessions))
    await asyncio.gather(*(s.paste(f"A warm-up note from student {i}. It is short.") for i, s in enumerate(sessions)))
    await asyncio.get_running_loop().run_in_executor(None, lambda: [seconds_to_idle(p) for p in processes])

    async def paste(session: Session, text: str) -> tuple[float | None, float | None]:
        begin = time.monotonic()
        try:
            shown = await asyncio.wait_for(session.paste(text), 600)
        except Exception:  # noqa: BLE001  an unanswered paste, counted
            return None, None
        chart = session.first_chart - begin if shown and session.first_chart else None
        return chart, (time.monotonic() - begin if shown else None)

    answers = await asyncio.gather(*(paste(s, t) for s, t in zip(sessions, texts, strict=True)))
    await asyncio.gather(*(s.close() for s in sessions))
    charts = [c for c, _ in answers if c is not None]
    ends = [e for _, e in answers if e is not None]
    return {"answered": len(ends), "failed": len(texts) - len(ends),
            "first_chart_p50_s": _percentile(charts, 50), "first_chart_p95_s": _percentile(charts, 95),
            "run_p50_s": _percentile(ends, 50), "run_p95_s": _percentile(ends, 95)}


def run_wave(workers: int, sessions: int, same: bool, model: str = MODEL) -> dict:
    """``sessions`` students pasting at once into a fresh, warm ``hierattn app --workers`` server on
    Explore with ``model``: one ~500-word article for all (``same``: a class on one sample), or each
    its own article."""
    pool = articles()
    texts = [pool[0]] * sessions if same else pool[:sessions]
    env = {k: v for k, v in os.environ.items() if k not in ("HIERATTN_CHECKPOINTS", "HIERATTN_THREADS")}
    env["HIERATTN_RUNTIME"] = tempfile.mkdtemp(prefix="hierattn-wave-")
    server, url = _start(workers, env)
    try:
        figures = asyncio.run(_wave(url, texts, _tree(server.pid), model))
    finally:
        _stop(server)
    return {"workers": workers, "sessions": sessions, "model": model,
            "documents": "one sample" if same else "different articles", **figures}


# (workers, one sample for all, model): the class-load model and HCAN's heavier page, each on 1 and 2 workers
WAVES = tuple((workers, same, model) for model in (MODEL, "bbc-news-hcan") for same in (True, False)
              for workers in (1, 2))


def record_waves(quick: bool = False) -> list[dict]:
    """Thirty students pasting at once (quick: six), one sample and different articles."""
    return [run_wave(workers, 6 if quick else 30, same, model) for workers, same, model in WAVES]


def format_waves(rows: list[dict]) -> list[str]:
    lines = ["| server | model | sessions pasting at once | documents | answered | first chart p50 | first chart p95 "
             "| whole page p95 |", "|---|---|---:|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| `hierattn app --workers {r['workers']}` | {r['model']} | {r['sessions']} | {r['documents']} | "
                     f"{r['answered']} ({r['failed']} failed) | {r['first_chart_p50_s']} s | "
                     f"{r['first_chart_p95_s']} s | {r['run_p95_s']} s |")
    return lines


CASES = (  # (workers, document, think): 0 workers is `streamlit run app.py`, no proxy
    (0, "article", 0.0), (1, "article", 0.0), (2, "article", 0.0),  # throughput: each pastes again at once
    (0, "article", 10.0), (2, "article", 10.0),  # a lecture: a student reads each answer ~10 s
    (0, "200kb", 0.0), (1, "200kb", 0.0), (2, "200kb", 0.0))  # the attack's load


def record_load(quick: bool = False) -> list[dict]:
    """Every case of ``CASES`` for 30 sessions and 60 s (quick: 6 sessions, 15 s, fewer cases)."""
    cases = [(1, "article", 0.0), (2, "article", 0.0)] if quick else CASES
    out = []
    for workers, kind, think in [*cases, (2, "article", 10.0)]:
        kill = len(out) == len(cases)  # the last: a lecture on 2 workers, worker 0 killed half-way
        figures = run_load(workers, 6 if quick else 30, kind, 30.0 if quick and kill else 15.0 if quick else 60.0,
                           think, kill=kill)
        figures.pop("trace", None)
        out.append(figures)
    return out


def format_load(rows: list[dict]) -> list[str]:
    lines = ["| server | sessions | documents | pastes | answered | pastes/s | p50 | p95 | slowest health check "
             "| cores busy | memory |", "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        server = "`streamlit run app.py`" if r["workers"] == 0 else f"`hierattn app --workers {r['workers']}`"
        pace = "at once" if not r["think_s"] else f"after reading ~{r['think_s']:g} s"
        lines.append(f"| {server} | {r['sessions']} | {r['document']} (~{r['words']:,} words) | {pace} | "
                     f"{r['answered']} ({r['failed']} failed) | {r['pastes_per_s']} | {r['p50_s']} s | "
                     f"{r['p95_s']} s | {r['health_slowest_s']} s | {r['server_cores_busy']} | "
                     f"{r['server_rss_mb']:,} MB |")
    for r in rows:
        if k := r.get("killed_worker"):
            back = k["served_again_s"]
            lines.append(f"\nWorker 0 of 2 killed half-way through the lecture row's run: {k['its_students']} of its "
                         f"{r['sessions']} students reloaded the page and pasted on, "
                         f"{len(back)} of them served again, the last after {max(back, default=0):g} s; "
                         f"{k['failed_on_live_workers']} failed pastes on the live worker.")
    return lines


if __name__ == "__main__":
    import json

    print(json.dumps(run_load(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4]),
                              float(sys.argv[5]) if len(sys.argv) > 5 else 0.0)))
