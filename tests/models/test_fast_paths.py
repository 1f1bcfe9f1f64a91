"""Fast paths keep the output contract: HCAN's training path (one convolution for Q, K and V,
fused scaled-dot-product attention, no weights kept) gives what the path that returns the
attention maps gives; batched metrics equal the per-matrix ones (see test_stats)."""
import pytest
import torch

from hierattn.data.batches import encode_documents
from hierattn.data.text import Vocab, tokenize
from hierattn.models import build_model
from hierattn.models.layers import straightforward
from tests.conftest import CORPUS
from tests.models.paths import both_paths

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


@pytest.mark.parametrize("config", VARIANTS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "default")
def test_inference_maps_equal_the_reference_maps(config):
    """At inference the word level is packed (``models.packed``) in every variant but the flat one."""
    batch, vocab_size = _batch()
    torch.manual_seed(1)
    model = build_model("hcan", {"vocab_size": vocab_size, "num_classes": 2, "d": 16, "heads": 2, **config}).eval()
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


def test_sentences_grouped_by_length_give_what_one_padded_pass_gives():
    """With enough sentences the word level runs in length groups, each cut to its own width;
    logits, gradients and every map (padded back to the batch width) match the reference."""
    from hierattn.models.hcan import MAX_GROUPS, MIN_GROUP

    lengths = [1, 2, 3, 5, 8, 13, 21, 34]
    texts = [" ".join(" ".join(f"w{(i * j) % 11}" for j in range(n)) + " ." for n in lengths[k:] + lengths[:k])
             for k, i in enumerate(range(1, 2 * MIN_GROUP * MAX_GROUPS // len(lengths) + 2))]
    docs = [tokenize(t) for t in texts]
    assert sum(len(d.sentences) for d in docs) >= 2 * MIN_GROUP * MAX_GROUPS  # the grouped path runs
    vocab = Vocab.build(docs, min_freq=1)
    batch = encode_documents(docs, vocab, [i % 2 for i in range(len(docs))])
    torch.manual_seed(0)
    model = build_model("hcan", {"vocab_size": len(vocab), "num_classes": 2, "d": 16, "heads": 2, "dropout": 0.0})
    slow, fast = both_paths(model, batch)
    for name, a in fast.attentions.items():
        assert a.weights.shape == slow.attentions[name].weights.shape
        torch.testing.assert_close(a.weights, slow.attentions[name].weights, atol=1e-5, rtol=1e-4, msg=name)


def test_cheap_dropout_keeps_the_expected_share_and_the_expectation():
    from hierattn.models.layers import cheap_dropout

    torch.manual_seed(0)
    x = torch.ones(1_000_003, requires_grad=True)  # not a multiple of 4: the last 64-bit draw is cut
    y = cheap_dropout(x, 0.3, training=True)
    kept = (y != 0).float().mean().item()
    assert abs(kept - 0.7) < 0.003  # binomial sd is 0.0005
    assert abs(y.mean().item() - 1.0) < 0.005
    values = torch.unique(y).tolist()
    assert len(values) == 2 and values[0] == 0.0 and values[1] == pytest.approx(65536 / round(0.7 * 65536))
    y.sum().backward()
    torch.testing.assert_close(x.grad, y.detach())  # the gradient goes through the same mask
    assert torch.equal(cheap_dropout(x, 0.3, training=False), x)
    assert not torch.equal(cheap_dropout(x, 0.3, True), cheap_dropout(x, 0.3, True))  # a new mask each call


def test_the_reference_layers_switch_is_local_to_the_calling_thread():
    """``straightforward()`` changes HCAN's implementation for the thread that asked only: a server
    thread explaining for another session keeps the fast path."""
    import threading

    from hierattn.models.layers import is_straightforward, straightforward

    inside, seen_elsewhere, ready, done = [], [], threading.Event(), threading.Event()

    def other_thread():
        ready.wait()
        seen_elsewhere.append(is_straightforward())
        done.set()

    thread = threading.Thread(target=other_thread)
    thread.start()
    with straightforward():
        inside.append(is_straightforward())
        ready.set()
        done.wait(10)
    thread.join()
    assert inside == [True] and seen_elsewhere == [False] and not is_straightforward()
