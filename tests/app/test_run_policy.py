"""Who may start, replace, see and keep the Train page's runs (``app.run_policy``): the cap on runs
at once, one checkpoint per run, the runs and checkpoints one visitor holds, a run stopped when
its visitor is gone or its time is up, and a server for one person."""
from __future__ import annotations

import time

import pytest

from hierattn.app import app_store
from hierattn.app.run_policy import JobManager, PageRun
from hierattn.training.run_names import JobError
from tests.training.test_jobs import _job


@pytest.mark.slow
def test_jobs_are_capped_and_never_share_a_checkpoint(tmp_path):
    manager = JobManager(max_running=1)
    first = manager.start(_job(tmp_path, "a", epochs=50))
    with pytest.raises(JobError, match="at most 1 at once"):
        manager.start(_job(tmp_path, "b"))
    manager.max_running = 2
    with pytest.raises(JobError, match="training right now"):
        manager.start(_job(tmp_path, "a"))
    first.cancel()
    deadline = time.time() + 60
    while first.active and time.time() < deadline:
        time.sleep(0.1)
    assert not first.active


def test_a_single_user_server_may_replace_any_checkpoint(tmp_path, monkeypatch):
    manager = JobManager()
    (tmp_path / "shipped").mkdir()
    (tmp_path / "shipped" / "config.json").write_text("{}")
    job = _job(tmp_path, "shipped", replace_existing=True)
    with pytest.raises(JobError, match="did not train"):
        manager.start(job, session="visitor")
    monkeypatch.setenv("HIERATTN_SINGLE_USER", "1")
    assert manager.may_replace(tmp_path / "shipped", "visitor")


@pytest.mark.slow
def test_one_visitor_runs_one_run_at_a_time(tmp_path):
    manager = JobManager(max_running=2)
    first = manager.start(_job(tmp_path, "a", epochs=200), session="visitor")
    try:
        with pytest.raises(JobError, match="you have 1 run training already"):
            manager.start(_job(tmp_path, "b"), session="visitor")
        second = manager.start(_job(tmp_path, "c", epochs=1), session="another visitor")  # the other slot
        second.cancel()
    finally:
        first.cancel()
    _wait(first)


def _wait(job, seconds=60):
    deadline = time.time() + seconds
    while job.active and time.time() < deadline:
        time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.parametrize("setting,keep_going,reason", [
    ("HIERATTN_RUN_AWAY_SECONDS", False, "its visitor left more than"),
    ("HIERATTN_RUN_SECONDS", True, "it reached the time budget"),
])
def test_a_run_is_stopped_when_its_visitor_is_gone_or_its_time_is_up(tmp_path, monkeypatch, setting, keep_going,
                                                                    reason):
    """Two 200-epoch HCAN runs, tab closed, held both slots for hours on the previous code."""
    monkeypatch.setenv(setting, "1")
    manager = JobManager(present=lambda session: False)  # the visitor's tab is closed
    job = _job(tmp_path, "long", epochs=500)
    manager.start(job, session="gone", keep_going=keep_going)
    _wait(job, 90)
    assert job.status == "cancelled" and reason in job.message, job.message


def test_a_run_marked_to_keep_going_outlives_its_visitor(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERATTN_RUN_AWAY_SECONDS", "1")
    job = _job(tmp_path, "kept", epochs=1)
    page_run = PageRun({"gone"}, keep_going=True, present=lambda visitor: False)
    job.stop_reason = page_run.stop_reason
    job.started -= 100  # as if it had run long without its visitor
    page_run.last_seen = time.monotonic() - 100
    job._watch()
    assert not job.stop.is_set() and not job.stopped_because
    page_run.keep_going = False
    job._watch()
    assert job.stop.is_set() and "visitor left" in job.stopped_because


@pytest.mark.slow  # trains
def test_one_visitor_keeps_at_most_its_share_of_checkpoints(tmp_path, monkeypatch):
    """Visitors' checkpoints had no cap: each one is in every visitor's pickers, and one 20 MB upload
    wrote 51 MB. A run that finishes is recorded in the app-wide store; a checkpoint another worker
    recorded counts the same."""
    import shutil

    monkeypatch.setenv("HIERATTN_CHECKPOINTS_PER_VISITOR", "2")
    manager = JobManager(max_running=2)
    job = manager.start(_job(tmp_path, "a", epochs=1), session="visitor")
    _wait(job, 120)
    assert job.status == "finished", job.message
    deadline = time.time() + 60  # recorded in the app-wide store as its run's thread ends
    while not app_store.visitor_checkpoints(tmp_path) and time.time() < deadline:
        time.sleep(0.1)
    assert [(p.name, owner) for p, owner, _ in app_store.visitor_checkpoints(tmp_path)] == [("a", "visitor")]
    shutil.copytree(tmp_path / "a", tmp_path / "b")  # the same visitor's run on another worker
    app_store.record_checkpoint(tmp_path / "b", "visitor")
    with pytest.raises(JobError, match="you have 2 checkpoints on this server already"):
        manager.start(_job(tmp_path, "c", epochs=1), session="visitor")
    with pytest.raises(JobError, match="you have 2 checkpoints on this server already"):  # another worker, a restart
        JobManager().start(_job(tmp_path, "c", epochs=1), session="visitor")
    again = manager.start(_job(tmp_path, "a", epochs=1, replace_existing=True), session="visitor")  # one of its own
    other = manager.start(_job(tmp_path, "d", epochs=1), session="another visitor")  # another's share, meanwhile
    assert again.status != "failed" and other.status != "failed"  # both started: nothing refused
    for started in (again, other):
        started.cancel()
        _wait(started, 120)
        assert started.status in ("cancelled", "finished"), started.message
