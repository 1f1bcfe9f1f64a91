"""Background computations (``hierattn.app.tasks``) are tied to the sessions that wait for them:
they stop when every tab that asked was closed or moved on, another session's wait keeps them
going, a stopped one starts again when asked, and none outlives the process."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from contextlib import closing

import pytest

from hierattn.app import app_store, tasks
from tests.conftest import REPO


def _slow(steps: int = 300, pause: float = 0.05):
    """A computation that reports progress every ``pause`` seconds, as the split analyses do per batch."""
    def compute(progress):
        for i in range(steps):
            time.sleep(pause)
            progress(i + 1, steps)
        return "done"
    return compute


def _wait(task, limit: float = 10.0) -> None:
    task.thread.join(limit)


def test_a_computation_no_session_claims_any_more_stops(monkeypatch):
    monkeypatch.setattr(tasks, "LEASE", 0.3)
    store = tasks._ResultStore()
    task = store.task(("k",), _slow())  # claimed once, when asked; 300 steps would take 15 s
    _wait(task)
    assert task.finished and task.cancelled
    assert 0 < task.done < 300  # stopped at a progress report, long before its last step
    again = store.task(("k",), _slow(steps=3))  # asked again: it starts afresh
    assert again is not task
    _wait(again)
    store.finish(("k",), again)
    assert store.get(("k",)) == "done"


def test_a_closed_tab_stops_its_computation_at_once_and_another_tab_keeps_it(monkeypatch):
    closed: set[str] = set()
    monkeypatch.setattr(tasks, "connected", lambda session: session not in closed)
    sessions = iter(["tab-1", "tab-2"])
    monkeypatch.setattr(tasks, "session_id", lambda: current[0])
    current = [next(sessions)]
    store = tasks._ResultStore()
    task = store.task(("k",), _slow())
    current[0] = next(sessions)
    assert store.task(("k",), _slow()) is task  # the second tab waits for the same result
    closed.add("tab-1")
    time.sleep(0.3)
    assert not task.finished  # tab-2 is still open
    closed.add("tab-2")
    _wait(task, 2.0)
    assert task.finished and task.cancelled


def test_stop_all_ends_every_running_computation():
    store = tasks._ResultStore()
    running = [store.task((i,), _slow()) for i in range(3)]
    assert store.stop_all(wait=5) == 3
    assert all(t.finished and t.cancelled for t in running)


def test_a_failure_is_still_reported_to_the_page():
    store = tasks._ResultStore()

    def broken(progress):
        raise ValueError("bad split")

    task = store.task(("k",), broken)
    _wait(task)
    assert isinstance(task.error, ValueError) and not task.cancelled


@pytest.mark.slow
def test_the_process_exits_cleanly_while_a_page_computes():
    """The Dataset statistics page starts its split's metrics in a background thread. A process
    that exits meanwhile used to abort ("terminate called without an active exception", status
    134): the thread was killed inside PyTorch at interpreter shutdown."""
    code = textwrap.dedent(f"""
        from streamlit.testing.v1 import AppTest
        at = AppTest.from_file({str(REPO / "pages" / "1_statistics.py")!r}, default_timeout=120).run()
        assert at.get("progress"), "the page did not start its computation"
        print("leaving", flush=True)  # inside the computation: its progress bar is on the page
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "HIERATTN_CHECKPOINTS": str(REPO / "checkpoints")})
    assert "leaving" in done.stdout, done.stderr[-2000:]
    assert done.returncode == 0 and "terminate called" not in done.stderr, done.stderr[-2000:]


def test_never_more_computations_at_once_than_the_cores(monkeypatch):
    monkeypatch.setattr(tasks, "_WORKERS", None)
    monkeypatch.setattr(tasks, "cores", lambda: 2)
    import threading

    running, most, lock = [0], [0], threading.Lock()

    def compute(progress):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        for i in range(4):
            time.sleep(0.05)
            progress(i + 1, 4)
        with lock:
            running[0] -= 1
        return "done"

    store = tasks._ResultStore()
    started = [store.task((i,), compute) for i in range(5)]
    for task in started:
        _wait(task)
    assert all(t.result == "done" for t in started) and most[0] == 2


def test_a_failed_analysis_shows_an_error_and_the_page_goes_on():
    """One panel's failure is its own error box, not an exception that ends the page."""
    from streamlit.testing.v1 import AppTest

    def page():
        import streamlit as st

        from hierattn.app import tasks

        def broken(progress):
            raise RuntimeError("the model went away")

        tasks._results().task(("broken-for-test",), broken).thread.join(5)  # failed before the page looks
        tasks.computed(("broken-for-test",), broken, "Testing:")
        st.write("below the panel")

    at = AppTest.from_function(page, default_timeout=30).run()
    assert not at.exception
    assert any("the model went away" in e.value for e in at.error)
    assert any("below the panel" in m.value for m in at.markdown)


def test_the_progress_bar_counts_what_the_computation_counts():
    """The bar counts in the computation's own unit: the trust panel's once read "4 / 6 documents"
    while it tested one document."""
    from streamlit.testing.v1 import AppTest

    def page():
        import time

        from hierattn.app import tasks

        def slow(progress):
            for i in range(6):
                progress(i + 1, 6)
                time.sleep(0.5)
            return "done"

        tasks.computed(("counted-for-test",), slow, "Running the tests on this document:", unit="tests")

    at = AppTest.from_function(page, default_timeout=30).run()
    deadline, texts = time.monotonic() + 120, []
    while not any(" / " in t for t in texts) and time.monotonic() < deadline:  # until it has counted a test
        time.sleep(0.2)
        texts = [p.proto.text for p in at.run().get("progress")]
    assert texts and all(t.endswith(" / 6 tests") for t in texts), texts
    tasks._results().stop_all(wait=5)


def _two_sessions(monkeypatch):
    """Sessions "tab-1" and "tab-2" of a running server, both open; ``current[0]`` is the one whose
    code runs."""
    monkeypatch.setattr(tasks, "connected", lambda session: True)
    monkeypatch.setattr(tasks, "in_server", lambda: True)
    monkeypatch.setattr(tasks, "_finished_runs", {})
    current = ["tab-1"]
    monkeypatch.setattr(tasks, "session_id", lambda: current[0])
    return current


def test_a_claim_holds_while_its_tab_waits_however_slow_the_polls(monkeypatch):
    """Eight trust panels never finished under a class's load: their progress polls came 20-35 s
    apart, the time-based lease lapsed, the computations were cancelled and every poll started them
    again. A tab whose last finished page run asked for a computation still waits for it."""
    _two_sessions(monkeypatch)
    monkeypatch.setattr(tasks, "LEASE", 0.1)
    with tasks.page_run():  # the page run that asked for it finishes
        store = tasks._ResultStore()
        task = store.task(("k",), _slow(steps=20))  # 1 s of work, ten leases
    _wait(task)
    assert task.finished and not task.cancelled and task.result == "done"


def test_a_tab_that_moved_on_stops_its_computation_at_its_next_page_run(monkeypatch):
    current = _two_sessions(monkeypatch)
    with tasks.page_run():
        store = tasks._ResultStore()
        task = store.task(("k",), _slow())
    current[0] = "tab-2"
    assert store.task(("k",), _slow()) is task  # tab-2 waits for it too
    with tasks.page_run():  # tab-2 moves on: a page run that does not ask for it finishes
        pass
    time.sleep(0.3)
    assert not task.finished  # tab-1 still waits
    current[0] = "tab-1"
    with pytest.raises(RuntimeError):
        with tasks.page_run():  # a run cut short (a rerun) says nothing
            raise RuntimeError("rerun")
    time.sleep(0.3)
    assert not task.finished
    with tasks.page_run():
        pass
    _wait(task, 2.0)
    assert task.finished and task.cancelled


def test_a_computation_that_lapsed_as_it_was_asked_for_starts_again_watched():
    """``computed`` found the task it had just claimed finished, cancelled: it returned None with no
    progress bar, and the page waited for a result nothing computed."""
    from streamlit.testing.v1 import AppTest

    def page():
        import threading

        from hierattn.app import tasks

        store = tasks._results()
        if ("lapsed-for-test",) not in store.running:
            lapsed = tasks._Task(lambda progress: progress(0, 1))
            lapsed.error = tasks.Cancelled("lapsed")
            lapsed.thread = threading.Thread(target=lambda: None)  # a finished thread
            lapsed.thread.start()
            lapsed.thread.join()
            original = store.task
            store.task = lambda key, compute: (setattr(store, "task", original), lapsed)[1]
            store.running[("lapsed-for-test",)] = lapsed

        def slow(progress):
            for i in range(20):
                time.sleep(0.1)
                progress(i + 1, 20)
            return "done"

        tasks.computed(("lapsed-for-test",), slow, "Testing:")

    import time

    at = AppTest.from_function(page, default_timeout=30).run()
    assert at.get("progress"), "no progress bar: the page would wait for nothing"
    running = tasks._results().running.get(("lapsed-for-test",))
    assert running is not None and not running.cancelled
    tasks._results().stop_all(wait=5)


def test_one_visitor_runs_at_most_its_share_and_leaves_the_rest_to_others(monkeypatch):
    """Six tabs of one visitor on Dataset statistics took both cores: another visitor's paste took
    63.6 s instead of 0.5 s."""
    import threading

    monkeypatch.setattr(tasks, "_WORKERS", None)
    monkeypatch.setattr(tasks, "cores", lambda: 4)  # two per visitor
    running, most, lock = {}, {}, threading.Lock()

    def compute_for(visitor):
        def compute(progress):
            with lock:
                running[visitor] = running.get(visitor, 0) + 1
                most[visitor] = max(most.get(visitor, 0), running[visitor])
            for i in range(4):
                time.sleep(0.05)
                progress(i + 1, 4)
            with lock:
                running[visitor] -= 1
            return "done"
        return compute

    store = tasks._ResultStore()
    started = []
    for i in range(8):
        visitor = "browser-six-tabs" if i < 6 else f"browser-other-{i}"
        monkeypatch.setattr(tasks, "_visitor", lambda v=visitor: v)
        started.append(store.task((i,), compute_for(visitor)))
    for task in started:
        _wait(task)
    assert all(t.result == "done" for t in started)
    assert most["browser-six-tabs"] == tasks.per_visitor() == 2  # its share, never the four cores
    assert app_store.claim_analysis("browser-six-tabs", 2) is not None  # every slot given back


def test_a_visitors_analyses_are_counted_on_every_worker_and_a_dead_workers_are_not(tmp_path, monkeypatch):
    """A visitor's turn counted in one process's memory: the same visitor on a second worker (or
    presenting itself to both) ran its share on each."""
    monkeypatch.setenv("HIERATTN_RUNTIME", str(tmp_path / "runtime"))
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # another worker
    try:
        ended = subprocess.Popen([sys.executable, "-c", "pass"])
        ended.wait()
        with closing(app_store._connect()) as connection:
            connection.executemany("INSERT INTO running_analyses VALUES (?, ?, ?)",
                                   [("visitor", other.pid, 0.0), ("visitor", ended.pid, 0.0)])
        mine = app_store.claim_analysis("visitor", 2)  # the other worker's one counts, the ended one's not
        assert mine is not None and app_store.claim_analysis("visitor", 2) is None
        assert app_store.claim_analysis("another visitor", 2) is not None
        app_store.release_analysis(mine)
        assert app_store.claim_analysis("visitor", 2) is not None
    finally:
        other.kill()
        other.wait()
    assert app_store.claim_analysis("visitor", 2) is not None  # that worker is gone: its slot with it


def test_outside_a_server_an_abandoned_sessions_claim_lapses(monkeypatch):
    """AppTest sessions are dropped, never closed: their analyses ran on to the end in the test
    process, beside (and slowing) the tests after them."""
    monkeypatch.setattr(tasks, "_finished_runs", {})
    monkeypatch.setattr(tasks, "session_id", lambda: "apptest-session")
    monkeypatch.setattr(tasks, "LEASE", 0.3)
    with tasks.page_run():
        task = tasks._ResultStore().task(("k",), _slow())
    _wait(task)
    assert task.finished and task.cancelled


def test_a_page_run_shows_one_progress_bar_per_computation():
    """Evaluation asked for its model's test split twice (at the top, and in the every-checkpoint
    table): two one-second polls of the same computation each reran the page when it finished, and
    a browser once got the second poll's bar for a place the first rerun had removed."""
    from streamlit.testing.v1 import AppTest

    def page():
        import time

        import streamlit as st

        from hierattn.app import tasks

        def slow(progress):
            for i in range(30):
                time.sleep(0.1)
                progress(i + 1, 30)
            return "done"

        with tasks.page_run():
            tasks.computed(("asked-twice-for-test",), slow, "Testing:")
            st.write("between")
            tasks.computed(("asked-twice-for-test",), slow, "Testing:")
            tasks.computed(("asked-once-for-test",), slow, "Other:")

    at = AppTest.from_function(page, default_timeout=30).run()
    texts = [p.proto.text for p in at.get("progress")]
    assert len(texts) == 2 and sum(t.startswith("Testing") for t in texts) == 1, texts
    tasks._results().stop_all(wait=5)
