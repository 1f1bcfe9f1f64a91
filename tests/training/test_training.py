import threading

import pytest

from hierattn.checkpoint.reading import load_classifier
from hierattn.data.dataset import Dataset
from hierattn.data.split import prepare
from hierattn.data.text import TextConfig
from hierattn.training.in_memory import train
from hierattn.training.loop import TrainConfig

WORDS = {0: "great lovely superb", 1: "awful boring dreadful"}


def _toy() -> Dataset:
    texts, labels = [], []
    for i in range(60):
        y = i % 2
        texts.append(f"The film was {WORDS[y].split()[i % 3]}. I saw it on day {i}.")
        labels.append(y)
    return Dataset("toy", texts, labels, ["pos", "neg"])


@pytest.mark.slow  # trains
def test_training_learns_saves_and_reports(tmp_path):
    data = prepare(_toy(), TextConfig(4, 12))
    events = []
    metrics = train("hcan", {"d": 16, "heads": 2}, data, TextConfig(4, 12),
                    TrainConfig(epochs=6, batch_size=8, lr=5e-3, min_freq=1, patience=6), tmp_path / "toy",
                    on_event=events.append, device="cpu")
    assert metrics["validation_accuracy"] == 1.0 and metrics["test_accuracy"] == 1.0
    assert {"train_ms_per_document", "inference_ms_per_document", "total_training_seconds", "hardware"} <= set(metrics)
    assert metrics["split_sizes"] == {"train": 48, "validation": 6, "test": 6}
    assert [e.epoch for e in events if e.kind == "epoch"] == list(range(1, metrics["epochs_run"] + 1))
    assert events[-1].kind == "done"
    c = load_classifier(tmp_path / "toy", device="cpu")
    assert c.labels == ["pos", "neg"] and c.metrics["best_epoch"] == metrics["best_epoch"]


@pytest.mark.slow  # trains
def test_stop_before_an_epoch_finishes_writes_nothing(tmp_path):
    stop = threading.Event()
    stop.set()
    data = prepare(_toy(), TextConfig(4, 12))
    metrics = train("han", {"embed_dim": 8, "hidden": 4}, data, TextConfig(4, 12), TrainConfig(epochs=3, min_freq=1),
                    tmp_path / "none", stop=stop, device="cpu")
    assert metrics == {} and not (tmp_path / "none").exists()


@pytest.mark.slow  # trains
def test_cli_trains_from_a_users_csv(tmp_path, capsys):
    from hierattn.cli import main

    data = _toy()
    csv = tmp_path / "mine.csv"
    csv.write_text("text,label\n" + "".join(f'"{t}",{data.label_names[y]}\n' for t, y in zip(data.texts, data.labels)))
    out = tmp_path / "ck"
    assert main(["train", "--model", "han", "--file", str(csv), "--out", str(out), "--epochs", "2",
                 "--max-sentences", "3", "--max-words", "7", "--set", "hidden=8", "--device", "cpu"]) == 0
    c = load_classifier(out, device="cpu")
    assert c.text_config == TextConfig(max_sentences=3, max_words=7) and c.model.config.hidden == 8
    assert c.labels == ["neg", "pos"] and c.dataset == "mine"
    assert main(["train", "--preset", "nope"]) == 2
    assert "unknown preset" in capsys.readouterr().err


def test_cosine_schedule_anneals_to_zero_over_all_epochs():
    import pytest
    import torch

    from hierattn.training.loop import schedule

    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.Adam([param], lr=1e-3)
    assert schedule(opt, TrainConfig(lr_schedule="constant"), 10) is None
    sched = schedule(opt, TrainConfig(epochs=3, lr_schedule="cosine"), steps_per_epoch=10)
    lrs = []
    for _ in range(30):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    assert lrs[14] == pytest.approx(5e-4, rel=0.05) and lrs[-1] == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(ValueError, match="lr_schedule"):
        schedule(opt, TrainConfig(lr_schedule="step"), 10)


def test_word_dropout_replaces_only_real_words_with_unk():
    import torch

    from hierattn.data.batches import encode_documents
    from hierattn.data.text import Vocab, tokenize
    from hierattn.training.loop import word_dropout

    docs = [tokenize("alpha beta gamma delta. epsilon"), tokenize("zeta")]
    vocab = Vocab.build(docs, min_freq=1)
    batch = encode_documents(docs, vocab)
    torch.manual_seed(0)
    dropped = word_dropout(batch, 0.5)
    changed = dropped.word_ids != batch.word_ids
    assert changed.any() and (dropped.word_ids[changed] == Vocab.unk_id).all()
    assert (dropped.word_ids[~batch.word_mask] == 0).all()  # padding stays padding
    assert torch.equal(word_dropout(batch, 0.0).word_ids, batch.word_ids)


@pytest.mark.slow  # trains
def test_bf16_training_runs_and_is_recorded():
    data = prepare(_toy(), TextConfig(4, 12))
    metrics = train("hcan", {"d": 16, "heads": 2}, data, TextConfig(4, 12),
                    TrainConfig(epochs=2, batch_size=8, lr=5e-3, min_freq=1, precision="bf16"), None, device="cpu")
    assert metrics["train_config"]["precision"] == "bf16" and metrics["validation_accuracy"] > 0.5
    with pytest.raises(ValueError, match="precision"):
        train("hcan", {"d": 16, "heads": 2}, data, TextConfig(4, 12),
              TrainConfig(epochs=1, min_freq=1, precision="fp8"), None, device="cpu")
