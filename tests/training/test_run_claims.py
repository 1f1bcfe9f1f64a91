"""One app served by several processes keeps one cap on its training runs (``run_claims``)."""
import json
import subprocess
import sys
import time

import pytest

from hierattn.app.run_policy import JobManager
from hierattn.data.dataset import Dataset
from hierattn.data.text import TextConfig
from hierattn.training import run_claims
from hierattn.training.jobs import make_job
from hierattn.training.loop import TrainConfig
from hierattn.training.run_names import JobError


def _toy_dataset():
    texts = [f"good film number {i} . i liked it" if i % 2 else f"bad film number {i} . i hated it" for i in range(40)]
    return Dataset("toy", texts, [i % 2 for i in range(40)], ["neg", "pos"])


def _job(root, name, epochs=2):
    return make_job(name, root, "han", {"embed_dim": 8, "hidden": 4, "attention_dim": 8}, _toy_dataset(),
                    TextConfig(4, 12), TrainConfig(epochs=epochs, batch_size=8, min_freq=1), device="cpu")


@pytest.fixture
def other_process(tmp_path, monkeypatch):
    """Another server process of the same app: a live pid that holds the claims written for it."""
    monkeypatch.setenv("HIERATTN_RUNTIME", str(tmp_path / "runtime"))
    monkeypatch.setenv(run_claims.APP_ID, "class-1")
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    folder = tmp_path / "runtime" / "runs-class-1"
    folder.mkdir(parents=True)

    def claim(job, out, owners=()):
        (folder / f"{process.pid}-{job}.json").write_text(json.dumps(
            {"pid": process.pid, "job": job, "out": str(out.resolve()), "owners": list(owners)}))
    yield process, folder, claim
    process.kill()


@pytest.mark.slow  # trains
def test_another_processs_runs_count_toward_the_apps_cap_and_its_checkpoints(tmp_path, other_process):
    process, folder, claim = other_process
    claim("j1", tmp_path / "theirs")
    claim("j2", tmp_path / "second")
    with pytest.raises(JobError, match="2 runs are training already"):
        JobManager(max_running=2).start(_job(tmp_path, "mine"))
    with pytest.raises(JobError, match="training right now"):
        JobManager(max_running=3).start(_job(tmp_path, "theirs"))
    (folder / f"{process.pid}-j2.json").unlink()
    claim("j2", tmp_path / "second", owners=["browser-a"])
    with pytest.raises(JobError, match="you have 1 run training already"):
        JobManager(max_running=3).start(_job(tmp_path, "mine"), session="browser-a")
    process.kill()
    process.wait()
    job = JobManager(max_running=2).start(_job(tmp_path, "mine", epochs=1))  # its process is gone: slots free
    assert not list(folder.glob(f"{process.pid}-*.json"))  # and its claims swept
    assert (folder / f"{__import__('os').getpid()}-{job.id}.json").exists()
    deadline = time.time() + 120
    while job.active and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(0.2)
    assert job.status == "finished" and not list(folder.glob("*.json"))  # its slot is given back


def test_a_server_of_one_process_writes_no_claims(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERATTN_RUNTIME", str(tmp_path / "runtime"))
    monkeypatch.delenv(run_claims.APP_ID, raising=False)
    with run_claims.shared() as claims:
        claims.claim("x", tmp_path, set())
        assert claims.others() == []
    assert not (tmp_path / "runtime").exists()
