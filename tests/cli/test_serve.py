"""``hierattn app --workers N``: Caddy keeps each visitor on one worker, sends the visitors of a dead
or frozen worker to a live one, cannot be steered by one client, and the supervisor starts a worker
that exits again (``hierattn/cli/serve.py``). Most tests run the real supervisor and the real Caddy
in front of stand-in workers (``stub_worker.py``); the last one runs the app."""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from hierattn.cli.serve import (
    COOKIE,
    Supervisor,
    _free_port,
    caddy_binary,
    caddyfile,
    worker_cookie,
    worker_environment,
)
from hierattn.limits import EXPLAINING_MB, MODEL_MEMORY_MB

STUB = Path(__file__).with_name("stub_worker.py")
LIVENESS_S = 60  # every wait below ends on what the proxy answers; this bounds a stuck one


class StubSupervisor(Supervisor):
    def worker_command(self, worker):
        return [sys.executable, str(STUB), str(worker.port), str(worker.index)]


@pytest.fixture
def served(tmp_path, monkeypatch):
    """The supervisor and Caddy in front of two stand-in workers, in a thread of this process."""
    monkeypatch.setenv("HIERATTN_RUNTIME", str(tmp_path))
    supervisor = StubSupervisor(Path("app.py"), [], dict(os.environ), 2, "127.0.0.1", _free_port())
    supervisor.start()
    runner = threading.Thread(target=supervisor.run, daemon=True)
    runner.start()
    yield supervisor
    supervisor.stop.set()
    runner.join(10)
    supervisor.shutdown()


def _get(supervisor, path: str = "/", cookie: str | None = None) -> tuple[int, str, str | None]:
    """(status, body, the worker cookie set) of a GET through the proxy."""
    request = urllib.request.Request(f"http://127.0.0.1:{supervisor.port}{path}",
                                     headers={"Cookie": f"{COOKIE}={cookie}"} if cookie else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            status, body, headers = answer.status, answer.read().decode(), answer.headers
    except urllib.error.HTTPError as error:
        status, body, headers = error.code, error.read().decode(), error.headers
    set_cookie = next((h.split(";")[0].split("=", 1)[1] for h in headers.get_all("Set-Cookie") or []
                       if h.startswith(COOKIE + "=")), None)
    return status, body, set_cookie


def _until(condition, what: str):
    deadline = time.monotonic() + LIVENESS_S
    while time.monotonic() < deadline:
        if result := condition():
            return result
        time.sleep(0.1)
    raise AssertionError(f"not within {LIVENESS_S} s: {what}")


def _websocket(supervisor, path: str, cookie: str | None) -> tuple[socket.socket, bytes]:
    s = socket.create_connection(("127.0.0.1", supervisor.port), timeout=10)
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              f"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
              + (f"Cookie: {COOKIE}={cookie}\r\n" if cookie else "") + "\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        if not chunk:
            break
        head += chunk
    return s, head


def test_each_worker_gets_its_part_of_the_servers_memory():
    env = worker_environment({"HIERATTN_EXPLAINING_MB": "900"}, 3, "abc", "secret", 2)
    assert env["HIERATTN_EXPLAINING_MB"] == "300"
    assert env[MODEL_MEMORY_MB.variable] == f"{MODEL_MEMORY_MB.default / 3:g}"
    assert env["HIERATTN_APP_ID"] == "abc" and env["STREAMLIT_SERVER_COOKIE_SECRET"] == "secret"
    assert EXPLAINING_MB.variable == "HIERATTN_EXPLAINING_MB"


def test_caddy_reads_the_configuration(tmp_path):
    """Caddy itself adapts the written configuration, bound to the address asked for."""
    path = tmp_path / "Caddyfile"
    path.write_text(caddyfile([9101, 9102], "127.0.0.1", 9100, "secret", 50))
    adapted = subprocess.run([caddy_binary(), "adapt", "--config", str(path), "--adapter", "caddyfile"],
                             capture_output=True, text=True, env={**os.environ, "HOME": str(tmp_path)})
    assert adapted.returncode == 0, adapted.stderr
    config = json.loads(adapted.stdout)
    server, = config["apps"]["http"]["servers"].values()
    assert server["listen"] == ["127.0.0.1:9100"]
    text = json.dumps(config)
    assert '"fallback": {"policy": "round_robin"}' in text and "least_conn" not in text
    assert config["admin"]["disabled"] is True


def test_a_visitor_stays_on_its_worker_and_new_visitors_take_turns(served):
    visitors = [_get(served) for _ in range(4)]
    bodies = [body for _, body, _ in visitors]
    assert sorted(b.split()[1] for b in bodies) == ["0", "0", "1", "1"]
    for status, body, cookie in visitors:
        worker = int(body.split()[1])
        assert status == 200 and cookie == worker_cookie(served.routing_secret, served.workers[worker].port)
        for path in ("/_stcore/host-config", "/media/x.png", "/?model=a"):
            assert _get(served, path, cookie)[1] == f"worker {worker} {path}"


def test_one_client_holding_forty_websockets_does_not_steer_new_visitors(served):
    """Balancing on open connections sent 10 of 10 new visitors to the other worker."""
    on_zero = worker_cookie(served.routing_secret, served.workers[0].port)
    held = []
    try:
        for _ in range(40):
            s, head = _websocket(served, "/_stcore/stream", on_zero)
            assert head.startswith(b"HTTP/1.1 101"), head
            held.append(s)
        held[0].sendall(b"hello")
        assert held[0].recv(100) == b"worker0:hello"
        new = [_get(served)[1].split()[1] for _ in range(10)]
        assert abs(new.count("0") - new.count("1")) <= 2, new
    finally:
        for s in held:
            s.close()


def test_only_the_apps_stream_is_upgraded_and_metrics_are_not_served(served):
    s, head = _websocket(served, "/anything/else", None)
    s.close()
    assert head.startswith(b"HTTP/1.1 400")
    assert _get(served, "/_stcore/metrics")[0] == 404
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as s:  # a head over the limit
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n")
        assert s.recv(100).split(b" ")[1] in (b"431", b"400")


def test_a_killed_worker_comes_back_and_its_visitors_are_served_meanwhile(served):
    status, body, cookie = _get(served)
    worker = served.workers[int(body.split()[1])]
    pid = worker.process.pid
    os.kill(pid, signal.SIGKILL)
    # its visitor's next request: answered by the live worker, pinned there by a new cookie
    status, body, moved = _get(served, "/again", cookie)
    assert status == 200 and body.split()[1] != str(worker.index) and moved not in (None, cookie)
    assert _get(served, "/_stcore/health")[:2] == (200, "ok")
    started = time.monotonic()
    _until(lambda: worker.process.pid != pid and worker.process.poll() is None, "the worker was started again")
    recorded = json.loads((served.folder / "workers.json").read_text())["workers"][worker.index]
    assert recorded["pid"] == worker.process.pid and recorded["restarts"] == 1
    _until(lambda: _get(served, "/back", cookie)[1] == f"worker {worker.index} /back", "its cookie reaches it again")
    assert time.monotonic() - started < 30


def test_the_health_check_is_503_only_when_no_worker_serves(served):
    served.stop.set()  # no restarts
    for worker in served.workers[1:]:
        os.kill(worker.process.pid, signal.SIGKILL)
    assert _get(served, "/_stcore/health")[:2] == (200, "ok")
    os.kill(served.workers[0].process.pid, signal.SIGKILL)
    assert _get(served, "/_stcore/health")[0] == 503


@pytest.mark.slow  # waits out the frozen-worker timeout
def test_a_frozen_worker_is_out_of_rotation_until_it_answers(served):
    status, body, cookie = _get(served)
    frozen = int(body.split()[1])
    _get(served, "/freeze", cookie)
    assert _get(served, "/_stcore/health", cookie)[:2] == (200, "ok")  # answered by the other within the bound
    _until(lambda: _get(served, "/x", cookie)[1].split()[1] != str(frozen), "its visitor moved to a live worker")
    assert {_get(served)[1].split()[1] for _ in range(4)} == {str(1 - frozen)}


@pytest.mark.slow
def test_two_workers_serve_their_visitors_and_one_killed_comes_back(tmp_path):
    """The real thing: ``hierattn app --workers 2`` on the shipped checkpoints. Two visitors paste
    into Explore over Streamlit's websocket, each on its own worker. Then one worker is killed as an
    out-of-memory kill would: the other's visitor pastes on, the health check stays 200, the killed
    worker's visitor opens the page again on the live worker at once, and the worker is back."""
    import asyncio

    from bench.load import MODEL, Session, _start

    env = {k: v for k, v in os.environ.items() if k != "HIERATTN_CHECKPOINTS"}
    env["HIERATTN_RUNTIME"] = str(tmp_path)
    server, url = _start(2, env)
    health = []

    def probe(stop: threading.Event):
        while not stop.wait(0.25):
            try:
                health.append(urllib.request.urlopen(f"{url}/_stcore/health", timeout=30).status)
            except urllib.error.HTTPError as error:
                health.append(error.code)
            except OSError:
                health.append(0)

    try:
        async def main():
            visitors = [Session(url), Session(url)]
            await asyncio.gather(*(v.open() for v in visitors))
            note = f"The {MODEL} model reads this note. The bank raised its rates again today."
            shown = await asyncio.gather(*(v.paste(f"{note} {i}") for i, v in enumerate(visitors)))
            assert shown == [True, True] and len({v.cookies[COOKIE] for v in visitors}) == 2

            record = json.loads(next(tmp_path.glob("app-*/workers.json")).read_text())["workers"]
            killed = next(w for w in record if w["cookie"] == visitors[1].cookies[COOKIE])
            stop = threading.Event()
            prober = threading.Thread(target=probe, args=(stop,))
            prober.start()
            os.kill(killed["pid"], signal.SIGKILL)
            started = time.monotonic()
            again = Session(url)
            again.cookies = dict(visitors[1].cookies)  # the killed worker's visitor reloads its page
            await again.open()
            assert await again.paste(f"{note} again") and again.cookies[COOKIE] != killed["cookie"]
            assert await visitors[0].paste(f"{note} meanwhile")
            reopened = time.monotonic() - started

            def back():
                now = json.loads(next(tmp_path.glob("app-*/workers.json")).read_text())["workers"]
                row = now[killed["index"]]
                if row["pid"] == killed["pid"]:
                    return False
                try:
                    return urllib.request.urlopen(f"http://127.0.0.1:{row['port']}/_stcore/health",
                                                  timeout=5).status == 200
                except OSError:
                    return False
            _until(back, "the killed worker answers again")
            restarted = time.monotonic() - started
            stop.set()
            prober.join()
            await asyncio.gather(*(v.close() for v in (visitors[0], again)))
            return reopened, restarted

        reopened, restarted = asyncio.run(main())
        print(f"killed worker: its visitor served again after {reopened:.1f} s, the worker back after "
              f"{restarted:.1f} s; health checks {len(health)}, statuses {sorted(set(health))}")
        assert reopened < 30 and restarted < 30
        assert health and set(health) == {200}
    finally:
        os.killpg(server.pid, 15)
        server.wait(60)
    assert server.returncode == 0  # the supervisor stopped Caddy, its workers and itself on SIGTERM
