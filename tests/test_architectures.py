"""Each architecture against a small reference computation of its paper's equations."""
import math

import numpy as np
import pytest
import torch

from hierattn.data import encode_documents
from hierattn.models import build_model, display_name
from hierattn.models.recurrent import CachedLSTMCell, SlidingAttentionLSTMCell, scan
from hierattn.models.sanet import sinusoidal_positions
from hierattn.models.tfidf import _terms, fit_tfidf
from hierattn.text import Vocab, tokenize

from .conftest import CORPUS


def test_sinusoidal_positions_follow_the_formula():
    pe = sinusoidal_positions(7, 6)
    for pos in range(7):
        for i in range(3):
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(pos / 10000 ** (2 * i / 6)), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(pos / 10000 ** (2 * i / 6)), abs=1e-6)


def test_sanet_attention_is_unscaled_softmax_of_x_wqk_xt():
    docs = [tokenize("one two three four")]
    vocab = Vocab.build(docs, min_freq=1)
    torch.manual_seed(0)
    model = build_model("sanet", {"vocab_size": len(vocab), "num_classes": 2, "embed_dim": 8, "d": 8}).eval()
    batch = encode_documents(docs, vocab)
    out = model(batch)
    x = model.project(model.embedding(batch.word_ids[0, 0]) + sinusoidal_positions(4, 8))
    att = model.blocks[0].mixer
    expected = torch.softmax(x @ att.q.weight.t() @ att.k.weight @ x.t(), -1)  # X W_Q W_K^T X^T, no 1/sqrt(d)
    torch.testing.assert_close(out.attentions["word.self.block1"].weights[0], expected, atol=1e-5, rtol=0)


def test_sanet_baseline_has_no_attention_parameters():
    base = build_model("sanet", {"vocab_size": 10, "num_classes": 2, "attention": False})
    assert not any(".q." in n or ".k." in n for n, _ in base.named_parameters())
    big = build_model("sanet", {"vocab_size": 10, "num_classes": 2, "embed_dim": 200, "d": 256, "blocks": 2})
    assert display_name("sanet", {"embed_dim": 200, "d": 256, "blocks": 2}) == "SANet big" and len(big.blocks) == 2


def test_ha_lstm_cell_matches_the_equations_step_by_step():
    torch.manual_seed(0)
    H, N, D = 3, 2, 4
    cell = SlidingAttentionLSTMCell(D, H, N)
    x = torch.randn(1, 3, D)
    out, weights = scan(cell, x, torch.ones(1, 3, dtype=torch.bool))
    window, c = torch.zeros(N, H), torch.zeros(H)  # the window starts as zeros
    Wf, Wi, Wo, Wc = cell.input.weight.chunk(4)
    bf, bi, bo, bc = cell.input.bias.chunk(4)
    Uf, Ui, Uo, Uc = cell.recurrent.weight.chunk(4)
    for t in range(3):
        Q, K, V = window @ cell.q.weight.t(), window @ cell.k.weight.t(), window @ cell.v.weight.t()  # eq. 9
        A = torch.softmax(Q @ K.t() / math.sqrt(H), -1)  # eq. 8, d_k = H
        a = (A @ V).flatten()  # eq. 12
        f = torch.sigmoid(Wf @ x[0, t] + Uf @ a + bf)
        i = torch.sigmoid(Wi @ x[0, t] + Ui @ a + bi)
        o = torch.sigmoid(Wo @ x[0, t] + Uo @ a + bo)
        c = f * c + i * torch.tanh(Wc @ x[0, t] + Uc @ a + bc)  # eq. 4-5
        h = o * torch.tanh(c)  # eq. 6
        torch.testing.assert_close(out[0, t], h, atol=1e-6, rtol=0)
        torch.testing.assert_close(weights[0, t], A, atol=1e-6, rtol=0)
        window = torch.cat([h[None], window[:-1]])  # eq. 7: newest state first
    assert torch.allclose(weights[0, 0], torch.full((N, N), 1 / N))  # all-zero window: uniform


def test_cached_lstm_groups_forget_at_their_own_rates():
    torch.manual_seed(0)
    cell = CachedLSTMCell(4, 8, groups=4)
    # c = (1 - r) * c_prev + r * tanh(.), with r in (k/K, (k+1)/K) for group k, even for extreme inputs
    xg = cell.project(torch.randn(1000, 4)) * 20
    _, r, _ = (xg + cell.recurrent(torch.zeros(1000, 8))).chunk(3, -1)
    rate = (torch.sigmoid(r) + cell.group) / cell.groups
    for k in range(4):
        group_rates = rate[:, 2 * k: 2 * k + 2]
        assert group_rates.min() >= k / 4 and group_rates.max() <= (k + 1) / 4


def test_mahnn_test_time_uses_the_mask_expectation():
    docs = [tokenize(t) for t in CORPUS]
    vocab = Vocab.build(docs, min_freq=1)
    torch.manual_seed(0)
    model = build_model("mahnn", {"vocab_size": len(vocab), "num_classes": 2, "embed_dim": 8, "hidden": 4,
                                  "attention_dim": 4, "maps": 3, "channels": 3, "dropout": 0.0})
    batch = encode_documents(docs, vocab)
    assert model.keep.tolist() == pytest.approx([0.9, 0.7, 0.5])
    model.eval()
    a = model(batch).attentions["word.syntactic"].weights
    torch.testing.assert_close(model(batch).attentions["word.syntactic"].weights, a)  # deterministic
    model.train()
    torch.manual_seed(1)
    sampled = model(batch).attentions["word.syntactic"].weights
    assert not torch.allclose(sampled, a)  # training samples Bernoulli masks
    # eval: softmax over words of p_l * column sums of tanh(h_i W_l h_j + b_l), real words only
    model.eval()
    with torch.no_grad():
        from hierattn.models.common import flatten_words, run_rnn

        ids, mask = flatten_words(batch)
        h = run_rnn(model.rnn, model.embedding(ids), mask)[0, : int(mask[0].sum())]
        M = torch.tanh(h @ model.association[1] @ h.t() + model.association_bias[1])
        expected = torch.softmax(0.7 * M.sum(0), -1)
    torch.testing.assert_close(a[0, 1, : len(expected)], expected, atol=1e-5, rtol=0)


def test_mahnn_rv_has_no_semantic_attention():
    model = build_model("mahnn", {"vocab_size": 10, "num_classes": 2, "semantic": False})
    out = model(encode_documents([tokenize("a b c")], Vocab.build([tokenize("a b c")], min_freq=1)))
    assert set(out.attentions) == {"word.syntactic"}
    assert display_name("mahnn", {"semantic": False}) == "MahNN-rv"


def test_kim_cnn_maxpool_map_covers_the_winning_windows():
    docs = [tokenize("alpha beta gamma delta epsilon zeta eta theta")]
    vocab = Vocab.build(docs, min_freq=1)
    torch.manual_seed(0)
    model = build_model("kimcnn", {"vocab_size": len(vocab), "num_classes": 2, "embed_dim": 8, "maps": 5,
                                   "filter_sizes": [3]}).eval()
    share = model(encode_documents(docs, vocab)).attentions["word.maxpool"].weights[0]
    assert share.sum().item() == pytest.approx(1.0)
    # each of the 5 filters covers 3 words: every share is a multiple of 1/15
    assert torch.allclose(share * 15, (share * 15).round(), atol=1e-4)


@pytest.mark.parametrize("classifier", ["logreg", "nb"])
def test_tfidf_module_reproduces_scikit_learn(classifier):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import MultinomialNB

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(12)]
    texts = [". ".join(" ".join(rng.choice(words, 6)) for _ in range(2)) + "." for _ in range(60)]
    labels = [int("w1" in t) + int("w2 w3" in t) for t in texts]
    docs = [tokenize(t) for t in texts]
    module, vocab = fit_tfidf(docs, labels, 3, classifier, seed=0, min_df=2)
    vectorizer = TfidfVectorizer(analyzer=_terms, min_df=2)
    X = vectorizer.fit_transform(docs)
    reference = (LogisticRegression(l1_ratio=1.0, C=1.0, solver="saga", max_iter=2000, random_state=0)
                 if classifier == "logreg" else MultinomialNB(alpha=0.1)).fit(X, labels)
    assert module.config.num_bigrams > 0
    test_docs = [tokenize(t) for t in texts[:20]] + [tokenize("w2 w3 unseen w1")]
    batch = encode_documents(test_docs, vocab)
    features = module.features(batch)
    np.testing.assert_allclose(np.abs(features.numpy()).sum(1), np.abs(vectorizer.transform(test_docs).toarray()).sum(1),
                               atol=1e-5)
    probabilities = torch.softmax(module(batch).logits, -1).detach().numpy()
    np.testing.assert_allclose(probabilities, reference.predict_proba(vectorizer.transform(test_docs)), atol=1e-4)
