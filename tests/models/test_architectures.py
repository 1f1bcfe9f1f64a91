"""Each architecture against a small reference computation of its paper's equations."""
import json
import math

import numpy as np
import pytest
import torch

from hierattn.checkpoint.format import CheckpointError
from hierattn.checkpoint.reading import load_classifier
from hierattn.checkpoint.writing import save_checkpoint
from hierattn.data.batches import encode_documents
from hierattn.data.text import TextConfig, Vocab, tokenize
from hierattn.models import build_model, display_name, sized_for_text
from hierattn.models.recurrent import CachedLSTMCell, SlidingAttentionLSTMCell, scan
from hierattn.models.sanet import sinusoidal_positions
from hierattn.models.tfidf import _terms, fit_tfidf
from tests.conftest import CORPUS


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
    np.testing.assert_allclose(np.abs(features.numpy()).sum(1),
                               np.abs(vectorizer.transform(test_docs).toarray()).sum(1),
                               atol=1e-5)
    probabilities = torch.softmax(module(batch).logits, -1).detach().numpy()
    np.testing.assert_allclose(probabilities, reference.predict_proba(vectorizer.transform(test_docs)), atol=1e-4)


def _long_document(words: int) -> tuple[list, Vocab]:
    text = " ".join(f"w{i}" for i in range(words)) + "."
    docs = [tokenize(text, TextConfig(max_sentences=1, max_words=words))]
    return docs, Vocab.build(docs, min_freq=1)


def test_flat_hcan_gives_every_position_it_reads_its_own_embedding():
    """HCAN's positional table (section 3.6, P in R^{l x d}) covers every word a flat variant reads:
    training sizes it from the caps, and an input longer than the table is refused, never folded
    onto the last row (before the fix: 128 rows, positions 128..999 of a bbc-news document shared
    one embedding)."""
    sized = sized_for_text("hcan", {"hierarchical": False}, 25, 40)
    assert sized["word_positions"] == 1000
    assert sized_for_text("hcan", {}, 50, 60)["word_positions"] == 60
    assert sized_for_text("hcan", {"word_positions": 7}, 25, 40)["word_positions"] == 7  # a given size stays
    legacy = {"hierarchical": False, "clamp_positions": True}
    assert sized_for_text("hcan", legacy, 25, 40) == legacy  # the old rule: 128-row tables, folded
    docs, vocab = _long_document(300)
    torch.manual_seed(0)
    sized = sized_for_text("hcan", {"hierarchical": False}, 1, 300)
    config = {"vocab_size": len(vocab), "num_classes": 2, "d": 8, "heads": 2, **sized}
    model = build_model("hcan", config).eval()
    table = model.word_level.position.weight
    assert table.shape[0] == 300 and not torch.equal(table[150], table[299])
    model(encode_documents(docs, vocab))  # runs
    short = build_model("hcan", {**config, "word_positions": 128}).eval()
    with pytest.raises(ValueError, match="positional table has 128 rows"):
        short(encode_documents(docs, vocab))


def test_hcan_checkpoints_from_before_the_fix_keep_folding_positions(tmp_path):
    """A config.json without ``clamp_positions`` was written by the code that folded long inputs
    onto the table's last row: it loads with that behaviour, and predicts what that code did."""
    docs, vocab = _long_document(300)
    torch.manual_seed(0)
    model = build_model("hcan", {"vocab_size": len(vocab), "num_classes": 2, "d": 8, "heads": 2,
                                 "hierarchical": False, "clamp_positions": True}).eval()
    save_checkpoint(tmp_path / "old", model, "hcan", vocab, ["a", "b"], TextConfig(1, 300), {})
    config = json.loads((tmp_path / "old" / "config.json").read_text())
    del config["model_config"]["clamp_positions"]
    (tmp_path / "old" / "config.json").write_text(json.dumps(config))
    loaded = load_classifier(tmp_path / "old", device="cpu")
    assert loaded.model.config.clamp_positions is True
    batch, real = encode_documents(docs, vocab), torch.ones(1, 300, dtype=torch.bool)
    m = loaded.model
    with torch.no_grad():  # the folded table, by hand: positions 128..299 all read row 127
        x = m.embedding(batch.word_ids.view(1, -1)) + m.word_level.position.weight[torch.arange(300).clamp(max=127)]
        level = m.word_level
        y = level.branch_a(x, real)[0] * level.branch_b(x, real)[0]
        expected = m.classifier(level.target(level.norm(y), real)[0])
        torch.testing.assert_close(m(batch).logits, expected, atol=1e-5, rtol=0)


def _mahnn_cnn_input(model, batch) -> tuple[torch.Tensor, torch.Tensor]:
    """(the CNN's input channels, the BiLSTM states) of one forward pass."""
    seen = {}
    convolve = model._convolve
    model._convolve = lambda channels, mask: seen.setdefault("channels", channels) is not None and convolve(channels,
                                                                                                            mask)
    from hierattn.models.common import flatten_words, run_rnn

    with torch.no_grad():
        model(batch)
        ids, mask = flatten_words(batch)
        h = run_rnn(model.rnn, model.embedding(ids), mask)
    model._convolve = convolve
    return seen["channels"], h


def test_mahnn_cnn_input_stays_bounded_on_a_thousand_words():
    """Eq. 14's rescaling: on a 1,000-word document the syntactical softmax is near one-hot; the
    CNN input must stay within the BiLSTM's range (before the fix, n x a_li inflated one word by
    about n)."""
    docs, vocab = _long_document(1000)
    torch.manual_seed(0)
    model = build_model("mahnn", {"vocab_size": len(vocab), "num_classes": 2, "embed_dim": 8, "hidden": 4,
                                  "attention_dim": 4, "maps": 3, "channels": 2, "dropout": 0.0}).eval()
    with torch.no_grad():
        model.association.copy_(3 * torch.eye(8).expand(2, 8, 8))  # saturated associations: a peaked softmax
    channels, h = _mahnn_cnn_input(model, encode_documents(docs, vocab))
    syntactic = model(encode_documents(docs, vocab)).attentions["word.syntactic"].weights
    assert syntactic.max() > 0.5  # the case the fix is for: one word takes most of the weight
    assert torch.isfinite(channels).all()
    assert channels.abs().amax() <= h.abs().amax() + 1e-6  # |c_li| <= |h_i|: bounded for any length


@pytest.mark.parametrize("semantic", [True, False])
def test_mahnn_uniform_attention_leaves_the_states_unchanged(semantic):
    docs = [tokenize(t) for t in CORPUS]
    vocab = Vocab.build(docs, min_freq=1)
    torch.manual_seed(0)
    model = build_model("mahnn", {"vocab_size": len(vocab), "num_classes": 2, "embed_dim": 8, "hidden": 4,
                                  "attention_dim": 4, "maps": 3, "channels": 2, "dropout": 0.0,
                                  "semantic": semantic}).eval()
    with torch.no_grad():
        model.association.zero_()  # every association 0: uniform syntactical attention
        if semantic:
            model.semantic_out.zero_()  # every score 0: uniform semantical attention
    for rescale in ("peak", "length"):
        model.config.rescale = rescale
        channels, h = _mahnn_cnn_input(model, encode_documents(docs, vocab))
        torch.testing.assert_close(channels, h.unsqueeze(1).expand_as(channels), atol=1e-6, rtol=1e-5)


def test_mahnn_checkpoints_from_before_the_fix_keep_the_length_rescaling(tmp_path):
    docs, vocab = _long_document(50)
    model = build_model("mahnn", {"vocab_size": len(vocab), "num_classes": 2, "embed_dim": 8, "hidden": 4,
                                  "attention_dim": 4, "maps": 3})
    save_checkpoint(tmp_path / "old", model, "mahnn", vocab, ["a", "b"], TextConfig(1, 50), {})
    config = json.loads((tmp_path / "old" / "config.json").read_text())
    assert config["model_config"]["rescale"] == "peak"  # new checkpoints say so
    del config["model_config"]["rescale"]
    (tmp_path / "old" / "config.json").write_text(json.dumps(config))
    assert load_classifier(tmp_path / "old", device="cpu").model.config.rescale == "length"


def test_a_checkpoint_whose_caps_outrun_its_positional_table_is_refused_at_load(tmp_path):
    docs, vocab = _long_document(10)
    model = build_model("hcan", {"vocab_size": len(vocab), "num_classes": 2, "d": 8, "heads": 2, "hierarchical": False})
    save_checkpoint(tmp_path / "wide", model, "hcan", vocab, ["a", "b"], TextConfig(25, 40), {})
    with pytest.raises(CheckpointError, match="word_positions table has 128 rows, but its text caps let it read 1000"):
        load_classifier(tmp_path / "wide", device="cpu")


def test_on_lstm_step_matches_the_paper_equations():
    """ON-LSTM (Shen et al. 2019, eqs. 9-14, chunk size 1) written out from the paper, against the cell."""
    from hierattn.models.recurrent import OrderedNeuronsLSTMCell

    torch.manual_seed(0)
    cell = OrderedNeuronsLSTMCell(5, 6)
    x, h, c = torch.randn(3, 5), torch.randn(3, 6), torch.randn(3, 6)
    gates = cell.input(x) + cell.recurrent(h)
    f, i, o, candidate, master_f, master_i = gates.split(6, -1)
    forget_master = torch.cumsum(torch.softmax(master_f, -1), -1)
    input_master = 1 - torch.cumsum(torch.softmax(master_i, -1), -1)
    omega = forget_master * input_master
    f_hat = torch.sigmoid(f) * omega + (forget_master - omega)
    i_hat = torch.sigmoid(i) * omega + (input_master - omega)
    c_expected = f_hat * c + i_hat * torch.tanh(candidate)
    h_expected = torch.sigmoid(o) * torch.tanh(c_expected)
    h_new, (h_state, c_new), split = cell.step(cell.project(x), (h, c))
    torch.testing.assert_close(c_new, c_expected)
    torch.testing.assert_close(h_new, h_expected)
    torch.testing.assert_close(split, torch.softmax(master_f, -1))
    assert torch.all(forget_master[:, 1:] >= forget_master[:, :-1])  # the master forget gate orders the units


def test_on_lstm_with_open_master_gates_is_an_lstm():
    """When the master forget gate keeps every unit (F = 1) and the master input gate writes every
    unit (I = 1), ON-LSTM's update is the LSTM's: c = f * c + i * c~."""
    from hierattn.models.recurrent import OrderedNeuronsLSTMCell

    torch.manual_seed(1)
    cell = OrderedNeuronsLSTMCell(4, 5)
    with torch.no_grad():
        cell.input.weight[20:].zero_()
        cell.recurrent.weight[20:].zero_()
        cell.input.bias[20:25] = torch.tensor([50.0, 0, 0, 0, 0])  # forget split at unit 0: F = 1 everywhere
        cell.input.bias[25:30] = torch.tensor([0, 0, 0, 0, 50.0])  # input split at the last unit
    x, h, c = torch.randn(2, 4), torch.randn(2, 5), torch.randn(2, 5)
    f, i, o, candidate = (cell.input(x) + cell.recurrent(h))[:, :20].split(5, -1)
    _, (_, c_new), _ = cell.step(cell.project(x), (h, c))
    lstm = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(candidate)
    torch.testing.assert_close(c_new[:, :-1], lstm[:, :-1], atol=1e-6, rtol=0)  # I = 0 only at the last unit
