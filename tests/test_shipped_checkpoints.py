"""The checkpoints in checkpoints/ load, are small, and score what their metrics.json says."""
import json

import pytest

from hierattn.checkpoint import list_checkpoints
from hierattn.data import load_builtin
from hierattn.evaluation import evaluate_checkpoints

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
    metrics = json.loads((path / "metrics.json").read_text())
    (row,) = evaluate_checkpoints(load_builtin(metrics["dataset"]), [path], device="cpu")
    accuracy = row.test_accuracy
    assert accuracy == pytest.approx(metrics["test_accuracy"], abs=0.005)  # weights are stored in fp16
    assert accuracy >= TARGETS.get(path.name, 0.0)
