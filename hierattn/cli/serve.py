"""``hierattn app --workers N``: the app on every core, as N Streamlit servers behind one proxy.

One Streamlit server runs every visitor's page in threads of one process, and a paste is Python
that holds the interpreter lock (tokenising, metrics, rendering: 97% of an explanation), so a class
pasting at once kept one of two cores busy. Streamlit scales out by processes behind a proxy with
sticky sessions; this is that proxy, small and local:

- N workers, each ``streamlit run app.py`` on a loopback port, share what bounds the server:
  the training runs' cap and checkpoints (``training.run_claims``, under ``HIERATTN_APP_ID``),
  the pasted documents and their secret (one folder), the checkpoint list (the disk), the cores
  (the thread census), and a cookie secret. Each gets 1/N of the server's memory limits for
  explanations and loaded models, so that N of them stay within what one was allowed.
- A visitor (a browser) is pinned to one worker by a cookie the proxy sets on its first page,
  ``hierattn_worker``: its websocket, uploads and downloads then reach the process that holds its
  session, and per-visitor bounds hold. A new visitor goes to the worker with the fewest open
  sessions.
- Each request is forwarded on its own connection to the worker, so a keep-alive connection can
  never carry one visitor's request to another's worker; a websocket is piped both ways.
- ``/_stcore/health`` is answered by the proxy at once, from the workers' own health checks
  polled in the background: under load a worker's answer waits for the interpreter lock (25 s
  was measured), and a health check must tell a load balancer in time whether the server lives.
  One is forwarded: a browser's first, which carries the proxy's cookie and not yet Streamlit's
  XSRF cookie, since the worker's health answer is where a browser gets that cookie (uploads are
  refused without it).
"""
from __future__ import annotations

import asyncio
import itertools
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from hierattn import limits

COOKIE = "hierattn_worker"
HEAD_LIMIT = 64 * 1024  # bytes of a request's or response's head
CHUNK = 1 << 20  # bytes piped at a time: an explanation of a 200 KB paste is megabytes
STALE = 60.0  # seconds without a worker's health answer before the proxy reports it down
SPLIT = (limits.EXPLAINING_MB, limits.MODEL_MEMORY_MB, limits.EXPLANATION_MEMORY_MB)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker_environment(base: dict, workers: int, app_id: str, cookie_secret: str, index: int) -> dict:
    env = dict(base, HIERATTN_APP_ID=app_id, HIERATTN_WORKER=str(index),
               STREAMLIT_SERVER_COOKIE_SECRET=base.get("STREAMLIT_SERVER_COOKIE_SECRET") or cookie_secret)
    for limit in SPLIT:  # the server's memory, shared: each worker its part
        try:
            total = float(base.get(limit.variable, ""))
        except ValueError:
            total = 0
        env[limit.variable] = f"{(total if total > 0 else limit.default) / workers:g}"
    return env


def _headers(head: bytes) -> tuple[str, list[tuple[str, str]]]:
    lines = head.decode("latin-1").split("\r\n")
    fields = []
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            fields.append((name.strip(), value.strip()))
    return lines[0], fields


def _field(fields, name: str) -> str | None:
    name = name.lower()
    for key, value in fields:
        if key.lower() == name:
            return value
    return None


def _cookie(fields, name: str) -> str | None:
    for key, value in fields:
        if key.lower() == "cookie":
            for part in value.split(";"):
                k, _, v = part.strip().partition("=")
                if k == name:
                    return v
    return None


def _head(first: str, fields) -> bytes:
    return (first + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields) + "\r\n").encode("latin-1")


async def _read_head(reader: asyncio.StreamReader) -> bytes | None:
    try:
        return await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    except asyncio.LimitOverrunError:
        raise ValueError("a head over 64 KB") from None


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(CHUNK):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.close()
        except Exception:  # noqa: BLE001  already closed
            pass


class Proxy:
    """Routes each request to its visitor's worker (see the module)."""

    def __init__(self, ports: list[int]):
        self.ports = ports
        self.sessions = [0] * len(ports)  # open websockets per worker
        self.answered = [time.monotonic()] * len(ports)  # last health answer per worker
        self.alive = [True] * len(ports)
        self.turn = itertools.cycle(range(len(ports)))

    def pick(self, fields, page: bool) -> tuple[int, bool]:
        """(the worker, whether it was chosen now) for a request; a new visitor's ``page`` takes its
        turn among the least busy workers, anything else without a cookie the least busy."""
        value = _cookie(fields, COOKIE)
        if value is not None and value.isdigit() and int(value) < len(self.ports):
            return int(value), False
        fewest = min(self.sessions)
        candidates = [i for i, n in enumerate(self.sessions) if n == fewest]
        if not page:
            return candidates[0], False
        for i in self.turn:  # round robin among the least busy
            if i in candidates:
                return i, True
        return 0, True  # pragma: no cover  (cycle never ends)

    def healthy(self) -> tuple[bool, str]:
        now = time.monotonic()
        down = [i for i in range(len(self.ports)) if not self.alive[i] or now - self.answered[i] > STALE]
        if down:
            return False, "workers not answering: " + ", ".join(str(i) for i in down)
        return True, "ok"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self._one(reader, writer):
                pass
        except (ConnectionError, OSError, ValueError):
            pass
        finally:
            try:
                writer.close()
            except Exception:  # noqa: BLE001
                pass

    async def _one(self, reader, writer) -> bool:
        """Forward one request; whether the client's connection stays open for another."""
        head = await _read_head(reader)
        if head is None:
            return False
        first, fields = _headers(head)
        method, target = (first.split(" ") + ["", ""])[:2]
        path = target.split("?", 1)[0]
        first_visit = _cookie(fields, COOKIE) is not None and _cookie(fields, "_streamlit_xsrf") is None
        if path.endswith("/_stcore/health") and method in ("GET", "HEAD") and not first_visit:
            ok, text = self.healthy()
            body = text.encode()
            writer.write(_head(f"HTTP/1.1 {'200 OK' if ok else '503 Service Unavailable'}",
                               [("Content-Type", "text/plain"), ("Content-Length", str(len(body))),
                                ("Cache-Control", "no-cache")]) + (body if method == "GET" else b""))
            await writer.drain()
            return True
        page = method == "GET" and "." not in path.rsplit("/", 1)[-1] and not any(
            part in path for part in ("/_stcore/", "/static/", "/media/", "/component/"))
        worker, chosen = self.pick(fields, page)
        upstream_reader, upstream = await asyncio.open_connection("127.0.0.1", self.ports[worker], limit=HEAD_LIMIT)
        if (_field(fields, "upgrade") or "").lower() == "websocket":
            upstream.write(head)
            await upstream.drain()
            self.sessions[worker] += 1
            try:
                await asyncio.gather(_pipe(reader, upstream), _pipe(upstream_reader, writer))
            finally:
                self.sessions[worker] -= 1
            return False
        if _field(fields, "transfer-encoding"):
            body = b"a request body must carry its Content-Length"
            writer.write(_head("HTTP/1.1 411 Length Required", [("Content-Length", str(len(body))),
                                                                ("Connection", "close")]) + body)
            upstream.close()
            return False
        client_closes = (_field(fields, "connection") or "").lower() == "close"
        fields = [(k, v) for k, v in fields if k.lower() not in ("connection", "keep-alive")]
        upstream.write(_head(first, fields + [("Connection", "close")]))
        length = int(_field(fields, "content-length") or 0)
        while length > 0:
            chunk = await reader.read(min(length, CHUNK))
            if not chunk:
                upstream.close()
                return False
            upstream.write(chunk)
            await upstream.drain()
            length -= len(chunk)
        await upstream.drain()
        response = await _read_head(upstream_reader)
        if response is None:
            body = b"the worker did not answer"
            writer.write(_head("HTTP/1.1 502 Bad Gateway", [("Content-Length", str(len(body)))]) + body)
            upstream.close()
            return not client_closes
        status, answer = _headers(response)
        answer = [(k, v) for k, v in answer if k.lower() not in ("connection", "keep-alive")]
        framed = (_field(answer, "content-length") is not None or _field(answer, "transfer-encoding") is not None
                  or method == "HEAD" or status.split(" ")[1:2] in (["204"], ["304"]))
        keep = framed and not client_closes
        if chosen:  # a new visitor's page: its worker from now on
            answer.append(("Set-Cookie", f"{COOKIE}={worker}; Path=/; HttpOnly; SameSite=Lax"))
        writer.write(_head(status, answer + [("Connection", "keep-alive" if keep else "close")]))
        while chunk := await upstream_reader.read(CHUNK):
            writer.write(chunk)
            await writer.drain()
        upstream.close()
        return keep

    async def watch(self, processes: list[subprocess.Popen]) -> None:
        """Poll every worker's own health check; note a worker whose process ended."""
        loop = asyncio.get_running_loop()

        def ask(port: int) -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=STALE) as answer:
                    return answer.status == 200
            except OSError:
                return False

        async def one(i: int) -> None:
            while True:
                self.alive[i] = processes[i].poll() is None
                if self.alive[i] and await loop.run_in_executor(None, ask, self.ports[i]):
                    self.answered[i] = time.monotonic()
                await asyncio.sleep(2)

        await asyncio.gather(*(one(i) for i in range(len(self.ports))))


def _wait_until_up(process: subprocess.Popen, port: int, limit: float = 180) -> None:
    deadline = time.time() + limit
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"a worker exited at its start (exit code {process.returncode})")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
            return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"a worker did not answer within {limit:.0f} s")


def _option(arguments: list[str], name: str) -> tuple[str | None, list[str]]:
    """The value of ``--name VALUE`` or ``--name=VALUE`` among ``arguments``, and the rest."""
    rest, value, skip = [], None, False
    for i, argument in enumerate(arguments):
        if skip:
            skip = False
        elif argument == name and i + 1 < len(arguments):
            value, skip = arguments[i + 1], True
        elif argument.startswith(name + "="):
            value = argument.split("=", 1)[1]
        else:
            rest.append(argument)
    return value, rest


def serve(app: Path, workers: int, arguments: list[str], environ: dict) -> int:
    """Start ``workers`` servers of ``app`` and the proxy in front; run until stopped."""
    port, arguments = _option(arguments, "--server.port")
    address, arguments = _option(arguments, "--server.address")
    port = int(port or environ.get("STREAMLIT_SERVER_PORT") or 8501)
    address = address or environ.get("STREAMLIT_SERVER_ADDRESS") or ""
    app_id, cookie_secret = secrets.token_hex(8), secrets.token_hex(32)
    ports, processes = [], []
    try:
        for index in range(workers):
            ports.append(_free_port())
            if workers < 1:
                raise RuntimeError(f"--workers {workers}: at least one worker is needed")
            processes.append(subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", str(app), *arguments, "--server.headless", "true",
                 "--server.address", "127.0.0.1", "--server.port", str(ports[-1])],
                env=worker_environment(environ, workers, app_id, cookie_secret, index),
                stdout=subprocess.DEVNULL, start_new_session=True))
        for process, worker_port in zip(processes, ports, strict=True):
            _wait_until_up(process, worker_port)
        return asyncio.run(_run(Proxy(ports), processes, address, port))
    except (RuntimeError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    finally:
        for process in processes:  # SIGTERM: each worker's shutdown ends its training runs
            if process.poll() is None:
                process.terminate()
        for process in processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()


async def _run(proxy: Proxy, processes: list[subprocess.Popen], address: str, port: int) -> int:
    server = await asyncio.start_server(proxy.handle, address or None, port, limit=HEAD_LIMIT)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    shown = address or "localhost"
    print(f"hierattn: {len(processes)} workers behind http://{shown}:{port} (Ctrl+C stops them)", flush=True)
    watcher = asyncio.create_task(proxy.watch(processes))
    async with server:
        await stop.wait()
    watcher.cancel()
    return 0

