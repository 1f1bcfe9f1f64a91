"""The soak's class server: what took half a class away on ``hierattn app --workers 2``, replayed on
the soak's folder of checkpoints with raw websocket clients (``bench.load.Session``):

- **steering**: one client holds 40 idle websockets on worker 0; ten new visitors should still split
  5/5 between the workers (it sent 10 of 10 to worker 1);
- **twenty cookie-less identities** each paste three documents into a store of 16: the teacher's
  link of a minute before must still open its text (nine identities pushed it out);
- **a worker killed** (SIGKILL, as the kernel's out-of-memory killer does): its visitor is served
  again, the supervisor starts it again, and the health check never says 503 meanwhile.

``run_class_server`` returns the figures; ``bench/soak.py`` runs it after its rounds when it runs on
a server of its own (the bench). The suite checks each of these on stand-in workers and in the app
(``tests/cli/test_serve.py``, ``tests/app/test_documents.py``).
"""
from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from bench.load import Session, _get, _workers
from bench.served import start_server

KEPT = 16  # documents the class server keeps for links: a visitor's share is 2
TEACHER = "The school board approved the new curriculum for the spring term."


class CookielessSession(Session):
    """A scripted client that sends no cookie, not even Streamlit's XSRF one: a new visitor on every
    connection, placed by the proxy's fallback."""

    async def open(self) -> None:
        await self._stream({"Origin": self.url}, None)


def _health(url: str) -> int:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=30) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


async def _steering(url: str, runtime: Path) -> dict:
    """40 idle websockets of one client on worker 0, then 10 new visitors: where they go."""
    import websockets

    cookies: dict = {}
    by_cookie = {w["cookie"]: w["index"] for w in _workers(runtime)}
    while by_cookie.get(cookies.get("hierattn_worker")) != 0:  # a visitor of worker 0
        cookies = await _get(f"{url}/", {})
    header = {"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items()), "Origin": url}
    held = [await websockets.connect(url.replace("http", "ws") + "/_stcore/stream", additional_headers=header,
                                     ping_interval=None) for _ in range(40)]
    try:
        landed = [by_cookie.get((await _get(f"{url}/", {})).get("hierattn_worker")) for _ in range(10)]
    finally:
        await asyncio.gather(*(s.close() for s in held))
    return {"new_visitors_per_worker": [landed.count(0), landed.count(1)]}


async def _identities(url: str, model: str, documents: Path) -> dict:
    """The teacher pastes and shares; twenty cookie-less clients paste three documents each; a
    student opens the teacher's link."""
    teacher = Session(url, f"model={model}")
    await teacher.open()
    await teacher.paste(TEACHER)
    await teacher.close()
    key = _link_key(TEACHER, documents)

    async def flood(who: int) -> None:
        client = CookielessSession(url, f"model={model}")
        await client.open()
        for i in range(3):
            await client.paste(f"Every exam is cancelled, says visitor {who} in message {i}.")
        await client.close()

    await asyncio.gather(*(flood(who) for who in range(20)))
    student = Session(url, f"model={model}&doc={key}")
    await student.open()
    opened = any(TEACHER.encode() in raw for raw in student.last_run)
    await student.close()
    return {"teachers_link_opened": opened, "documents_kept": len(list(documents.rglob("*.txt"))),
            "documents_limit": KEPT}


def _link_key(text: str, documents: Path) -> str:
    """The key the server gives ``text``: ``documents.link_key`` under its documents folder's secret."""
    from unittest import mock

    from hierattn.app import documents as kept

    with mock.patch.dict(os.environ, {"HIERATTN_DOCUMENTS": str(documents)}):
        return kept.link_key(text)


async def _killed(url: str, model: str, runtime: Path) -> dict:
    """A visitor of worker 0 pastes, worker 0 is killed, the visitor reloads and pastes again."""
    by_cookie = {w["cookie"]: w for w in _workers(runtime)}
    visitor = Session(url, f"model={model}")
    while True:  # a visitor of worker 0
        await visitor.open()
        if by_cookie.get(visitor.cookies.get("hierattn_worker"), {}).get("index") == 0:
            break
        await visitor.close()
        visitor = Session(url, f"model={model}")
    await visitor.paste("A note before the worker goes. It is short.")
    doomed = next(w for w in _workers(runtime) if w["index"] == 0)
    statuses: list[int] = []
    stop = asyncio.Event()

    async def probe() -> None:
        loop = asyncio.get_running_loop()
        while not stop.is_set():
            statuses.append(await loop.run_in_executor(None, _health, url))
            await asyncio.sleep(0.5)

    prober = asyncio.create_task(probe())
    os.kill(doomed["pid"], signal.SIGKILL)
    killed = time.monotonic()
    served_again = None
    while served_again is None and time.monotonic() - killed < 60:
        again = Session(url, f"model={model}")
        again.cookies = dict(visitor.cookies)
        try:
            await asyncio.wait_for(again.open(), 60)
            if await asyncio.wait_for(again.paste("A note after the worker went. It is short."), 60):
                served_again = time.monotonic() - killed
        except Exception:  # noqa: BLE001  a closed connection: the visitor reloads
            await asyncio.sleep(0.5)
        finally:
            await again.close()
    back = None
    while back is None and time.monotonic() - killed < 60:
        now = next(w for w in _workers(runtime) if w["index"] == 0)
        if now["pid"] != doomed["pid"] and _health(f"http://127.0.0.1:{now['port']}") == 200:
            back = time.monotonic() - killed
        await asyncio.sleep(0.2)
    stop.set()
    await prober
    await visitor.close()
    return {"served_again_s": None if served_again is None else round(served_again, 1),
            "worker_back_s": None if back is None else round(back, 1),
            "health_503": statuses.count(503), "health_probes": len(statuses)}


def run_class_server(root: Path, workdir: Path, model: str) -> dict:
    """The three attacks on ``hierattn app --workers 2`` over the checkpoints in ``root``."""
    runtime, documents = workdir / "class-runtime", workdir / "class-documents"
    env = {**os.environ, "HIERATTN_CHECKPOINTS": str(root), "HIERATTN_RUNTIME": str(runtime),
           "HIERATTN_DOCUMENTS": str(documents), "HIERATTN_KEPT_DOCUMENTS": str(KEPT)}
    server, url = start_server(env, [sys.executable, "-m", "hierattn", "app", "--workers", "2"], limit=240,
                               own_group=True, log=workdir / "class-server.log")
    try:
        figures = {"steering": asyncio.run(_steering(url, runtime))}
        figures["identities"] = asyncio.run(_identities(url, model, documents))
        figures["killed_worker"] = asyncio.run(_killed(url, model, runtime))
    finally:
        os.killpg(server.pid, signal.SIGINT)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
    return figures
