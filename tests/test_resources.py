"""What one checkpoint may cost the server (``hierattn.limits``): judged from its small files before
its vocabulary or weights are read, each refusal naming its limit and the variable that raises it."""
from __future__ import annotations

import json

import pytest

from hierattn.checkpoint.format import CheckpointError
from hierattn.checkpoint.reading import load_classifier
from hierattn.checkpoint.writing import save_checkpoint
from hierattn.data.text import TextConfig, Vocab
from hierattn.models import build_model
from tests.conftest import edit_config
from tests.tiny import LABELS


def _never_read(monkeypatch):
    """Fail the test if the vocabulary or the weights are read."""
    from hierattn.checkpoint import reading

    monkeypatch.setattr(Vocab, "load", classmethod(lambda cls, path: pytest.fail("vocab.json was read")))
    monkeypatch.setattr(reading, "safe_open", lambda *a: pytest.fail("model.safetensors was read"))


@pytest.fixture
def flat(tmp_path, tiny_vocab):
    """A flat HCAN (one document-wide self-attention) that reads 500 sentences x 500 words: one
    explanation would compute 250,000 x 250,000 weights per head and branch."""
    caps = TextConfig(max_sentences=500, max_words=500)
    model = build_model("hcan", {"vocab_size": len(tiny_vocab), "num_classes": 4, "d": 8, "heads": 2,
                                 "hierarchical": False, "word_positions": 250_000})
    return save_checkpoint(tmp_path / "flat", model, "hcan", tiny_vocab, LABELS, caps, {})


def test_a_checkpoint_that_reads_too_many_words_is_refused_unread(flat, monkeypatch):
    _never_read(monkeypatch)
    with pytest.raises(CheckpointError) as error:
        load_classifier(flat, device="cpu")
    assert str(error.value) == ("flat: the words read per document (sentences x words per sentence) is 250,000, "
                                "over the limit of 4,000 (set HIERATTN_MAX_WORDS_READ to raise it)")


def test_the_words_read_limit_is_a_setting(flat, monkeypatch):
    """Each limit is a setting, and each of its layers holds on its own: the words read, the size of
    the table of positions that reading needs, then the attention one explanation would hold."""
    monkeypatch.setenv("HIERATTN_MAX_WORDS_READ", "250000")
    with pytest.raises(CheckpointError, match=r"word_positions \(a layer's size\) is 250,000"):
        load_classifier(flat, device="cpu")
    monkeypatch.setenv("HIERATTN_MAX_WIDTH", "250000")
    with pytest.raises(CheckpointError, match="attention cells one explanation holds .* is 250,000,500,000"):
        load_classifier(flat, device="cpu")  # 2 heads x 2 branches x 250,000^2 cells, and the sentence's
    monkeypatch.setenv("HIERATTN_MAX_EXPLANATION_CELLS", str(10**12))
    assert load_classifier(flat, device="cpu").text_config.max_words == 500


@pytest.fixture
def han(tmp_path, tiny_vocab):
    model = build_model("han", {"vocab_size": len(tiny_vocab), "num_classes": 4, "embed_dim": 8, "hidden": 4})
    return save_checkpoint(tmp_path / "han", model, "han", tiny_vocab, LABELS, TextConfig(4, 8), {})


@pytest.mark.parametrize("variable,value,edit,message", [
    ("HIERATTN_MAX_VOCAB_MB", "0.01", lambda p: (p / "vocab.json").write_text(json.dumps(["w"] * 20_000)),
     "han: vocab.json's size is 0.10 MB, over the limit of 0.01 MB (set HIERATTN_MAX_VOCAB_MB"),
    ("HIERATTN_MAX_WEIGHTS_MB", "0.001", lambda p: None,
     "han: model.safetensors's size is 0.01 MB, over the limit of 0.001 MB (set HIERATTN_MAX_WEIGHTS_MB"),
    ("HIERATTN_MAX_JSON_MB", "0.001", lambda p: _edit(p, lambda c: c.update(pad="x" * 5000)),
     "han: config.json's size is 0.01 MB, over the limit of 0.001 MB (set HIERATTN_MAX_JSON_MB"),
    (None, None, lambda p: _edit(p, lambda c: c["model_config"].update(vocab_size=10**9)),
     "the vocabulary (words) is 1,000,000,000, over the limit of 500,000 (set HIERATTN_MAX_VOCAB"),
    (None, None, lambda p: _edit(p, lambda c: c["model_config"].update(embed_dim=100_000)),
     "embed_dim (a layer's size) is 100,000, over the limit of 4,096 (set HIERATTN_MAX_WIDTH"),
    (None, None, lambda p: _edit(p, lambda c: c.update(labels=[str(i) for i in range(5000)]) or
                                  c["model_config"].update(num_classes=5000)),
     "the number of distinct labels is 5,000, over the limit of 100 (set HIERATTN_MAX_CLASSES"),
])
def test_a_checkpoint_beyond_a_limit_is_refused_before_its_weights_are_read(han, monkeypatch, variable, value, edit,
                                                                           message):
    edit(han)
    if variable:
        monkeypatch.setenv(variable, value)
    _never_read(monkeypatch)
    with pytest.raises(CheckpointError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_classifier(han, device="cpu")


_edit = edit_config


def test_training_with_caps_beyond_the_limit_is_refused_before_it_starts(tmp_path, capsys):
    from hierattn.cli import main

    csv = tmp_path / "films.csv"
    csv.write_text("text,label\n" + "".join(f"film {i},{i % 2}\n" for i in range(40)))
    assert main(["train", "--model", "han", "--file", str(csv), "--max-sentences", "500", "--max-words", "500",
                 "--out", str(tmp_path / "ck")]) == 2
    assert "over the limit of 4,000 (set HIERATTN_MAX_WORDS_READ" in capsys.readouterr().err
    assert not (tmp_path / "ck").exists()


def test_the_models_kept_loaded_stay_within_their_memory_limit(checkpoint_dir, monkeypatch):
    """Least recently used first; a model asked for again while held is the same object."""
    from hierattn.app.loading import _Models

    paths = [str(checkpoint_dir / n) for n in ("tiny-han", "tiny-hcan", "tiny-sanet")]
    sizes = [load_classifier(p, device="cpu").memory_bytes for p in paths]
    monkeypatch.setenv("HIERATTN_MODEL_MEMORY_MB", str((sizes[1] + sizes[2] + 100) / 2**20))
    held = _Models()
    han = held.get(paths[0], 1.0)
    assert held.get(paths[0], 1.0) is han
    held.get(paths[1], 1.0)
    held.get(paths[2], 1.0)  # over the limit with all three: the least recently used goes
    assert [p for p, _ in held.items] == paths[1:] and held.held_bytes == sizes[1] + sizes[2]
    assert held.get(paths[0], 1.0) is not han  # loaded again when asked
    held.get(paths[0], 2.0)  # its files changed: the older version is let go, not kept beside it
    assert [k for k in held.items if k[0] == paths[0]] == [(paths[0], 2.0)]


@pytest.mark.slow
def test_a_finished_training_job_lets_its_data_set_go(tmp_path):
    """Three Train-page runs on large uploads left the server holding 1.6 GB: each finished job kept
    its whole data set. The training process gets its copy; the server keeps the name and count."""
    import gc
    import weakref

    from hierattn.data.dataset import Dataset
    from hierattn.training.jobs import MAX_LOSSES, make_job
    from hierattn.training.loop import TrainConfig, TrainEvent

    texts = [f"The film was {['great fun', 'a bore'][i % 2]}. Day {i}." for i in range(40)]
    data = Dataset("films", texts, [i % 2 for i in range(40)], ["pos", "neg"])
    job = make_job("run", tmp_path, "han", {"embed_dim": 8, "hidden": 4, "attention_dim": 8}, data,
                   TextConfig(4, 12), TrainConfig(epochs=1, batch_size=8, min_freq=1), device="cpu")
    gone = weakref.ref(data)
    del data
    job.run()
    gc.collect()
    assert job.status == "finished" and gone() is None
    assert job.snapshot()["dataset"] == "films" and job.snapshot()["documents"] == 40
    for step in range(3 * MAX_LOSSES):  # a long run's loss curve is thinned, not kept whole
        job._on_event(TrainEvent("batch", 1, step, 3 * MAX_LOSSES, loss=1.0, docs_per_s=1.0))
    assert len(job.losses) <= MAX_LOSSES and job.snapshot()["loss_stride"] >= 2


@pytest.mark.slow
def test_two_train_page_runs_at_once_share_the_cores(tmp_path, monkeypatch):
    """Two runs started from the Train page each trained at 4 documents/s when each took every
    core; with the census (hierattn.threads) each takes half of them."""
    import time

    from hierattn.app.run_policy import JobManager
    from hierattn.data.dataset import Dataset
    from hierattn.training.jobs import make_job
    from hierattn.training.loop import TrainConfig

    census = tmp_path / "census"
    monkeypatch.setenv("HIERATTN_RUNTIME", str(census))
    monkeypatch.setenv("HIERATTN_CORES", "4")
    monkeypatch.delenv("HIERATTN_THREADS", raising=False)
    texts = [f"The film was {'good' if i % 2 else 'bad'}. Day {i}." for i in range(40)]
    manager = JobManager(max_running=2)
    jobs = [manager.start(make_job(name, tmp_path / "out", "han", {"embed_dim": 8, "hidden": 4, "attention_dim": 8},
                                   Dataset("toy", texts, [i % 2 for i in range(40)], ["pos", "neg"]),
                                   TextConfig(4, 12), TrainConfig(epochs=500, batch_size=8, min_freq=1, patience=500),
                                   device="cpu")) for name in ("one", "two")]
    try:
        deadline = time.time() + 120
        threads = []
        while time.time() < deadline:
            entries = [json.loads(p.read_text()) for p in census.glob("train-*.json")]
            threads = sorted(e.get("threads") or 0 for e in entries)
            if threads == [2, 2]:
                break
            time.sleep(0.2)
        assert threads == [2, 2]
    finally:
        for job in jobs:
            job.cancel()
        while any(job.active for job in jobs):
            time.sleep(0.1)
