"""``hierattn app --workers N``: the proxy keeps each visitor on one worker and answers the health
check at once, whatever the workers are doing (``hierattn/cli/serve.py``)."""
import asyncio
import time

import pytest

from hierattn.cli.serve import COOKIE, Proxy, worker_environment
from hierattn.limits import EXPLAINING_MB, MODEL_MEMORY_MB


async def _worker(index: int, slow: asyncio.Event):
    """A stand-in for a Streamlit server: answers with its index, the request's path, body and
    cookies; ``/_stcore/health`` is slow while ``slow`` is set; a websocket upgrade echoes."""
    async def handle(reader, writer):
        head = await reader.readuntil(b"\r\n\r\n")
        first, *lines = head.decode("latin-1").split("\r\n")
        fields = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines if line)}
        if fields.get("upgrade") == "websocket":
            writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
            while data := await reader.read(100):
                writer.write(b"worker%d:" % index + data)
                await writer.drain()
            writer.close()
            return
        body = await reader.readexactly(int(fields.get("content-length", 0)))
        if "/_stcore/health" in first and slow.is_set():
            await asyncio.sleep(5)
        extra = "Set-Cookie: _streamlit_xsrf=token\r\n" if "/_stcore/health" in first else ""
        text = f"worker {index} {first.split()[1]} body={body.decode()} cookie={fields.get('cookie', '')}".encode()
        writer.write(f"HTTP/1.1 200 OK\r\nContent-Length: {len(text)}\r\n{extra}Connection: close\r\n\r\n".encode()
                     + text)
        await writer.drain()
        writer.close()
    return await asyncio.start_server(handle, "127.0.0.1", 0)


async def _request(reader, writer, line: str, cookie: str = "", body: bytes = b"") -> tuple[dict, str]:
    head = f"{line} HTTP/1.1\r\nHost: x\r\n" + (f"Cookie: {cookie}\r\n" if cookie else "") + \
        (f"Content-Length: {len(body)}\r\n" if body else "") + "\r\n"
    writer.write(head.encode() + body)
    await writer.drain()
    response = await reader.readuntil(b"\r\n\r\n")
    fields = {}
    for line_ in response.decode().split("\r\n")[1:]:
        if ":" in line_:
            k, _, v = line_.partition(":")
            fields.setdefault(k.strip().lower(), []).append(v.strip())
    text = await reader.readexactly(int(fields["content-length"][0]))
    return fields, text.decode()


@pytest.fixture
def proxied():
    async def start():
        slow = asyncio.Event()
        workers = [await _worker(i, slow) for i in range(2)]
        proxy = Proxy([w.sockets[0].getsockname()[1] for w in workers])
        front = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
        return proxy, front, slow, workers
    return start


def test_a_visitor_stays_on_its_worker_request_by_request(proxied):
    async def main():
        proxy, front, _, _ = await proxied()
        port = front.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        fields, text = await _request(reader, writer, "GET /compare?model=x")  # a page: a worker is chosen
        worker = int(text.split()[1])
        assert fields["set-cookie"] == [f"{COOKIE}={worker}; Path=/; HttpOnly; SameSite=Lax"]
        assert fields["connection"] == ["keep-alive"]  # the worker closed its side; the visitor's stays open
        fields, text = await _request(reader, writer, "GET /static/app.js")  # a file without a cookie: any
        assert "set-cookie" not in fields
        for chosen in (1, 0, 1):  # one keep-alive connection, each request to its own cookie's worker
            _, text = await _request(reader, writer, "PUT /_stcore/upload_file/s/f", f"{COOKIE}={chosen}",
                                     body=b"a file's bytes")
            assert text.startswith(f"worker {chosen} /_stcore/upload_file/s/f body=a file's bytes")
        writer.close()
        r2, w2 = await asyncio.open_connection("127.0.0.1", port)
        _, text = await _request(r2, w2, "GET /")  # the next new visitor: the other worker (fewest sessions, in turn)
        assert int(text.split()[1]) == 1 - worker
        w2.close()
        front.close()
    asyncio.run(main())


def test_the_health_check_answers_at_once_while_the_workers_are_slow(proxied):
    async def main():
        proxy, front, slow, _ = await proxied()
        port = front.sockets[0].getsockname()[1]
        slow.set()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        start = time.monotonic()
        fields, text = await _request(reader, writer, "GET /_stcore/health")
        assert text == "ok" and time.monotonic() - start < 4  # the proxy's own answer, not the slow worker's 5 s
        # a browser's first check (the proxy's cookie, no XSRF cookie yet) goes to its worker for that cookie
        fields, text = await _request(reader, writer, "GET /_stcore/health", f"{COOKIE}=1")
        assert text.startswith("worker 1 /_stcore/health") and fields["set-cookie"] == ["_streamlit_xsrf=token"]
        proxy.alive[0] = False  # a worker that died
        _, text = await _request(reader, writer, "GET /_stcore/health")
        assert text == "workers not answering: 0"
        proxy.alive[0], proxy.answered[1] = True, time.monotonic() - 120  # one that stopped answering
        _, text = await _request(reader, writer, "GET /_stcore/health")
        assert text == "workers not answering: 1"
        writer.close()
        front.close()
    asyncio.run(main())


def test_a_websocket_is_piped_to_its_workers_and_counted(proxied):
    async def main():
        proxy, front, _, _ = await proxied()
        port = front.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET /_stcore/stream HTTP/1.1\r\nHost: x\r\nCookie: {COOKIE}=1\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\n\r\n".encode())
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 101")
        writer.write(b"hello")
        assert await reader.readexactly(len(b"worker1:hello")) == b"worker1:hello"
        assert proxy.sessions == [0, 1]
        writer.close()
        for _ in range(50):
            if proxy.sessions == [0, 0]:
                break
            await asyncio.sleep(0.02)
        assert proxy.sessions == [0, 0]
        r2, w2 = await asyncio.open_connection("127.0.0.1", port)
        w2.write(b"POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        assert (await r2.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 411")
        w2.close()
        front.close()
    asyncio.run(main())


def test_each_worker_gets_its_part_of_the_servers_memory():
    env = worker_environment({"HIERATTN_EXPLAINING_MB": "900"}, 3, "abc", "secret", 2)
    assert env["HIERATTN_EXPLAINING_MB"] == "300"
    assert env[MODEL_MEMORY_MB.variable] == f"{MODEL_MEMORY_MB.default / 3:g}"
    assert env["HIERATTN_APP_ID"] == "abc" and env["STREAMLIT_SERVER_COOKIE_SECRET"] == "secret"
    assert EXPLAINING_MB.variable == "HIERATTN_EXPLAINING_MB"


@pytest.mark.slow
def test_two_workers_serve_two_visitors_each_its_own():
    """The real thing: ``hierattn app --workers 2`` on the shipped checkpoints; two visitors paste
    into Explore over Streamlit's websocket, each on its own worker, both answered."""
    import os

    from bench.load import MODEL, Session, _start

    env = {k: v for k, v in os.environ.items() if k != "HIERATTN_CHECKPOINTS"}
    server, url = _start(2, env)
    try:
        async def main():
            visitors = [Session(url), Session(url)]
            await asyncio.gather(*(v.open() for v in visitors))
            shown = await asyncio.gather(*(v.paste(f"The {MODEL} model reads this note {i}. The bank raised "
                                                   "its rates again today.") for i, v in enumerate(visitors)))
            await asyncio.gather(*(v.close() for v in visitors))
            return shown, sorted(v.cookies[COOKIE] for v in visitors)
        shown, workers = asyncio.run(main())
        assert shown == [True, True] and workers == ["0", "1"]
        import urllib.request
        assert urllib.request.urlopen(f"{url}/_stcore/health", timeout=5).read() == b"ok"
    finally:
        os.killpg(server.pid, 15)
        server.wait(60)
    assert server.returncode == 0  # the proxy stopped its workers and itself on SIGTERM
