"""The tour's checks (issue 8): computed from the document, and judged from the numbers."""
import pytest

from hierattn import tour
from hierattn.checkpoint import load_classifier
from hierattn.explain import explain

TEXT = "The striker scored twice today. The team won the cup final on Sunday! Fans cheered and sang."


def test_concentration_of_word_importance(checkpoint_dir):
    ex = explain(load_classifier(checkpoint_dir / "tiny-han", device="cpu"), TEXT)
    c = tour.concentration(ex)
    assert c.words == ex.document.num_tokens and 0 < c.gini < 1
    assert c.top_share >= 0.1 - 1e-9  # the top 10% hold at least their even share


def test_branch_contrast_counts_words_whose_top_differs(checkpoint_dir):
    ex = explain(load_classifier(checkpoint_dir / "tiny-hcan", device="cpu"), TEXT)
    c = tour.branch_contrast(ex)
    manual_differ = manual_total = 0
    for s, sentence in enumerate(ex.document.sentences):
        a = ex.self_attention("word.self.a", s, None).clone().fill_diagonal_(-1).argmax(-1)
        b = ex.self_attention("word.self.b", s, None).clone().fill_diagonal_(-1).argmax(-1)
        manual_differ += int((a != b).sum())
        manual_total += len(sentence.tokens)
    assert c.words == manual_total and c.different_top == pytest.approx(manual_differ / manual_total)
    assert tour.branch_contrast(explain(load_classifier(checkpoint_dir / "tiny-han", device="cpu"), TEXT)) is None


def test_matrix_shape_and_the_sanet_verdict(checkpoint_dir):
    ex = explain(load_classifier(checkpoint_dir / "tiny-sanet", device="cpu"), TEXT)
    shape = tour.matrix_shape(ex, ex.self_attention_names[0])
    m = ex.self_attention(ex.self_attention_names[0], None, None).double()
    k = -(-m.shape[0] // 10)
    assert shape.columnar == pytest.approx(m.sum(0).topk(k).values.sum().item() / m.sum().item())
    assert shape.even_columnar == pytest.approx(k / m.shape[0])
    assert shape.even_diagonality_b3 == pytest.approx(
        sum(min(i + 3, m.shape[0] - 1) - max(i - 3, 0) + 1 for i in range(m.shape[0])) / m.shape[0] ** 2)
    sentiment = tour.MatrixShape(10, 0.6, 0.2, 0.5, 0.5, 0.1)  # 1.2x even on the diagonal, 2x in columns
    topic = tour.MatrixShape(300, 0.1, 0.5, 0.9, 0.2, 0.1)  # 0.5x, 5x
    assert [v.endswith("shown here.") for v in tour.sanet_verdict(sentiment, topic)] == [True, True]
    assert [v.endswith("shown here.") for v in tour.sanet_verdict(topic, sentiment)] == [False, False]


def test_han_hcan_verdict_follows_the_numbers():
    focused, spread = tour.Concentration(20, 0.5, 0.6, []), tour.Concentration(20, 0.2, 0.2, [])
    assert tour.han_hcan_verdict(focused, spread).endswith("as in the paper.")
    assert "unlike the paper" in tour.han_hcan_verdict(spread, focused)
