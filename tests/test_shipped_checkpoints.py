"""The checkpoints in checkpoints/ load, are small, score what their metrics.json says, and
predict exactly what they predicted before any later change to the models."""
import json
import sys

import pytest

from hierattn.checkpoint import list_checkpoints, load_classifier
from hierattn.data import load_builtin, sample_documents
from hierattn.evaluation import evaluate_split
from hierattn.explain import explain

from .conftest import REPO

SHIPPED = list_checkpoints(REPO / "checkpoints")
REQUIRED = {"bbc-news-han", "bbc-news-hcan", "tweets-han", "tweets-hcan",
            "bbc-news-sanet", "tweets-sanet", "tweets-halstm", "tweets-mahnn", "tweets-kimcnn"}
# Issue 2 asked for 97% on bbc-news. A floor is checked on validation, where the recipe was
# chosen; the test split is reported, never selected on.
VALIDATION_FLOORS = {"bbc-news-han": 0.97, "bbc-news-hcan": 0.97}
# Probabilities and mean attention metrics of every shipped checkpoint on a few test-split
# documents, recorded with the code of commit 63caf38 (before HCAN's positional tables and MahNN's
# eq. 14 rescaling were fixed): checkpoints written then must still predict exactly this.
RECORDED = REPO / "tests" / "recorded" / "shipped_outputs.json"


def test_the_required_checkpoints_are_shipped():
    assert REQUIRED <= {p.name for p in SHIPPED}


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_checkpoint_matches_its_recorded_accuracies(path):
    assert sum(f.stat().st_size for f in path.iterdir()) < 8 * 2**20
    metrics = json.loads((path / "metrics.json").read_text())
    classifier, dataset = load_classifier(path, device="cpu"), load_builtin(metrics["dataset"])
    validation, test = (evaluate_split(classifier, dataset, split).accuracy for split in ("validation", "test"))
    assert test == pytest.approx(metrics["test_accuracy"], abs=0.005)  # weights are stored in fp16
    assert validation == pytest.approx(metrics["validation_accuracy"], abs=0.005)
    assert validation >= VALIDATION_FLOORS.get(path.name, 0.0)


def outputs(path) -> list[dict]:
    """What the recorded file holds for one checkpoint: per sample document, the class
    probabilities and the mean of each attention metric over its self-attention matrices."""
    classifier = load_classifier(path, device="cpu")
    rows = []
    for _, text in sample_documents(classifier.dataset, per_class=1):
        ex = explain(classifier, text)
        means = {m: sum(r[m] for r in ex.metrics) / len(ex.metrics) for m in ("gini", "diagonality_b3")} if ex.metrics else {}
        rows.append({"probabilities": ex.probabilities, **means})
    return rows


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_checkpoint_predicts_what_it_predicted_before(path):
    recorded = json.loads(RECORDED.read_text())[path.name]
    now = outputs(path)
    assert len(now) == len(recorded)
    for before, after in zip(recorded, now):
        assert after["probabilities"] == pytest.approx(before["probabilities"], abs=1e-6)
        for metric in ("gini", "diagonality_b3"):
            assert after.get(metric) == pytest.approx(before.get(metric), abs=1e-6)


if __name__ == "__main__" and sys.argv[1:] == ["--record"]:  # python -m tests.test_shipped_checkpoints --record
    RECORDED.parent.mkdir(exist_ok=True)
    RECORDED.write_text(json.dumps({p.name: outputs(p) for p in SHIPPED}, indent=1) + "\n")
