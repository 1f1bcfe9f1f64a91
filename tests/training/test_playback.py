"""The playback of attention forming as a run trains (hierattn/training/playback.py): each recorded
map is the model's own at that epoch, recording does not change the run, and the documents span
the classes."""
import copy

import pytest
import torch

from hierattn.checkpoint.classifier import Classifier
from hierattn.data.dataset import Dataset
from hierattn.data.split import prepare
from hierattn.data.text import TextConfig
from hierattn.training import playback
from hierattn.training.in_memory import train
from hierattn.training.loop import TrainConfig

WORDS = {0: "great lovely superb", 1: "awful boring dreadful", 2: "plain average ordinary"}


def _toy() -> Dataset:
    texts, labels = [], []
    for i in range(90):
        y = i % 3
        texts.append(f"The film was {WORDS[y].split()[i % 3]} and the cast too. I saw it on day {i}.")
        labels.append(y)
    return Dataset("toy", texts, labels, ["pos", "neg", "meh"])


def _flat(rows):
    return [v for row in rows for v in row]


def test_the_watched_documents_span_the_classes_in_turn():
    texts = ["short"] + [f"a document of enough words to show number {i}" for i in range(12)]
    labels = [0] + [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]  # class order, as a split is
    chosen = playback.watched_documents(texts, labels, 4)
    assert [labels[i] for i in chosen] == [0, 1, 2, 0]
    assert 0 not in chosen  # under MIN_WORDS
    texts[1] = "see http://t.co/abc a document of enough words to show it"  # a web address: offered last
    assert playback.watched_documents(texts, labels, 4)[0] == 2


@pytest.mark.slow  # trains twice
@pytest.mark.parametrize("model_type, config", [("hcan", {"d": 16, "heads": 2}),
                                                ("han", {"embed_dim": 8, "hidden": 4})])
def test_each_recorded_map_is_the_models_own_at_that_epoch(tmp_path, model_type, config):
    """Every epoch's weights are kept as the run trains; each is loaded into a fresh model and the
    document explained as the app explains a paste: its maps and probabilities equal the record's.
    The same run without recording ends with the same weights (the random state is put back)."""
    from hierattn.analysis.explain import explain
    from hierattn.models import build_model, model_config_dict

    text = TextConfig(4, 12)
    data = prepare(_toy(), text)
    recipe = TrainConfig(epochs=3, batch_size=8, lr=5e-3, min_freq=1, patience=3)
    states = []
    metrics = train(model_type, config, data, text, recipe, tmp_path / "watched", device="cpu", watch=3,
                    at_start=lambda m: states.append(copy.deepcopy(m.state_dict())),
                    after_epoch=lambda m, batches, device: states.append(copy.deepcopy(m.state_dict())) or {})
    record = playback.read(tmp_path / "watched")
    assert record is not None and [e["epoch"] for e in record["epochs"]] == [0, 1, 2, 3]
    assert record["best_epoch"] == metrics["best_epoch"] and len(record["documents"]) == 3
    assert {d["truth"] for d in record["documents"]} == {"pos", "neg", "meh"}
    assert all(e["val_accuracy"] is not None for e in record["epochs"][1:])

    from hierattn.checkpoint.reading import load_classifier

    loaded = load_classifier(tmp_path / "watched", device="cpu")
    for epoch, state in zip(record["epochs"], states):
        model = build_model(model_type, model_config_dict(loaded.model))
        model.load_state_dict(state)
        model.eval()
        at_epoch = Classifier("x", model, model_type, loaded.vocab, loaded.labels, text, {}, "toy",
                              torch.device("cpu"))
        for document, shot in zip(record["documents"], epoch["documents"]):
            ex = explain(at_epoch, document["text"])
            assert shot["probabilities"] == pytest.approx(ex.probabilities, abs=1e-5)
            assert _flat(shot["words"]) == pytest.approx(_flat(ex.target_attention("word")), abs=1e-5)
            assert shot["sentences"] == pytest.approx(ex.target_attention("sentence"), abs=1e-5)
            if "self_attention" in shot:
                name = shot["self_attention"]["name"]
                assert _flat(shot["self_attention"]["matrix"]) == pytest.approx(
                    _flat(ex.self_attention(name, 0).tolist()), abs=1e-5)
    # the kept checkpoint is the best epoch's: its explanation is that epoch's record (fp16 weights)
    best = record["epochs"][record["best_epoch"]]["documents"][0]
    assert best["probabilities"] == pytest.approx(explain(loaded, record["documents"][0]["text"]).probabilities,
                                                  abs=2e-3)

    unwatched = []
    train(model_type, config, data, text, recipe, tmp_path / "unwatched", device="cpu",
          after_epoch=lambda m, batches, device: unwatched.append(copy.deepcopy(m.state_dict())) or {})
    for a, b in zip(states[1:], unwatched):
        assert all(torch.equal(a[k], b[k]) for k in a)  # recording changed nothing in training
    assert not (tmp_path / "unwatched" / "playback.json").exists()
