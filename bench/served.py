"""A served app, as the scenario tests and the bench meet it: started on a free loopback port, waited
for on its health check, its process measured (CPU time, resident memory, the time back to idle),
and a page's own state read in the browser (Streamlit's script state, not a fixed wait).

The system tests share one such server (``tests/system/conftest.py``); the bench starts its own, on
an otherwise quiet machine, for figures."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
IDLE_SHARE = 0.05  # of one core, over a second: the server is idle

# A page is busy until Streamlit's own script state reads "notRunning" with no spinner, progress bar
# or skeleton: before the app has connected the page shows no spinner at all ("initial"). BUSY says
# "run" while a script (or a fragment) runs or the status widget shows, "poll" while a progress bar
# shows (its fragment reruns every second), else "".
BUSY = ("() => { const app = document.querySelector('[data-testid=stApp]');"
        " if (!app || app.getAttribute('data-test-script-state') !== 'notRunning'"
        " || document.querySelector('[data-testid=stStatusWidget], [data-testid=stSkeleton]')) return 'run';"
        " return document.querySelector('[data-testid=stProgress]') ? 'poll' : ''; }")
QUIET_S = 0.5  # idle this long: a rerun the last run asked for (st.rerun, the address bar) has begun by then
POLL_S = 1.6  # and this long since a progress bar showed: its fragment's one-second poll found nothing twice
# A page under load: wait for the server's answer, not for every script to load (a loaded server
# served the page's JavaScript in over 30 s on CI's 2 cores); what the page then shows is waited for.
ARRIVE = {"wait_until": "commit", "timeout": 120_000}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    """Resident MB of ``pid``; 0 once it has ended (a worker killed, a short-lived child)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return 0.0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """CPU seconds of ``pid`` so far; 0 once it has ended (its time is then not counted)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def seconds_to_idle(pid: int, limit: float = 120.0) -> float | None:
    """Seconds until the process uses under ``IDLE_SHARE`` of a core over a whole second."""
    start = time.monotonic()
    while time.monotonic() - start < limit:
        before, t0 = cpu_seconds(pid), time.monotonic()
        time.sleep(1.0)
        if (cpu_seconds(pid) - before) / (time.monotonic() - t0) < IDLE_SHARE:
            return time.monotonic() - start - 1.0
    return None


def start_server(env: dict, command: list[str] | None = None, limit: float = 120,
                 own_group: bool = False, log: Path | None = None,
                 cwd: Path | None = None) -> tuple[subprocess.Popen, str]:
    """``command`` (default ``streamlit run app.py``) on a free loopback port with ``env``, once it
    answers its health check: (the process, its URL). ``own_group``: in a process group of its own
    (stop it and its children with ``os.killpg``). ``log``: a file for its stderr, for a server that
    lives long (a pipe nobody reads fills and blocks the server); by default a pipe. ``cwd``: where
    it runs (default this repository; Streamlit reads ``.streamlit/config.toml`` there). RuntimeError
    when it exits or does not answer within ``limit`` seconds."""
    port = free_port()
    command = command or [sys.executable, "-m", "streamlit", "run", "app.py"]
    stderr = open(log, "ab") if log else subprocess.PIPE  # noqa: SIM115  the server holds it
    server = subprocess.Popen([*command, "--server.headless", "true", "--server.port", str(port),
                               "--server.address", "127.0.0.1"], cwd=cwd or REPO, env=env, stdout=subprocess.DEVNULL,
                              stderr=stderr, start_new_session=own_group)
    if log:
        stderr.close()  # the child has its own copy
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + limit
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"{url}/_stcore/health", timeout=1)
            return server, url
        except OSError:
            if server.poll() is not None:
                said = Path(log).read_text(errors="replace") if log else server.stderr.read().decode()
                raise RuntimeError(f"streamlit exited: {said[-2000:]}") from None
            time.sleep(0.2)
    server.kill()
    raise RuntimeError(f"streamlit did not answer within {limit:.0f} s")


def settled(page, limit: float = 240) -> None:
    """Wait until ``page``'s script has run and stays idle: no run in progress, no progress bar of a
    background computation, for longer than a progress bar's one-second poll where one showed (a
    page that showed none has no poll to wait for: half a second of quiet is enough). Before the app
    has connected the page shows nothing busy; idle therefore means Streamlit's own script state,
    which reads "initial" until the first run, and not merely the absence of a spinner. ``limit`` is
    a liveness bound, not a speed goal."""
    deadline = time.monotonic() + limit
    quiet_since, polled = None, time.monotonic() - POLL_S
    while time.monotonic() < deadline:
        busy, now = page.evaluate(BUSY), time.monotonic()
        if busy == "poll":
            polled = now
        if busy:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = now
        elif now - quiet_since > QUIET_S and now - polled > POLL_S:
            return
        page.wait_for_timeout(100)
    shown = page.evaluate("() => [...document.querySelectorAll('[data-testid=stProgress], "
                          "[data-testid=stStatusWidget]')].map(e => e.innerText.trim()).join(' | ')")
    raise AssertionError(f"the page never settled in {limit:.0f} s; still showing: {shown!r}")


def choose(page, label: str, option: str, limit: float = 120) -> None:
    """Pick ``option`` in the select box labelled ``label``, typed into its filter as a visitor with
    many models does: the open list draws only the options in view. An option may be shown with a
    description after it ("tiny-hcan · HCAN")."""
    import re

    page.locator("[data-testid=stSelectbox]").filter(has_text=label).first.click(timeout=limit * 1000)
    page.keyboard.type(option)
    shown = re.compile(rf"^{re.escape(option)}( · .*)?$")
    page.get_by_role("option", name=shown).first.click(timeout=limit * 1000)


@dataclass
class Served:
    """A running app: its process, its URL, the checkpoints folder it serves, and the file its stderr
    goes to (what a test reads for tracebacks)."""
    process: subprocess.Popen
    url: str
    checkpoints: Path
    log: Path

    def log_size(self) -> int:
        return self.log.stat().st_size if self.log.exists() else 0

    def log_since(self, offset: int) -> str:
        """What the server wrote to its stderr after ``offset`` bytes."""
        with open(self.log, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
