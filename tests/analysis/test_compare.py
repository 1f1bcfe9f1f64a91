"""Two models on one document: importance, alignment on character spans, agreement figures."""
import pytest
import torch

from hierattn.analysis.compare import (
    Importance,
    agreement,
    importance,
    map_label,
    sentence_self_attention,
    top_k_overlap,
    word_self_attention,
)
from hierattn.analysis.explain import explain
from hierattn.checkpoint.reading import load_classifier
from hierattn.data.text import TextConfig

DOC = "The market rallied today. Shares in the bank rose sharply! Investors cheered the results."


@pytest.fixture(scope="module")
def explained(checkpoint_dir):
    return {name: explain(load_classifier(checkpoint_dir / name), DOC)
            for name in ("tiny-han", "tiny-hcan", "tiny-sanet", "tiny-hcan-flat-max", "tiny-halstm", "tiny-kimcnn",
                         "tiny-tfidf", "tiny-onlstm")}


def test_hierarchical_importance_is_word_times_sentence_weight(explained):
    ex = explained["tiny-han"]
    imp = importance(ex)
    words, sentences = ex.target_attention("word"), ex.target_attention("sentence")
    for s, sentence in enumerate(ex.document.sentences):
        for w, token in enumerate(sentence.tokens):
            assert imp.words[(token.start, token.end)] == pytest.approx(words[s][w] * sentences[s], rel=1e-5)
        assert imp.sentences[sentence.start] == pytest.approx(sentences[s], rel=1e-5)
    assert sum(imp.words.values()) == pytest.approx(1.0)
    assert imp.source == "word attention × sentence attention"


@pytest.mark.parametrize("name", ["tiny-hcan", "tiny-sanet", "tiny-hcan-flat-max", "tiny-halstm", "tiny-kimcnn"])
def test_every_attention_model_gets_a_distribution_over_its_words(explained, name):
    imp = importance(explained[name])
    assert len(imp.words) == explained[name].document.num_tokens
    assert sum(imp.words.values()) == pytest.approx(1.0) and min(imp.words.values()) >= 0
    assert sum(imp.sentences.values()) == pytest.approx(1.0)
    if name in ("tiny-sanet", "tiny-hcan-flat-max", "tiny-halstm"):
        assert imp.source.startswith("self-attention received")


@pytest.mark.parametrize("name", ["tiny-tfidf", "tiny-onlstm"])
def test_a_model_without_attention_has_no_importance(explained, name):
    # ON-LSTM's master forget gate is a gate over its units, not a weight on the words: Compare
    # does not read it as where the model looks
    assert importance(explained[name]) is None


def _imp(values: list[float]) -> Importance:
    return Importance({(i, i + 1): v for i, v in enumerate(values)}, {0: 1.0}, "test")


def test_agreement_by_hand():
    a = _imp([10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0.5, 0.4])
    assert agreement(a, a).word_spearman == pytest.approx(1.0)
    reverse = _imp(list(reversed([10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0.5, 0.4])))
    assert agreement(a, reverse).word_spearman == pytest.approx(-1.0)
    # B's top 5 are positions 0, 1, 2, 10, 11: three of A's top 5 (0..4)
    b = _imp([10, 9, 8, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 7, 6])
    assert top_k_overlap(a.words, b.words, 5) == pytest.approx(3 / 5)
    assert top_k_overlap(a.words, b.words, 10) == pytest.approx(8 / 10)
    assert top_k_overlap(_imp([1, 2]).words, _imp([2, 1]).words, 5) is None  # fewer than k words
    agree = agreement(a, b)
    assert sum(agree.difference.values()) == pytest.approx(0.0, abs=1e-12)  # both renormalised to 1
    assert agree.difference[(0, 1)] == pytest.approx(10 / sum(a.words.values()) - 10 / sum(b.words.values()))


def test_models_reading_different_parts_are_aligned_on_shared_words(checkpoint_dir):
    classifier = load_classifier(checkpoint_dir / "tiny-han")
    full = explain(classifier, DOC, TextConfig(max_sentences=6, max_words=12))
    capped = explain(classifier, DOC, TextConfig(max_sentences=2, max_words=3))
    agree = agreement(importance(full), importance(capped))
    assert agree.words == capped.document.num_tokens == 6 and agree.sentences == 2
    assert set(agree.difference) == {(t.start, t.end) for s in capped.document.sentences for t in s.tokens}


def test_sentence_self_attention_per_sentence_and_from_a_flat_matrix(explained):
    hcan, sanet = explained["tiny-hcan"], explained["tiny-sanet"]
    second = hcan.document.sentences[1]
    matrix, spans = sentence_self_attention(hcan, "word.self.a", second.start, 0)
    torch.testing.assert_close(matrix, hcan.self_attention("word.self.a", 1, 0))
    assert spans == [(t.start, t.end) for t in second.tokens]
    matrix, spans = sentence_self_attention(sanet, "word.self.block1", second.start, None)
    first = len(sanet.document.sentences[0].tokens)
    n = len(second.tokens)
    torch.testing.assert_close(matrix, sanet.self_attention("word.self.block1")[first:first + n, first:first + n])
    keep = set(spans[:2])
    matrix, spans = sentence_self_attention(sanet, "word.self.block1", second.start, None, keep)
    assert matrix.shape == (2, 2) and set(spans) == keep
    assert sentence_self_attention(sanet, "word.self.block1", 10_000, None) is None


def test_word_self_attention_per_branch_and_head(explained):
    hcan, sanet = explained["tiny-hcan"], explained["tiny-sanet"]
    sentence = hcan.document.sentences[1]
    word = (sentence.tokens[2].start, sentence.tokens[2].end)
    rows = word_self_attention(hcan, sentence.start, word)
    assert [(r["map"], r["head"]) for r in rows] == [("word.self.a", 0), ("word.self.a", 1), ("word.self.b", 0),
                                                   ("word.self.b", 1)]
    for r in rows:
        assert r["weights"] == pytest.approx(hcan.self_attention(r["map"], 1, r["head"])[2].tolist())
        assert sum(r["weights"]) == pytest.approx(1.0) and r["elsewhere"] == 0.0
    (flat,) = word_self_attention(sanet, sentence.start, word)
    assert sum(flat["weights"]) + flat["elsewhere"] == pytest.approx(1.0, abs=1e-5)
    assert word_self_attention(explained["tiny-han"], sentence.start, word) == []
    assert map_label("word.self.a") == "branch a" and map_label("word.self.block2") == "block 2"
