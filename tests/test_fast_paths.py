"""Fast paths keep the output contract: HCAN's training path (one convolution for Q, K and V,
fused scaled-dot-product attention, no weights kept) gives what the path that returns the
attention maps gives; batched metrics equal the per-matrix ones (see test_stats)."""
import pytest
import torch

from hierattn.data import encode_documents
from hierattn.models import build_model
from hierattn.models.layers import straightforward
from hierattn.text import Vocab, tokenize

from .conftest import CORPUS

VARIANTS = [{}, {"hierarchical": False}, {"parallel": False}, {"pooling": "max"}]


def _batch():
    docs = [tokenize(t) for t in CORPUS + [".", "Short one."]]  # "." has no words: an empty document
    vocab = Vocab.build(docs, min_freq=1)
    return encode_documents(docs, vocab, [0, 1, 0, 1, 0, 1]), len(vocab)


@pytest.mark.parametrize("config", VARIANTS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "default")
def test_hcan_training_path_matches_the_path_with_weights(config):
    batch, vocab_size = _batch()
    torch.manual_seed(0)
    model = build_model("hcan", {"vocab_size": vocab_size, "num_classes": 2, "d": 16, "heads": 2, "dropout": 0.0,
                                 **config}).train()
    with straightforward():  # the reference: separate convolutions, explicit softmax
        slow = model(batch, return_attentions=True)
    slow.loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    fast = model(batch, return_attentions=False)
    fast.loss.backward()
    assert torch.isfinite(fast.logits).all() and not fast.attentions
    torch.testing.assert_close(fast.logits, slow.logits, atol=1e-5, rtol=1e-4)
    for name, p in model.named_parameters():
        if name in grads:
            torch.testing.assert_close(p.grad, grads[name], atol=1e-5, rtol=1e-4, msg=name)


def test_inference_maps_equal_the_reference_maps():
    batch, vocab_size = _batch()
    torch.manual_seed(1)
    model = build_model("hcan", {"vocab_size": vocab_size, "num_classes": 2, "d": 16, "heads": 2}).eval()
    with torch.inference_mode():
        fast = model(batch)
        fast_again = model(batch)  # the cached stacked kernels
        with straightforward():
            slow = model(batch)
    assert set(fast.attentions) == set(slow.attentions)
    for name, a in fast.attentions.items():
        torch.testing.assert_close(a.weights, slow.attentions[name].weights, atol=1e-5, rtol=1e-4, msg=name)
        torch.testing.assert_close(fast_again.attentions[name].weights, a.weights)
    torch.testing.assert_close(fast.logits, slow.logits, atol=1e-5, rtol=1e-4)
