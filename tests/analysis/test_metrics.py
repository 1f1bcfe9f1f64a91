import pytest
import torch

from hierattn.analysis.metrics import attention_metrics, diagonality, even_spread, gini, matrix_metrics, real_matrices
from hierattn.contract import AttentionMap


def test_gini_identity_by_hand():
    # n=2: sorted [0, 0, 1, 1], coefficients (2i - 5) = -3, -1, 1, 3 -> (1 + 3) / (4 * 2)
    assert gini(torch.eye(2)) == pytest.approx(0.5)
    assert gini(torch.eye(4)) == pytest.approx(0.75)  # 1 - 1/n


def test_gini_uniform_is_zero():
    assert gini(torch.full((5, 5), 0.2)) == pytest.approx(0.0, abs=1e-12)


def test_gini_one_hot_rows_not_on_diagonal():
    m = torch.zeros(3, 3)
    m[:, 0] = 1  # every word attends to the first
    assert gini(m) == pytest.approx(2 / 3)
    assert gini(m, per_row=True) == pytest.approx(2 / 3)


def test_gini_per_row_option_differs_from_flattened():
    m = torch.tensor([[1.0, 0.0], [0.5, 0.5]])
    # rows: Gini([0,1]) = 0.5, Gini([.5,.5]) = 0 -> mean 0.25; flattened [0,.5,.5,1]: (-3*0-.5+.5+3)/(4*2)
    assert gini(m, per_row=True) == pytest.approx(0.25)
    assert gini(m) == pytest.approx(3 / 8)


def test_gini_of_zeros_and_non_square():
    assert gini(torch.zeros(3, 3)) == 0.0
    with pytest.raises(ValueError):
        gini(torch.ones(2, 3))


def test_diagonality_identity_and_uniform():
    assert diagonality(torch.eye(6), 1) == pytest.approx(1.0)
    u = torch.full((4, 4), 0.25)
    # cells with |i-j| <= 1 in a 4x4: 4 + 3 + 3 = 10 of 16
    assert diagonality(u, 1) == pytest.approx(10 / 16)
    assert diagonality(u, 3) == pytest.approx(1.0)


def test_diagonality_band_matrix():
    n = 6
    i = torch.arange(n)
    band = ((i[:, None] - i[None, :]).abs() <= 2).float()
    band = band / band.sum(1, keepdim=True)
    assert diagonality(band, 2) == pytest.approx(1.0)
    assert diagonality(band, 1) < 1.0
    anti = torch.eye(n).flip(1)  # mass far from the diagonal except at the centre
    assert diagonality(anti, 0) == pytest.approx(0.0)
    assert diagonality(anti, 1) == pytest.approx(2 / 6)


def test_matrix_metrics_has_b1_to_b5():
    assert set(matrix_metrics(torch.eye(3))) == {"gini"} | {f"diagonality_b{b}" for b in range(1, 6)}


def test_attention_metrics_crop_to_real_tokens():
    # one document, 2 sentences of 3 and 2 real words, padded to 4; 1 head of uniform attention
    w = torch.zeros(1, 2, 1, 4, 4)
    w[0, 0, 0, :3, :3] = 1 / 3
    w[0, 1, 0, :2, :2] = 1 / 2
    real = torch.tensor([[[1, 1, 1, 0], [1, 1, 0, 0]]], dtype=torch.bool)
    mask = (real[:, :, None, :, None] & real[:, :, None, None, :])
    rows = attention_metrics(AttentionMap(w, ("batch", "sentence", "head", "query", "key"), "word", mask))
    assert [(r["sentence"], r["size"]) for r in rows] == [(0, 3), (1, 2)]
    assert all(r["gini"] == pytest.approx(0.0) for r in rows)  # uniform over real tokens: no padding zeros
    for r in rows:  # each row carries its own size's even spread: uniform attention is exactly that
        expected = even_spread(r["size"])
        assert {m: r[f"{m}_even"] for m in expected} == {m: float(v) for m, v in expected.items()}
        assert r["diagonality_b1"] == pytest.approx(r["diagonality_b1_even"])


def test_metrics_refuse_target_attention():
    a = AttentionMap(torch.ones(1, 3) / 3, ("batch", "key"), "sentence", torch.ones(1, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="self-attention"):
        attention_metrics(a)


def test_mean_self_attention_metrics_summarise_a_model():
    from hierattn.data.batches import encode_documents
    from hierattn.data.text import Vocab, tokenize
    from hierattn.models import build_model
    from hierattn.training.sharpness import mean_self_attention_metrics

    docs = [tokenize("The team won the cup. Fans cheered loudly!"), tokenize("Shares fell. Markets were calm.")]
    vocab = Vocab.build(docs, min_freq=1)
    torch.manual_seed(0)
    hcan = build_model("hcan", {"vocab_size": len(vocab), "num_classes": 2, "d": 16, "heads": 2}).train()
    stats = mean_self_attention_metrics(hcan, [encode_documents(docs, vocab)], torch.device("cpu"))
    assert set(stats) == {"attention_gini", "attention_diagonality_b3", "attention_diagonality_b3_even"}
    assert 0 < stats["attention_gini"] < 1 and 0 < stats["attention_diagonality_b3"] <= 1
    # the even spread over the same matrices (each map and head alike): sentences of 6, 4, 3 and 4 tokens at
    # the word level, documents of 2 sentences at the sentence level
    sizes = [6, 4, 3, 4, 2, 2]
    assert stats["attention_diagonality_b3_even"] == pytest.approx(float(even_spread(sizes)["diagonality_b3"].mean()))
    assert hcan.training  # left as it was found
    han = build_model("han", {"vocab_size": len(vocab), "num_classes": 2, "embed_dim": 8, "hidden": 4})
    assert mean_self_attention_metrics(han, [encode_documents(docs, vocab)], torch.device("cpu")) == {}


def test_real_matrices_can_pick_one_sentence():
    w = torch.zeros(1, 2, 1, 3, 3)
    w[0, 0, 0] = torch.eye(3)
    w[0, 1, 0, :2, :2] = torch.eye(2)
    mask = torch.zeros(1, 2, 1, 3, 3, dtype=torch.bool)
    mask[0, 0, 0] = True
    mask[0, 1, 0, :2, :2] = True
    a = AttentionMap(w, ("batch", "sentence", "head", "query", "key"), "word", mask)
    assert [(s, m.shape[0]) for s, _, m in real_matrices(a, group=1)] == [(1, 2)]
    assert [s for s, _, _ in real_matrices(a)] == [0, 1]
    assert list(real_matrices(a, group=None)) == [] and list(real_matrices(a, group=5)) == []


@pytest.mark.parametrize("prefix", [True, False])
def test_batched_metrics_equal_each_cropped_matrix(prefix):
    """Real positions as padding leaves them (a prefix: the band sums run along diagonals) and
    scattered (the general path): each matrix's figures equal ``matrix_metrics`` of its crop."""
    from hierattn.analysis.metrics import batched_matrix_metrics, matrix_metrics

    torch.manual_seed(0)
    sizes = [1, 2, 5, 9, 30]
    real = torch.zeros(len(sizes), 32, dtype=torch.bool)
    for i, n in enumerate(sizes):
        real[i, torch.arange(n) if prefix else torch.randperm(32)[:n]] = True
    weights = torch.softmax(torch.randn(len(sizes), 32, 32) * 3, -1) * (real[:, :, None] & real[:, None, :])
    values = batched_matrix_metrics(weights, real, cells_per_chunk=64)
    gini, diagonality = values["gini"], torch.stack([values[f"diagonality_b{b}"] for b in range(1, 6)], 1)
    for i in range(len(sizes)):
        idx = real[i].nonzero().squeeze(1)
        expected = matrix_metrics(weights[i][idx][:, idx])
        assert float(gini[i]) == pytest.approx(expected["gini"], abs=1e-6)
        assert diagonality[i].tolist() == pytest.approx([expected[f"diagonality_b{b}"] for b in range(1, 6)], abs=1e-6)


def test_batched_metrics_run_in_chunks_side_by_side_under_inference_mode(monkeypatch):
    """Chunks go to worker threads, which are outside the caller's inference mode: the results are
    written in the caller's thread (a worker writing into them was refused), and equal one chunk's."""
    from hierattn.analysis.metrics import batched_matrix_metrics

    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    torch.manual_seed(0)
    with torch.inference_mode():
        weights = torch.softmax(torch.randn(12, 40, 40) * 3, -1)
        real = torch.ones(12, 40, dtype=torch.bool)
        many = batched_matrix_metrics(weights, real, cells_per_chunk=40 * 40 * 2)  # six chunks, two threads
        one = batched_matrix_metrics(weights, real, cells_per_chunk=40 * 40 * 12)
    assert many.keys() == one.keys()
    for name in many:
        torch.testing.assert_close(many[name], one[name])


def test_a_metric_is_one_entry_in_the_registry(checkpoint_dir, monkeypatch):
    """A toy metric (each matrix's largest weight; an even spread's is 1/n) added to the registry
    alone reaches the split statistics and their tables, an explanation's metric rows and the view
    beside a heatmap, and the exports: nothing else names the metrics."""
    import numpy as np

    from hierattn.analysis import metrics
    from hierattn.analysis.explain import explain
    from hierattn.analysis.metric_tables import metrics_table, metrics_view
    from hierattn.analysis.stats import split_statistics, table2, table2_by_group
    from hierattn.checkpoint.reading import load_classifier
    from hierattn.viz import export

    peak = metrics.Metric("peak", "Largest weight", "peak", lambda m: float(m.max()),
                          lambda cells, sizes, mass: cells.flatten(1).max(1).values.double(),
                          lambda n: np.where(n > 0, 1 / np.maximum(n, 1), 0.0))
    monkeypatch.setattr(metrics, "METRICS", (*metrics.METRICS, peak))
    classifier = load_classifier(checkpoint_dir / "tiny-hcan", device="cpu")
    text = "The team won the cup final. Fans sang all night long."

    rows = split_statistics(classifier, [text], ["sport"])
    assert {"peak", "peak_even"} <= set(rows.columns)
    assert rows["peak_even"].tolist() == pytest.approx((1 / rows["size"]).tolist())
    assert "Largest weight" in table2(rows).index
    assert "peak excess" in table2_by_group(table2(rows, "map_head")).columns

    ex = explain(classifier, text)
    for row in ex.metrics:
        matrix = ex.self_attention(row["map"], row["sentence"], row["head"])
        assert row["peak"] == pytest.approx(float(matrix.max()), abs=1e-6)
        assert row["peak_even"] == pytest.approx(1 / row["size"])
    view = metrics_view(ex, "word", "sentence", 0, ex.heads("word.self.a"))
    assert list(view.columns)[-2:] == ["peak", "peak_even"]
    assert metrics.column_labels()["peak_even"] == "peak (even)"
    header = export.metrics_csv(metrics_table(ex)).decode().splitlines()[0].split(",")
    assert header[-2:] == ["peak", "peak_even"]
    assert list(export.report_table(metrics_table(ex)).columns)[-2:] == ["peak", "peak (even)"]


@pytest.mark.parametrize("checkpoint,level", [("tiny-hcan", "word"), ("tiny-hcan", "sentence"), ("tiny-sanet", "word"),
                                              ("tiny-halstm", "word")])
def test_the_table_beside_one_heatmap_is_the_documents_rows_for_it(checkpoint_dir, checkpoint, level):
    """The table beside one sentence's (or time step's) heatmap computes that entry's matrices
    alone; its figures are the ones every matrix of the document gives for it."""
    from hierattn.analysis.explain import explain
    from hierattn.analysis.metric_tables import metrics_table, metrics_view
    from hierattn.analysis.metrics import GROUP_AXES
    from hierattn.checkpoint.reading import load_classifier

    classifier = load_classifier(checkpoint_dir / checkpoint, device="cpu")
    text = "The team won the cup final on Sunday. Fans sang all night long. The coach smiled. Rain fell."
    names = [n for n in explain(classifier, text).self_attention_names]
    every = metrics_table(explain(classifier, text))  # every matrix, from a fresh explanation
    ex = explain(classifier, text)
    maps = [n for n in names if ex.describe(n).level == level]
    assert maps, f"{checkpoint} has no {level}-level self-attention"
    axis = next((a for a in GROUP_AXES if a in ex.describe(maps[0]).axes), None)
    heads = ex.heads(maps[0])
    entries = range(int(every[axis].max()) + 1) if axis else [None]
    for entry in entries:
        view = metrics_view(ex, level, axis, entry, heads)
        expected = every[every["map"].isin(maps)]
        if axis:
            expected = expected[expected[axis] == entry]
        assert len(view) == len(expected) > 0
        assert view["gini"].tolist() == pytest.approx(expected["gini"].tolist(), abs=1e-9)
        assert view["size"].tolist() == expected["size"].tolist()
        if axis:
            assert set(view[axis]) == {entry + 1}
