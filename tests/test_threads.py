"""Thread budgets (hierattn.threads): the census, each process's share, and a started training
job and the server reading their budgets back as designed."""
import json
import os
import subprocess
import sys
import time

import pytest
import torch

from hierattn import threads
from hierattn.threads import Census, TrainingThreads, census, serving, serving_budget, training_budget


@pytest.mark.parametrize("available, trainings, serving_now, train, serve", [
    (2, 1, 0, 2, 1),  # one run alone takes both cores; a page computing beside it gets one
    (2, 2, 0, 1, 1),  # two runs: one thread each, never two each
    (2, 1, 1, 1, 1),  # a page computing: the run makes room
    (16, 2, 5, 5, 5),
    (1, 3, 1, 1, 1),  # never below one thread
])
def test_shares_of_the_cores(available, trainings, serving_now, train, serve):
    assert training_budget(Census(trainings, serving_now), available) == train
    assert serving_budget(Census(trainings, 0), available) == serve


def _entry(root, name, **fields):
    root.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(json.dumps(fields))


def test_census_counts_live_runs_and_current_leases_and_sweeps_the_dead(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    _entry(tmp_path, "train-1.json", pid=os.getpid(), role="train")
    _entry(tmp_path, "train-2.json", pid=dead.pid, role="train")
    _entry(tmp_path, "serve-3.json", pid=os.getpid(), role="serve", threads=3, until=time.time() + 60)
    _entry(tmp_path, "serve-4.json", pid=os.getpid(), role="serve", threads=5, until=time.time() - 1)  # lapsed
    (tmp_path / "train-5.json").write_text("{half a")  # being written
    assert census(tmp_path) == Census(trainings=1, serving=3)
    assert not (tmp_path / "train-2.json").exists()


def test_a_training_run_takes_its_share_and_gives_it_back(tmp_path, monkeypatch):
    monkeypatch.delenv("HIERATTN_THREADS", raising=False)
    before = torch.get_num_threads()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _entry(tmp_path, "train-other.json", pid=other.pid, role="train")
        with TrainingThreads(tmp_path, available=4) as run:
            assert run.threads == 2 == torch.get_num_threads()  # two runs on four cores
            mine = json.loads(run.path.read_text())
            assert mine == {"pid": os.getpid(), "role": "train", "threads": 2}
            _entry(tmp_path, "serve-x.json", pid=other.pid, role="serve", threads=2, until=time.time() + 60)
            assert run.refresh() == 2  # looks again only every RECHECK seconds
            assert run.refresh(force=True) == 1 == torch.get_num_threads()  # (4 - 2) // 2
        assert not run.path.exists() and torch.get_num_threads() == before
    finally:
        other.kill()


def test_a_fixed_budget_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERATTN_THREADS", "1")
    with TrainingThreads(tmp_path, available=8) as run:
        assert run.threads == 1 == torch.get_num_threads()


def test_the_server_holds_its_share_while_it_computes_and_a_lease_after(tmp_path, monkeypatch):
    monkeypatch.delenv("HIERATTN_THREADS", raising=False)
    monkeypatch.setattr(threads, "SERVE_LEASE", 30.0)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _entry(tmp_path, "train-other.json", pid=other.pid, role="train")
        with serving(tmp_path, available=4) as granted:
            assert granted == 2 == torch.get_num_threads()  # 4 // (1 training + the server)
            entry = json.loads((tmp_path / f"serve-{os.getpid()}.json").read_text())
            assert entry["until"] == float("inf") and entry["threads"] == 2
            assert census(tmp_path) == Census(trainings=1, serving=2)
        lease = json.loads((tmp_path / f"serve-{os.getpid()}.json").read_text())["until"]
        assert time.time() < lease <= time.time() + 30
        assert census(tmp_path, now=lease + 1) == Census(trainings=1, serving=0)  # the lease lapses
    finally:
        other.kill()


def test_background_computations_split_the_servers_share_in_their_own_threads(tmp_path, monkeypatch):
    """Two background analyses, each with the server's whole share of a 2-core machine, once put
    four OpenMP threads on two cores (seen in CI). Each now takes its part, in its own thread only
    (OpenMP keeps the count per thread), and the census still sees the server's whole share."""
    import threading

    monkeypatch.delenv("HIERATTN_THREADS", raising=False)
    before, seen = torch.get_num_threads(), {}

    def background():
        with serving(tmp_path, available=4, shared_by=4) as granted:
            seen["granted"], seen["torch"] = granted, torch.get_num_threads()
            seen["lease"] = json.loads((tmp_path / f"serve-{os.getpid()}.json").read_text())["threads"]

    worker = threading.Thread(target=background)
    worker.start()
    worker.join()
    assert seen == {"granted": 1, "torch": 1, "lease": 4}
    assert torch.get_num_threads() == before  # the page's thread keeps its own count


@pytest.mark.slow
def test_a_started_training_job_reports_the_budget_it_set(tmp_path, monkeypatch):
    """A Train-page job in its own process, four cores between it and a computing server: the
    job's census entry reads back the threads torch reports in that process."""
    from hierattn.app.run_policy import JobManager
    from hierattn.data.dataset import Dataset
    from hierattn.data.text import TextConfig
    from hierattn.training.jobs import make_job
    from hierattn.training.loop import TrainConfig

    census_dir = tmp_path / "census"
    monkeypatch.setenv("HIERATTN_RUNTIME", str(census_dir))
    monkeypatch.setenv("HIERATTN_CORES", "4")
    monkeypatch.delenv("HIERATTN_THREADS", raising=False)
    texts = [f"The film was {'good' if i % 2 else 'bad'}. Day {i}." for i in range(40)]
    dataset = Dataset("toy", texts, [i % 2 for i in range(40)], ["pos", "neg"])
    job = JobManager().start(make_job("budget", tmp_path / "out", "han", {"embed_dim": 8, "hidden": 4,
                                      "attention_dim": 8}, dataset, TextConfig(4, 12),
                                      TrainConfig(epochs=500, batch_size=8, min_freq=1, patience=500), device="cpu"))

    def entry():
        found = [json.loads(p.read_text()) for p in census_dir.glob("train-*.json")]
        return found[0] if found and found[0].get("threads") else None

    try:
        deadline = time.time() + 120
        while entry() is None and time.time() < deadline:
            time.sleep(0.1)
        assert entry() is not None and entry()["threads"] == 4 and entry()["pid"] != os.getpid()  # alone: every core
        assert job.snapshot()["threads"] == 4 and job.snapshot()["cores"] == 4  # what the Train page shows
        with serving() as granted:  # the server computes: 4 // 2 for it, the rest for the run
            assert granted == 2
            deadline = time.time() + 30
            while entry()["threads"] != 2 and time.time() < deadline:
                time.sleep(0.1)
            assert entry()["threads"] == 2
    finally:
        job.cancel()
        while job.active:
            time.sleep(0.1)
    assert not list(census_dir.glob("train-*.json"))  # the run left the census when it ended


def test_the_documented_table_of_shares_is_what_the_budgets_give():
    from pathlib import Path

    text = Path(__file__).resolve().parent.parent.joinpath("docs", "CLASSROOM.md").read_text()
    table = text.split("<!-- threads:table -->")[1].split("<!-- threads:end -->")[0]
    rows = [line.strip("|").split("|") for line in table.strip().splitlines()[2:]]
    assert [int(r[0]) for r in rows] == [1, 2, 4, 8, 16]
    for cells in rows:
        n, alone, pair, beside, page = (int(c) for c in cells)
        serving_now = serving_budget(Census(trainings=1, serving=0), n)
        assert alone == training_budget(Census(trainings=1, serving=0), n)
        assert pair == training_budget(Census(trainings=2, serving=0), n)
        assert page == serving_now
        assert beside == training_budget(Census(trainings=1, serving=serving_now), n)


def test_servers_of_one_app_computing_at_once_share_the_cores(tmp_path, monkeypatch):
    """``hierattn app --workers 2``: two servers computing on 2 cores take one thread each, not two
    (four OpenMP threads on two cores wait on each other at every operation); alone, both cores."""
    monkeypatch.delenv("HIERATTN_THREADS", raising=False)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with serving(tmp_path, available=2) as alone:
            assert alone == 2
        (tmp_path / f"serve-{os.getpid()}.json").unlink()
        _entry(tmp_path, f"serve-{other.pid}.json", pid=other.pid, role="serve", threads=1,
               until=time.time() + 60)
        assert census(tmp_path).other_servers == 1
        with serving(tmp_path, available=2) as beside:
            assert beside == 1 == torch.get_num_threads()
        assert census(tmp_path).other_servers == 1  # its own lease is not another server
        _entry(tmp_path, f"serve-{other.pid}.json", pid=other.pid, role="serve", threads=1, until=time.time() - 1)
        with serving(tmp_path, available=2) as after:
            assert after == 2  # the other's lease lapsed
    finally:
        other.kill()
