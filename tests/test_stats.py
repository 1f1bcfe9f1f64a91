"""Dataset-level attention statistics: the vectorised metrics against the per-matrix reference,
the Table 2 aggregation against a hand-computed case, and the paper's quoted means."""
import pandas as pd
import pytest
import torch

from hierattn.checkpoint import load_classifier
from hierattn.explain import explain
from hierattn.metrics import batched_matrix_metrics, matrix_metrics
from hierattn.stats import METRICS, paper_means, split_statistics, table2, topic_versus_sentiment

from .conftest import CORPUS, LABELS


@pytest.mark.parametrize("prefix", [True, False])
def test_batched_metrics_equal_the_per_matrix_reference(prefix):
    torch.manual_seed(0)
    k, length = 40, 9
    weights = torch.softmax(torch.randn(k, length, length) * 3, -1)
    real = torch.zeros(k, length, dtype=torch.bool)
    for i in range(k):
        n = 1 + i % length
        if prefix:
            real[i, :n] = True
        else:
            real[i, torch.randperm(length)[:n]] = True
    gini, diagonality = batched_matrix_metrics(weights, real, cells_per_chunk=300)  # several chunks
    for i in range(k):
        idx = real[i].nonzero().squeeze(1)
        ref = matrix_metrics(weights[i][idx][:, idx])
        assert gini[i].item() == pytest.approx(ref["gini"], abs=1e-9)
        assert diagonality[i].tolist() == pytest.approx([ref[f"diagonality_b{b}"] for b in range(1, 6)], abs=1e-9)


def test_batched_metrics_of_known_matrices():
    eye = torch.eye(4)
    uniform = torch.full((4, 4), 0.25)
    gini, diagonality = batched_matrix_metrics(torch.stack([eye, uniform]), torch.ones(2, 4, dtype=torch.bool))
    assert gini.tolist() == pytest.approx([0.75, 0.0])  # one-hot rows: 1 - 1/n; uniform: 0
    # uniform 4x4: the band |i-j| <= 1 holds 4 + 3 + 3 = 10 of 16 cells
    assert diagonality[1].tolist() == pytest.approx([10 / 16, 14 / 16, 1.0, 1.0, 1.0])
    assert diagonality[0].tolist() == pytest.approx([1.0] * 5)
    # rows spread evenly over k of n keys: Gini 1 - k/n, so at equal focus longer matrices score higher
    spread = torch.zeros(10, 10)
    spread[:, :2] = 0.5
    assert batched_matrix_metrics(spread[None], torch.ones(1, 10, dtype=torch.bool))[0].item() == pytest.approx(0.8)


def _rows(records):
    frame = pd.DataFrame(records, columns=["label", "head", "level", "gini", "diagonality_b1"])
    for m in METRICS[2:]:
        frame[m] = frame["diagonality_b1"]
    return frame


def test_table2_means_over_matrices_by_hand():
    rows = _rows([("sport", 0, "word", 0.5, 0.1), ("sport", 1, "word", 0.7, 0.3),
                  ("tech", 0, "sentence", 0.9, 0.2)])
    overall = table2(rows)
    assert overall.loc["Gini coefficient", "all"] == pytest.approx(70.0)  # (50 + 70 + 90) / 3
    assert overall.loc["Diagonality (bandwidth = 1)", "all"] == pytest.approx(20.0)
    assert overall.loc["matrices", "all"] == 3
    by_class = table2(rows, "label")
    assert by_class.loc["Gini coefficient"].to_dict() == pytest.approx({"sport": 60.0, "tech": 90.0})
    assert by_class.loc["matrices"].to_dict() == {"sport": 2, "tech": 1}
    by_head = table2(rows, "head")
    assert list(by_head.columns) == ["head 1", "head 2"]
    assert by_head.loc["Gini coefficient", "head 1"] == pytest.approx(70.0)  # (50 + 90) / 2
    rows["map"] = ["word.self.a", "word.self.a", "word.self.b"]
    by_map_head = table2(rows, "map_head")
    assert by_map_head.loc["Gini coefficient"].to_dict() == pytest.approx(
        {"word.self.a · head 1": 50.0, "word.self.a · head 2": 70.0, "word.self.b · head 1": 90.0})


def test_paper_means_are_those_the_sanet_paper_quotes():
    means = paper_means()  # its §5.3: 63.57% and 16.12% (topic), 87.15% and 63.48% (sentiment, no Yelp P.)
    assert round(means["topic"]["gini"], 2) == 63.57 and round(means["topic"]["diagonality_b3"], 2) == 16.12
    assert round(means["sentiment"]["gini"], 2) == 87.15 and round(means["sentiment"]["diagonality_b3"], 2) == 63.48


def test_topic_versus_sentiment_reports_either_outcome():
    topic = _rows([("a", 0, "word", 0.6, 0.2), ("a", 0, "sentence", 0.1, 0.9)])
    sentiment = _rows([("b", 0, "word", 0.8, 0.1)])
    table, verdict = topic_versus_sentiment(topic, sentiment)
    assert table.loc["Gini coefficient", "topic (measured)"] == pytest.approx(60.0)  # word level only
    assert table.loc["Gini coefficient", "sentiment (SANet paper)"] == pytest.approx(87.1467, abs=1e-3)
    assert verdict == {"sentiment sparser (Gini)": True, "sentiment more diagonal (b = 3)": False}


@pytest.mark.parametrize("name", ["tiny-hcan", "tiny-sanet", "tiny-halstm"])
def test_split_statistics_match_explain_per_document(checkpoint_dir, name):
    classifier = load_classifier(checkpoint_dir / name)
    texts = CORPUS * 3
    seen = []
    rows = split_statistics(classifier, texts, [LABELS[i % 4] for i in range(len(texts))], batch_size=5,
                            progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (len(texts), len(texts)) and len(seen) == 3
    assert set(rows["document"]) == set(range(len(texts)))
    for document in (0, 5, 11):
        ex = explain(classifier, texts[document])
        def group(r):  # the sentence (or HA-LSTM time step); -1 for a document-wide matrix
            g = r.get("time") if r.get("time") is not None else r["sentence"]
            return -1 if g is None else g

        expected = sorted((r["map"], group(r), r["head"], round(r["gini"], 5)) for r in ex.metrics if r["size"] >= 2)
        mine = rows[rows["document"] == document]
        got = sorted((m, g, h, round(float(x), 5)) for m, g, h, x in zip(mine["map"], mine["group"], mine["head"], mine["gini"]))
        assert got == expected
    assert set(rows["label"]) <= set(LABELS) and (rows["size"] >= 2).all()


def test_split_statistics_of_a_model_without_self_attention(checkpoint_dir):
    rows = split_statistics(load_classifier(checkpoint_dir / "tiny-han"), CORPUS)
    assert rows.empty and "gini" in rows.columns
