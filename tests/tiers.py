"""The suite's tiers, and what a test outside the ``slow`` tier may not do.

Two commands run the suite (the README gives them; ``.ci/run`` runs both, in this order):

- ``pytest -m "not slow or system"``: the quick tier, plus the system tier (``system``: end-to-end
  checks against the one served app of ``tests/system/conftest.py``), within 15 minutes on 2 cores;
- ``pytest -m "slow and not system"``: every other slow test (trains, starts its own process, or
  reads a whole split).

A quick test that trains or starts a server makes every landing wait for it, and nobody sees why:
the tier it belongs to is then a matter of someone's memory. So the suite watches, while each test
runs, for the two things that cost minutes: a call of the training loop (``training.loop.run``, which
every in-memory, corpus and page-started run goes through, in this process or a spawned one), and a
server started as a process (``streamlit run``, ``hierattn app``, a training command line). A test
that does either without the ``slow`` marker fails, naming what it did. The servers started in one
session are counted too: a suite that starts more than ``MAX_SERVERS`` fails at its end, because each
cold start pays the imports of torch and transformers before its first page.

Durations are printed by ``--durations`` (both commands ask for 30); the summary below adds each
test file's total, so a file that grows slow is seen the day it does.
"""
from __future__ import annotations

import functools
import multiprocessing.process
import subprocess
import sys
import time
from collections import defaultdict

import pytest

MAX_SERVERS = 4  # the shared app, a fresh server's first visitor, the installed wheel, the worker proxy
# hierattn commands that train or serve when started as a process
HIERATTN_COMMANDS = {"train": "a training run", "reproduce": "a training run", "app": "a server"}

_current: list[pytest.Item] = []  # the test running now (setup, call and teardown)
_violations: dict[str, list[str]] = defaultdict(list)
servers_started: list[str] = []  # "nodeid: what" for each server started in this session


def started_what(argv) -> str | None:
    """What a process of command line ``argv`` is, when it trains or serves: "a server", "a training
    run"; None otherwise."""
    words = [str(a).rsplit("/", 1)[-1] for a in (argv if isinstance(argv, (list, tuple)) else [argv])]
    for i, word in enumerate(words):
        following = words[i + 1] if i + 1 < len(words) else ""
        if word == "streamlit" and following == "run":
            return "a server"
        if word in ("hierattn", "torchrun") or (word == "-m" and following == "hierattn"):
            rest = words[i + (2 if word == "-m" else 1):]
            command = next((w for w in rest if not w.startswith("-")), "")
            if word == "torchrun":
                return "a training run"
            if command in HIERATTN_COMMANDS:
                return HIERATTN_COMMANDS[command]
    return None


def _note(what: str, detail: str) -> None:
    if not _current:
        return  # outside a test (collection, the session's end): nothing to hold to a tier
    item = _current[-1]
    if what == "a server":
        servers_started.append(f"{item.nodeid}: {detail}")
    if item.get_closest_marker("slow") is None:
        _violations[item.nodeid].append(f"{what} ({detail}) in a test without the `slow` marker")


def _guard_processes() -> None:
    popen_init = subprocess.Popen.__init__

    @functools.wraps(popen_init)
    def init(self, args, *rest, **kwargs):
        what = started_what(args)
        if what:
            _note(what, " ".join(str(a) for a in (args if isinstance(args, (list, tuple)) else [args]))[:160])
        popen_init(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = init

    start = multiprocessing.process.BaseProcess.start

    @functools.wraps(start)
    def start_process(self):
        target = getattr(self, "_target", None)
        module = getattr(target, "__module__", "") or ""
        if module.startswith("hierattn.training"):
            _note("a training run", f"a process running {module}.{target.__name__}")
        return start(self)

    multiprocessing.process.BaseProcess.start = start_process


def _guard_training_loop() -> None:
    """Wrap ``training.loop.run`` where it is defined and wherever it was imported by name."""
    from hierattn.training import loop

    original = loop.run

    @functools.wraps(original)
    def run(*args, **kwargs):
        _note("a training run", "hierattn.training.loop.run")
        return original(*args, **kwargs)

    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith(("hierattn", "bench", "tests")) and \
                getattr(module, "run", None) is original:
            module.run = run


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "system: an end-to-end check against the one served app (tests/system/)")
    _guard_processes()
    _guard_training_loop()
    config.stash[_started_at] = time.monotonic()


_started_at = pytest.StashKey[float]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _current.append(item)
    try:
        return (yield)
    finally:
        _current.pop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    found = _violations.get(item.nodeid)
    if found and report.when == "call" or (found and report.when == "setup" and report.outcome != "passed"):
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid}: " + "; ".join(found) + ". Mark it `slow` (pytest.mark.slow), or make it "
                           "cheaper (tests/tiers.py says why).")
        _violations.pop(item.nodeid, None)
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus) -> None:
    if len(servers_started) > MAX_SERVERS:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    by_file: dict[str, float] = defaultdict(float)
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "nodeid", "") and hasattr(report, "duration"):
                by_file[report.nodeid.split("::")[0]] += report.duration
    if by_file:
        terminalreporter.section("time per test file (slowest 15)")
        for path, seconds in sorted(by_file.items(), key=lambda kv: -kv[1])[:15]:
            terminalreporter.write_line(f"{seconds:8.1f} s  {path}")
        wall = time.monotonic() - config.stash.get(_started_at, time.monotonic())
        terminalreporter.write_line(f"{sum(by_file.values()):8.1f} s  in tests; {wall:.0f} s wall clock")
    if servers_started:
        terminalreporter.section("servers started")
        for line in servers_started:
            terminalreporter.write_line(line)
        if len(servers_started) > MAX_SERVERS:
            terminalreporter.write_line(f"{len(servers_started)} servers started, over the suite's {MAX_SERVERS}: "
                                        "share tests/system/conftest.py's served app instead", red=True)
