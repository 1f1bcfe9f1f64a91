"""Several machines, simulated on one: two app instances that share nothing but the checkpoints
folder (each its own runtime folder, document store and secret, as two hosts would), behind one
Caddy with the configuration ``hierattn app`` writes (``cli/serve.caddyfile``). docs/SCALING.md
reads what it measures:

- a class of ``sessions`` pasting articles through the front: pastes per second, each instance's
  share of the visitors, failed pastes;
- a shared link (``?doc=``) made on one instance and opened on the other: whether it opens (the
  document store is per machine);
- one instance killed whole (a host lost): whether its visitors are served by the other on their
  next page, and after how long.
"""
from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench.load import MODEL, Session, _tree, articles
from bench.served import free_port, start_server
from hierattn.cli.serve import caddy_binary, caddyfile, worker_cookie

FRONT = "hierattn_host"  # the front's own sticky cookie: each host's proxy sets hierattn_worker

LINKED = "The school board approved the curriculum after a long debate. Teachers welcomed it."


def _instance(root: Path, name: str) -> tuple[subprocess.Popen, str]:
    """One app instance, ``hierattn app --workers 1``, with a folder of its own for everything but
    the checkpoints."""
    own = root / name
    env = {k: v for k, v in os.environ.items() if k not in ("HIERATTN_CHECKPOINTS", "HIERATTN_THREADS")}
    env.update(HIERATTN_RUNTIME=str(own / "runtime"), HIERATTN_DOCUMENTS=str(own / "documents"),
               HIERATTN_CACHE=str(own / "cache"))
    return start_server(env, [sys.executable, "-m", "hierattn", "app", "--workers", "1"], limit=240,
                        own_group=True)


async def _class(url: str, sessions: int, seconds: float) -> dict:
    texts = articles()
    visitors = [Session(url) for _ in range(sessions)]
    await asyncio.gather(*(v.open() for v in visitors))
    answered, failed = [], 0
    started = time.monotonic()

    async def student(i: int, visitor: Session) -> None:
        nonlocal failed
        for text in texts[i::sessions]:
            if time.monotonic() - started > seconds:
                return
            begin = time.monotonic()
            try:
                shown = await asyncio.wait_for(visitor.paste(text), 300)
            except Exception:  # noqa: BLE001  counted
                shown = False
            if shown:
                answered.append(time.monotonic() - begin)
            else:
                failed += 1

    await asyncio.gather(*(student(i, v) for i, v in enumerate(visitors)))
    cookies = [v.cookies.get(FRONT) for v in visitors]
    await asyncio.gather(*(v.close() for v in visitors))
    elapsed = time.monotonic() - started
    ordered = sorted(answered)
    return {"answered": len(answered), "failed": failed, "pastes_per_s": round(len(answered) / elapsed, 2),
            "p95_s": round(ordered[int(0.95 * (len(ordered) - 1))], 2) if ordered else None, "cookies": cookies}


def run_scaling(sessions: int = 10, seconds: float = 30.0) -> dict:
    root = Path(tempfile.mkdtemp(prefix="hierattn-scaling-"))
    instances = [_instance(root, "host-a"), _instance(root, "host-b")]
    ports = [int(url.rsplit(":", 1)[1]) for _, url in instances]
    front_port, secret = free_port(), "scaling"
    config = root / "Caddyfile"
    config.write_text(caddyfile(ports, "127.0.0.1", front_port, secret, 50, cookie=FRONT))
    caddy = subprocess.Popen([caddy_binary(), "run", "--config", str(config), "--adapter", "caddyfile"],
                             env={**os.environ, "HOME": str(root)}, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    front = f"http://127.0.0.1:{front_port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{front}/_stcore/health", timeout=5)
                break
            except OSError:
                time.sleep(0.2)
        figures = asyncio.run(_class(front, sessions, seconds))
        on_a = figures.pop("cookies").count(worker_cookie(secret, ports[0]))
        figures["visitors_per_instance"] = [on_a, sessions - on_a]
        figures["link_opened"] = asyncio.run(_link_across(front, secret, ports, root))
        figures["host_lost"] = asyncio.run(_host_lost(front, secret, ports, instances[0][0]))
    finally:
        caddy.terminate()
        caddy.wait(30)
        for server, _ in instances:
            try:
                os.killpg(server.pid, signal.SIGTERM)
                server.wait(60)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
    return {"sessions": sessions, "seconds": seconds, **figures}


async def _link_across(front: str, secret: str, ports: list[int], root: Path) -> dict:
    """A document pasted on instance A; its link opened by a visitor pinned to A, and by one pinned
    to B: whether each sees the text."""
    writer = Session(front)
    writer.cookies[FRONT] = worker_cookie(secret, ports[0])
    await writer.open()
    await writer.paste(LINKED)
    await writer.close()
    kept = sorted((root / "host-a" / "documents").glob("*.txt"), key=lambda p: p.stat().st_mtime)
    if not kept:
        return {"kept": False}
    opened = {}
    for name, port in (("same instance", ports[0]), ("other instance", ports[1])):
        reader = Session(front, query=f"model={MODEL}&doc={kept[-1].stem}")
        reader.cookies[FRONT] = worker_cookie(secret, port)
        try:
            await reader.open()
        except RuntimeError:  # no Document box: the page said the link is not kept here
            pass
        opened[name] = any(LINKED.split(".")[0].encode() in raw for raw in reader.last_run)
        await reader.close()
    return opened


async def _host_lost(front: str, secret: str, ports: list[int], server_a: subprocess.Popen) -> dict:
    """Instance A killed whole; a visitor of A opens its page again through the front."""
    visitor = Session(front)
    visitor.cookies[FRONT] = worker_cookie(secret, ports[0])
    await visitor.open()
    for pid in _tree(server_a.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    lost = time.monotonic()
    again = Session(front)
    again.cookies = dict(visitor.cookies)
    await again.open()
    shown = await again.paste(f"The {MODEL} model reads this note after its host was lost.")
    served = time.monotonic() - lost
    moved = again.cookies.get(FRONT) == worker_cookie(secret, ports[1])
    await again.close()
    return {"served_again_s": round(served, 1), "answered": shown, "moved_to_other_instance": moved}


if __name__ == "__main__":
    import json

    print(json.dumps(run_scaling(int(sys.argv[1]) if len(sys.argv) > 1 else 10,
                                 float(sys.argv[2]) if len(sys.argv) > 2 else 30.0), indent=1))
