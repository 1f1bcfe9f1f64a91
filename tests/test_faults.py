"""Faults: a process killed in the middle of a checkpoint write, a full disk, and many
sessions at once. docs/RELIABILITY.md lists what each test tries and what happens."""
import errno
import json
import os
import random
import select
import signal
import sys
import threading
import time

import pytest
import torch

from hierattn.checkpoint import writing
from hierattn.checkpoint.format import CheckpointError
from hierattn.checkpoint.reading import load_classifier
from hierattn.checkpoint.writing import save_checkpoint
from hierattn.data.text import TextConfig, Vocab
from hierattn.home import list_checkpoints
from hierattn.models import build_model
from tests.conftest import CORPUS
from tests.tiny import LABELS

KILLS = 24


def _tiny_model(vocab, seed=0):
    torch.manual_seed(seed)
    return build_model("hcan", {"vocab_size": len(vocab), "num_classes": 4, "d": 16, "heads": 2}).eval()


def _save(path, model, vocab, version: int):
    return save_checkpoint(path, model, "hcan", vocab, LABELS, TextConfig(4, 9), {"version": version})


def _save_forever(path, model, vocab, report_fd: int) -> None:
    """The child: save version after version, telling the parent when each write begins."""
    version = 1
    while True:
        os.write(report_fd, b"b")
        _save(path, model, vocab, version)
        version += 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the kill loop forks a writer process; Windows has no fork")
def test_sigkill_during_checkpoint_writes_never_loses_the_checkpoint(tmp_path, tiny_vocab):
    """SIGKILL a process at random instants while it writes checkpoints, KILLS times: every time,
    the picker lists exactly the one checkpoint and it loads (the old version or the new one)."""
    root, model = tmp_path / "checkpoints", _tiny_model(tiny_vocab)
    path = _save(root / "run", model, tiny_vocab, 0)
    start = time.perf_counter()
    _save(root / "timing", model, tiny_vocab, 0)
    save_seconds = time.perf_counter() - start
    (root / "timing").rename(tmp_path / "timing")  # only "run" stays in the folder
    rng = random.Random(7)
    versions, leftovers_seen = set(), 0
    for _ in range(KILLS):
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: no pytest, no cleanup handlers, straight to work
            os.close(read_fd)
            try:
                _save_forever(path, model, tiny_vocab, write_fd)
            finally:
                os._exit(1)
        os.close(write_fd)
        ready, _, _ = select.select([read_fd], [], [], 30)
        assert ready, "the child never started a save"
        for _ in range(rng.randrange(1, 4)):  # land inside the 1st, 2nd or 3rd write
            select.select([read_fd], [], [], 5)
            os.read(read_fd, 1)
        time.sleep(rng.uniform(0, 1.2 * save_seconds))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(read_fd)
        assert list_checkpoints(root) == [path]
        classifier = load_classifier(path, device="cpu")
        versions.add(classifier.metrics["version"])
        leftovers_seen += any(p.name.startswith(".") for p in root.iterdir())
    assert len(versions) > 1  # the kills landed at different points of the writing
    assert leftovers_seen  # some kill landed mid-write and left a temporary behind, unlisted ...
    _save(path, model, tiny_vocab, 99)  # ... which the next save clears away
    assert sorted(p.name for p in root.iterdir()) == ["run"]
    assert load_classifier(path, device="cpu").metrics == {"version": 99}


@pytest.mark.parametrize("failing", ["safetensors", "json"])
def test_a_full_disk_during_a_save_is_a_clear_error_and_loses_nothing(tmp_path, tiny_vocab, monkeypatch, failing):
    model = _tiny_model(tiny_vocab)
    path = _save(tmp_path / "run", model, tiny_vocab, 1)
    before = {f.name: f.read_bytes() for f in path.iterdir()}

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    if failing == "safetensors":
        monkeypatch.setattr(writing, "save_file", disk_full)
    else:
        monkeypatch.setattr(Vocab, "save", disk_full)
    with pytest.raises(CheckpointError, match="the disk is full; the previous checkpoint is unchanged"):
        _save(path, _tiny_model(tiny_vocab, seed=1), tiny_vocab, 2)
    assert {f.name: f.read_bytes() for f in path.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no temporary left
    with pytest.raises(CheckpointError, match="the disk is full; nothing was written"):
        _save(tmp_path / "new", model, tiny_vocab, 1)
    assert not (tmp_path / "new").exists()


@pytest.mark.skipif(sys.platform != "linux" or os.geteuid() != 0, reason="a real full disk needs a tmpfs mounted as "
                                                                         "root on Linux; the injected "
                                                                    "full-disk test above runs everywhere")
def test_a_really_full_disk(tmp_path, tiny_vocab):
    """The same on a real 64 KB tmpfs where the weights do not fit."""
    import subprocess

    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("this container may not mount a tmpfs (no CAP_SYS_ADMIN); the injected full-disk test ran")
    try:
        model = build_model("hcan", {"vocab_size": 2000, "num_classes": 4, "d": 32, "heads": 2})
        vocab = Vocab(["<pad>", "<unk>"] + [f"w{i}" for i in range(1998)])
        with pytest.raises(CheckpointError, match="the disk is full; nothing was written"):
            save_checkpoint(mount / "run", model, "hcan", vocab, LABELS, TextConfig(), {})
        assert list(mount.iterdir()) == []
    finally:
        subprocess.run(["umount", str(mount)], check=False)


@pytest.mark.slow
def test_ten_explorers_and_two_trainings_at_once(tmp_path, checkpoint_dir, tiny_vocab):
    """Ten threads explain documents with one shared cached model while two training jobs run:
    every prediction equals the single-session one, and the shared model is never changed."""
    from hierattn.analysis.explain import explain
    from hierattn.app.run_policy import JobManager
    from hierattn.data.dataset import Dataset
    from hierattn.training.jobs import make_job
    from hierattn.training.loop import TrainConfig

    classifier = load_classifier(checkpoint_dir / "tiny-hcan", device="cpu")
    weights_before = {k: v.clone() for k, v in classifier.model.state_dict().items()}
    texts = [CORPUS[i % len(CORPUS)] + f" Item {i}." + " And again." * (i % 5) for i in range(40)]
    alone = {t: explain(classifier, t).to_dict() for t in texts}

    rows = [(t, ["pos", "neg"][i % 2]) for i, t in enumerate(CORPUS * 10)]
    dataset = Dataset("mini", [t for t, _ in rows], [i % 2 for i in range(len(rows))], ["pos", "neg"])
    manager = JobManager()
    jobs = [manager.start(make_job(f"run{i}", tmp_path, "han", {"embed_dim": 8, "hidden": 4, "attention_dim": 8},
                                   dataset, TextConfig(4, 9), TrainConfig(epochs=6, batch_size=8, min_freq=1),
                                   device="cpu"))
            for i in range(2)]
    results, failures, during_training = {}, [], []
    deadline = time.time() + 180

    def explorer(k):
        try:
            rounds = 0
            while (rounds < 3 or any(j.active for j in jobs)) and time.time() < deadline:
                for t in texts[k::10]:
                    training = any(j.active for j in jobs)  # a training process is preparing or training
                    results.setdefault(t, []).append(explain(classifier, t).to_dict())
                    during_training.append(training)
                rounds += 1
        except Exception as exc:  # noqa: BLE001  (reported below)
            failures.append(repr(exc))

    threads = [threading.Thread(target=explorer, args=(k,)) for k in range(10)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(200)
    assert not failures
    assert sum(during_training) > 10  # the explorers really ran while both trainings did
    assert set(results) == set(texts)
    for t, outs in results.items():
        assert len(outs) >= 3 and all(json.dumps(o) == json.dumps(alone[t]) for o in outs)
    assert not classifier.model.training
    for k, v in classifier.model.state_dict().items():
        assert torch.equal(v, weights_before[k]), k
    assert [j.snapshot()["status"] for j in jobs] == ["finished", "finished"]
    for j in jobs:
        assert load_classifier(tmp_path / j.name, device="cpu").labels == ["pos", "neg"]


@pytest.mark.slow
def test_a_training_child_does_not_run_the_page_script_that_is_main(tmp_path, monkeypatch):
    """Streamlit makes each script a fake ``__main__`` with ``__file__`` = the script; a spawned
    training process must not execute it (it did: Explore's script crashed a training child when
    another session had just run it)."""
    import sys
    import types

    from hierattn.app.run_policy import JobManager
    from hierattn.data.dataset import Dataset
    from hierattn.training.jobs import make_job
    from hierattn.training.loop import TrainConfig

    marker = tmp_path / "script-ran"
    script = tmp_path / "page.py"
    script.write_text(f"open({str(marker)!r}, 'w').write('ran')\nraise SystemExit('a page script, run in the child')\n")
    fake_main = types.ModuleType("__main__")
    fake_main.__file__ = str(script)
    monkeypatch.setitem(sys.modules, "__main__", fake_main)
    rows = [(t, i % 2) for i, t in enumerate(CORPUS * 10)]
    dataset = Dataset("mini", [t for t, _ in rows], [y for _, y in rows], ["pos", "neg"])
    job = JobManager().start(make_job("run", tmp_path, "han", {"embed_dim": 8, "hidden": 4, "attention_dim": 8},
                                      dataset, TextConfig(4, 9), TrainConfig(epochs=1, batch_size=8, min_freq=1),
                                      device="cpu"))
    deadline = time.time() + 120
    while job.active and time.time() < deadline:
        time.sleep(0.2)
    assert job.snapshot()["status"] == "finished", job.snapshot()["message"]
    assert not marker.exists()
    assert sys.modules["__main__"] is fake_main  # put back once the process started
