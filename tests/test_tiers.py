"""The suite's guard (``tests/tiers.py``), run on a small suite of its own: a quick test that trains
or starts a server fails, naming what it did; the same test marked ``slow`` passes; a session that
starts more servers than the suite may fails at its end."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.tiers import MAX_SERVERS, started_what

INNER = '''
import subprocess

import pytest


def test_quick_and_trains():
    from hierattn.training import loop
    loop.run(None, None, None)  # the guard notes the call before the loop reads its arguments


def test_quick_and_serves():
    subprocess.run(["echo", "streamlit", "run", "app.py"], check=True)


@pytest.mark.slow
def test_slow_and_serves():
    subprocess.run(["echo", "streamlit", "run", "app.py"], check=True)


def test_quick_and_does_neither():
    subprocess.run(["echo", "hierattn", "explain"], check=True)
'''


@pytest.mark.parametrize("argv,what", [
    (["/usr/bin/python3", "-m", "streamlit", "run", "app.py", "--server.port", "1"], "a server"),
    (["/venv/bin/hierattn", "app", "--workers", "2"], "a server"),
    ([sys.executable, "-m", "hierattn", "app", "--workers", "2"], "a server"),
    ([sys.executable, "-m", "hierattn", "train", "--model", "han"], "a training run"),
    (["torchrun", "--nproc-per-node", "2", "-m", "hierattn", "train"], "a training run"),
    ([sys.executable, "-m", "hierattn", "explain", "--text", "app"], None),
    ([sys.executable, "-c", "import time; time.sleep(1)"], None),
    ("streamlit run app.py", None),  # a shell string is not parsed: the suite passes lists
])
def test_what_a_command_line_starts(argv, what):
    assert started_what(argv) == what


def _inner(folder, body: str) -> subprocess.CompletedProcess:
    """``body`` run as a suite of its own, under the guard."""
    (folder / "test_inner.py").write_text(body)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.tiers", "-p", "no:cacheprovider",
                           "--rootdir", str(folder), str(folder / "test_inner.py")],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=600)


def test_a_quick_test_that_trains_or_serves_fails_and_a_slow_one_passes(tmp_path):
    out = _inner(tmp_path, INNER).stdout
    assert "2 failed, 2 passed" in out, out
    assert "test_quick_and_trains: a training run (hierattn.training.loop.run) in a test without the `slow`" in out
    assert "test_quick_and_serves: a server (echo streamlit run app.py) in a test without the `slow`" in out


def test_a_session_that_starts_more_servers_than_the_suite_may_fails(tmp_path):
    servers = "".join(f"@pytest.mark.slow\ndef test_serves_{i}():\n    subprocess.run(['echo', 'streamlit', 'run'], "
                      "check=True)\n\n" for i in range(MAX_SERVERS + 1))
    done = _inner(tmp_path, "import subprocess\n\nimport pytest\n\n\n" + servers)
    assert f"{MAX_SERVERS + 1} passed" in done.stdout and done.returncode == 1, done.stdout
    assert f"{MAX_SERVERS + 1} servers started, over the suite's {MAX_SERVERS}" in done.stdout, done.stdout
