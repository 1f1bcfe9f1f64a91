"""A training job (``training.jobs``): one process per run, watched by a thread until it ends, what
it writes when it finishes, is cancelled, is killed or cannot start, and the server's shutdown
ending it."""
import os
import signal
import threading
import time

import pytest

from hierattn.checkpoint.reading import load_classifier
from hierattn.data.dataset import Dataset
from hierattn.data.text import TextConfig
from hierattn.training.jobs import make_job, stop_all
from hierattn.training.loop import TrainConfig
from hierattn.training.run_names import JobError

WORDS = {"pos": "great lovely superb fine", "neg": "awful boring dreadful bad"}


def _toy_dataset() -> Dataset:
    texts, labels = [], []
    for i in range(40):
        texts.append(f"The film was {list(WORDS.values())[i % 2].split()[i % 4]}. Day {i}.")
        labels.append(i % 2)
    return Dataset("toy", texts, labels, ["pos", "neg"])


def _job(root, name, epochs=2, **kw):
    return make_job(name, root, "han", {"embed_dim": 8, "hidden": 4, "attention_dim": 8}, _toy_dataset(),
                    TextConfig(4, 12), TrainConfig(epochs=epochs, batch_size=8, min_freq=1), device="cpu", **kw)


@pytest.mark.slow
def test_cancel_before_an_epoch_finishes_writes_nothing(tmp_path):
    job = _job(tmp_path, "early")
    job.cancel()
    job.run()
    assert job.status == "cancelled" and "nothing was written" in job.message and not (tmp_path / "early").exists()


@pytest.mark.slow
def test_replace_swaps_an_existing_checkpoint_whole(tmp_path):
    _job(tmp_path, "same", epochs=1).run()
    first = (tmp_path / "same" / "metrics.json").read_text()
    with pytest.raises(JobError, match="already exists"):
        _job(tmp_path, "same")
    job = _job(tmp_path, "same", epochs=1, replace_existing=True)
    job.run()
    assert job.status == "finished" and (tmp_path / "same" / "metrics.json").read_text() != first
    assert [p.name for p in tmp_path.iterdir()] == ["same"]  # no temporaries left behind


@pytest.mark.slow
def test_two_jobs_train_at_once_without_interfering(tmp_path):
    jobs = [_job(tmp_path, f"run{i}", epochs=2) for i in range(2)]
    threads = [threading.Thread(target=j.run) for j in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert all(j.status == "finished" for j in jobs)
    for j in jobs:
        assert load_classifier(tmp_path / j.name, device="cpu").metrics["epochs_run"] == 2


@pytest.mark.slow
def test_a_killed_training_process_is_reported_and_loses_nothing(tmp_path):
    _job(tmp_path, "keep", epochs=1).run()
    kept = (tmp_path / "keep" / "model.safetensors").read_bytes()
    job = _job(tmp_path, "keep", epochs=500, replace_existing=True)
    thread = threading.Thread(target=job.run)
    thread.start()
    deadline = time.time() + 120
    while job.snapshot()["status"] != "running" and time.time() < deadline:
        time.sleep(0.1)
    os.kill(job._process.pid, signal.SIGKILL)
    thread.join(60)
    assert job.status == "failed" and "stopped unexpectedly" in job.message
    assert (tmp_path / "keep" / "model.safetensors").read_bytes() == kept
    assert load_classifier(tmp_path / "keep", device="cpu").metrics["epochs_run"] == 1


@pytest.mark.slow  # trains
def test_data_that_cannot_reach_the_training_process_fails_clearly(tmp_path):
    job = _job(tmp_path, "odd")
    job.dataset = Dataset("odd", [lambda: None] * 40, list(range(2)) * 20, ["a", "b"])  # not picklable
    job.run()
    assert job.status == "failed" and "could not start" in job.message


@pytest.mark.slow
def test_a_stopping_server_ends_its_training_processes(tmp_path):
    """stop_all (the server's shutdown) ends a run's process, which a server killed by a signal
    would otherwise leave training on its own."""
    job = _job(tmp_path, "orphan", epochs=500)
    threading.Thread(target=job.run, daemon=True).start()  # as the app's job manager runs it
    deadline = time.time() + 60
    while job._process is None and time.time() < deadline:
        time.sleep(0.1)
    process = job._process
    assert process is not None and process.is_alive()
    assert stop_all() == 1
    assert not process.is_alive()
    while job.active and time.time() < deadline:  # the watching thread sees its process gone
        time.sleep(0.1)
    assert job.status == "failed" and not (tmp_path / "orphan").exists()
