"""The app-wide store (``hierattn.app.app_store``): what every worker of an app, and a restarted
server, agrees on about visitors' checkpoints, so that limits hold whatever identity a client
presents (a client that sends no cookie is a new visitor per connection)."""
from __future__ import annotations

import sqlite3

import pytest

from hierattn.app import app_store
from hierattn.app.run_policy import JobManager
from hierattn.training.run_names import JobError
from tests.training.test_jobs import _job


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERATTN_RUNTIME", str(tmp_path / "runtime"))
    root = tmp_path / "checkpoints"
    root.mkdir()
    return root


def _written(root, name: str, owner: str, kb: int = 4):
    folder = root / name
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"\0" * kb * 1024)
    app_store.record_checkpoint(folder, owner)
    return folder


def test_twenty_cookie_less_identities_meet_the_server_wide_cap_on_every_worker_and_after_a_restart(store,
                                                                                                  monkeypatch):
    monkeypatch.setenv("HIERATTN_VISITOR_CHECKPOINTS", "10")
    for i in range(10):  # ten connections without a cookie, each a visitor, each kept one checkpoint
        _written(store, f"run{i}", f"anonymous-{i}")
    workers = [JobManager(), JobManager()]  # two server processes of one app
    refused = 0
    for i in range(10, 30):
        with pytest.raises(JobError, match="the visitors of this server keep 10 checkpoints already"):
            workers[i % 2].start(_job(store, f"run{i}", epochs=1), session=f"anonymous-{i}")
        refused += 1
    assert refused == 20 and not any(w.jobs() for w in workers)  # nothing started, nothing trained
    restarted = JobManager()
    with pytest.raises(JobError, match="keep 10 checkpoints already"):
        restarted.start(_job(store, "after", epochs=1), session="anonymous-99")
    # a visitor may still replace its own, on any worker, after the restart
    assert restarted.may_replace(store / "run3", "anonymous-3") and not restarted.may_replace(store / "run3", "other")
    restarted._check_kept(store / "run3", "anonymous-3")


def test_the_visitors_checkpoints_are_bounded_in_megabytes_too(store, monkeypatch):
    monkeypatch.setenv("HIERATTN_VISITOR_CHECKPOINTS_MB", "1")
    _written(store, "big", "someone", kb=1536)
    with pytest.raises(JobError, match="the size of the checkpoints all visitors keep is 1.50 MB, over the limit"):
        JobManager().start(_job(store, "next", epochs=1), session="another")


def test_a_visitors_own_cap_counts_every_worker_and_a_row_whose_folder_is_gone_does_not(store, monkeypatch):
    monkeypatch.setenv("HIERATTN_CHECKPOINTS_PER_VISITOR", "2")
    _written(store, "a", "visitor")
    gone = _written(store, "b", "visitor")
    for f in gone.iterdir():
        f.unlink()
    gone.rmdir()  # deleted by hand: no longer kept
    JobManager()._check_kept(store / "c", "visitor")  # one kept: a second is allowed
    _written(store, "b2", "visitor")
    with pytest.raises(JobError, match="you have 2 checkpoints on this server already"):
        JobManager()._check_kept(store / "c", "visitor")
    assert [p.name for p, _, _ in app_store.visitor_checkpoints(store)] == ["a", "b2"]
    assert app_store.visitor_checkpoints(store.parent) == []  # another folder's app counts its own


def test_a_process_keeps_one_connection_its_threads_take_in_turn(store, tmp_path):
    """Each call opened and closed its own connection, and the last connection to a WAL database
    to close checkpoints it and deletes its log: 3 ms of every paste. One connection stays open now,
    shared by the process's threads one at a time, and a store file removed meanwhile is made again."""
    from concurrent.futures import ThreadPoolExecutor

    with app_store._store() as first:
        pass
    with app_store._store() as again:
        assert again is first
    wal = tmp_path / "runtime" / (app_store.FILE + "-wal")
    app_store.claim_analysis("someone", 1)
    assert wal.exists()  # a call's end no longer checkpoints the store away

    def claim_and_release(i: int) -> bool:
        claim = app_store.claim_analysis(f"visitor {i % 4}", 100)
        app_store.release_analysis(claim)
        return claim is not None

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(claim_and_release, range(200)))
    with app_store._store() as connection:
        assert connection.execute("SELECT count(*) FROM running_analyses").fetchone()[0] == 1  # "someone"'s
    with pytest.raises(RuntimeError), app_store._store() as connection:  # a call failing in its transaction
        connection.execute("BEGIN IMMEDIATE")
        raise RuntimeError
    other = sqlite3.connect(tmp_path / "runtime" / app_store.FILE, timeout=0.1, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # the write lock was let go with it
    other.execute("COMMIT")
    other.close()
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / "runtime" / (app_store.FILE + suffix)).unlink(missing_ok=True)
    assert app_store.claim_analysis("someone", 1) is not None  # made again, tables and all
