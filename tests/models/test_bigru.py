"""``bigru.fused_bigru`` against ``nn.GRU`` on a packed sequence (the implementation it replaces on
the CPU): outputs, input gradients and every parameter gradient, on sequences of every length from
empty to the full width; and HAN's training and inference paths against its reference path."""
import pytest
import torch
from torch import nn

from hierattn.data.batches import encode_documents
from hierattn.data.text import Vocab, tokenize
from hierattn.models import bigru, build_model
from hierattn.models.common import run_rnn
from hierattn.models.layers import straightforward
from tests.conftest import CORPUS
from tests.models.paths import both_paths


def _both(gru, x, mask, upstream):
    results = []
    for reference in (True, False):
        gru.zero_grad()
        x.grad = None
        if reference:
            with straightforward():
                out = run_rnn(gru, x, mask)
        else:
            out = run_rnn(gru, x, mask)
        (out * upstream).sum().backward()
        results.append((out.detach(), x.grad.clone(), {n: p.grad.clone() for n, p in gru.named_parameters()}))
    return results


@pytest.mark.parametrize("shape", [(1, 1), (7, 5), (40, 23)], ids=lambda s: f"N={s[0]},L={s[1]}")
def test_fused_bigru_gives_what_the_packed_nn_gru_gives(shape):
    N, L = shape
    torch.manual_seed(sum(shape))
    gru = nn.GRU(6, 4, batch_first=True, bidirectional=True)
    lengths = torch.randint(0, L + 1, (N,))
    lengths[0] = L  # one row at full width; others may be empty (run as one step, then masked)
    mask = torch.arange(L)[None, :] < lengths[:, None]
    x = torch.randn(N, L, 6, requires_grad=True)
    upstream = torch.randn(N, L, 8)
    assert bigru.fits(gru, x)
    (slow, slow_dx, slow_grads), (fast, fast_dx, fast_grads) = _both(gru, x, mask, upstream)
    torch.testing.assert_close(fast, slow, atol=1e-5, rtol=1e-5)
    assert torch.all(fast[~mask] == 0)
    torch.testing.assert_close(fast_dx, slow_dx, atol=1e-5, rtol=1e-5)
    for name, grad in slow_grads.items():
        torch.testing.assert_close(fast_grads[name], grad, atol=1e-5, rtol=1e-5, msg=name)


def test_fused_bigru_does_not_see_padding():
    """A row's output does not change when the padding after it changes, nor when the batch is wider."""
    torch.manual_seed(0)
    gru = nn.GRU(3, 2, batch_first=True, bidirectional=True)
    x = torch.randn(2, 6, 3)
    mask = torch.tensor([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1]], dtype=torch.bool)
    noisy = x.clone()
    noisy[0, 3:] = 100.0
    with torch.no_grad():
        a, b = bigru.fused_bigru(gru, x, mask), bigru.fused_bigru(gru, noisy, mask)
        alone = bigru.fused_bigru(gru, x[:1, :3], mask[:1, :3])
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(a[:1, :3], alone)


def test_no_sequences_give_an_empty_output_and_gradient():
    gru = nn.GRU(3, 2, batch_first=True, bidirectional=True)
    x = torch.zeros(0, 4, 3, requires_grad=True)
    out = bigru.fused_bigru(gru, x, torch.zeros(0, 4, dtype=torch.bool))
    out.sum().backward()
    assert out.shape == (0, 4, 4) and x.grad.shape == x.shape


def test_other_recurrences_keep_nn_rnn():
    x = torch.zeros(2, 3, 4)
    assert not bigru.fits(nn.LSTM(4, 2, batch_first=True, bidirectional=True), x)
    assert not bigru.fits(nn.GRU(4, 2, batch_first=True), x)  # one direction
    assert not bigru.fits(nn.GRU(4, 2, batch_first=True, bidirectional=True), x.double())
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not bigru.fits(nn.GRU(4, 2, batch_first=True, bidirectional=True), x)


def _batch():
    docs = [tokenize(t) for t in CORPUS + [".", "Short one."]]  # "." has no words: an empty document
    vocab = Vocab.build(docs, min_freq=1)
    return encode_documents(docs, vocab, [0, 1, 0, 1, 0, 1]), len(vocab)


@pytest.mark.parametrize("encoder", ["gru", "lstm"])
def test_han_training_path_matches_its_reference(encoder):
    """Fused BiGRU, attention scored at real positions only: the same logits, maps and gradients
    (dropout off, so both paths compute one function)."""
    batch, vocab_size = _batch()
    torch.manual_seed(0)
    model = build_model("han", {"vocab_size": vocab_size, "num_classes": 2, "embed_dim": 12, "hidden": 5,
                                "attention_dim": 7, "dropout": 0.0, "encoder": encoder}).train()
    slow, fast = both_paths(model, batch, tolerance=1e-5)
    for name, a in fast.attentions.items():
        torch.testing.assert_close(a.weights, slow.attentions[name].weights, atol=1e-5, rtol=1e-5, msg=name)


def test_han_dropout_draws_a_cheap_mask_and_the_reference_draws_bernoulli():
    batch, vocab_size = _batch()
    model = build_model("han", {"vocab_size": vocab_size, "num_classes": 2, "dropout": 0.5}).train()
    torch.manual_seed(3)
    with straightforward():
        reference = model(batch).logits
    torch.manual_seed(3)
    again = model(batch).logits
    torch.manual_seed(3)
    with straightforward():
        reference_again = model(batch).logits
    torch.testing.assert_close(reference, reference_again)  # same seed, same masks
    assert not torch.allclose(again, reference)  # another generator call, another mask
