"""The checkpoints in checkpoints/ load, are small, and score what their metrics.json says."""
import pytest
import torch

from hierattn.checkpoint import list_checkpoints, load_classifier
from hierattn.data import bucketed_batches, load_builtin, stratified_split
from hierattn.text import tokenize_many
from hierattn.training import evaluate

from .conftest import REPO

SHIPPED = list_checkpoints(REPO / "checkpoints")
REQUIRED = {"bbc-news-han", "bbc-news-hcan", "tweets-han", "tweets-hcan",
            "bbc-news-sanet", "tweets-sanet", "tweets-halstm", "tweets-mahnn", "tweets-kimcnn"}
# Issue 2 asks >= 97% test accuracy on bbc-news for both models.
TARGETS = {"bbc-news-han": 0.97, "bbc-news-hcan": 0.97}


def test_the_required_checkpoints_are_shipped():
    assert REQUIRED <= {p.name for p in SHIPPED}


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_checkpoint_matches_its_recorded_test_accuracy(path):
    assert sum(f.stat().st_size for f in path.iterdir()) < 8 * 2**20
    c = load_classifier(path, device="cpu")
    recorded = c.metrics["test_accuracy"]
    ds = load_builtin(c.dataset)
    test = stratified_split(ds.labels)["test"]
    docs, labels = tokenize_many([ds.texts[i] for i in test], c.text_config), [ds.labels[i] for i in test]
    with torch.inference_mode():
        accuracy, _, _ = evaluate(c.model, bucketed_batches(docs, labels, c.vocab, 64, shuffle=False), c.device)
    assert accuracy == pytest.approx(recorded, abs=0.005)  # weights are stored in fp16
    assert accuracy >= TARGETS.get(path.name, 0.0)
