"""Packed sequences: the convolution over real positions alone gives what ``F.conv1d`` gives over
the padded sequences, and HCAN's word level at inference convolves no padding."""
import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from hierattn.data.batches import encode_documents
from hierattn.data.text import Vocab, tokenize
from hierattn.models import build_model
from hierattn.models.packed import Packed, packed_convolution, taps_of


def _mask(lengths, width):
    return torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]


@pytest.mark.parametrize("kernel", [1, 3, 5])
def test_the_packed_convolution_is_conv1d_over_each_padded_sequence(kernel):
    torch.manual_seed(0)
    mask = _mask([7, 1, 0, 4, 2], 9)  # one word, no word, and sentences shorter than the window
    x = torch.randn(*mask.shape, 6) * mask.unsqueeze(-1)  # (n, W, d_in), zeros at padding
    weight, bias = torch.randn(10, 6, kernel), torch.randn(10)
    rows = Packed.of(mask)
    out = packed_convolution(rows.pack(x[:, :rows.width]), taps_of(weight).contiguous(), bias, rows)
    expected = F.conv1d(x.transpose(1, 2), weight, bias, padding=kernel // 2).transpose(1, 2)  # (n, W, 10)
    assert rows.gapless and rows.width == 7 and out.shape == (int(mask.sum()), 10)
    torch.testing.assert_close(out, expected[mask], atol=1e-5, rtol=1e-5)


def test_packing_keeps_the_real_positions_in_reading_order():
    mask = _mask([3, 0, 2], 5)
    x = torch.arange(15.0).view(3, 5)
    rows = Packed.of(mask)
    assert rows.pack(x[:, :rows.width]).tolist() == [0.0, 1.0, 2.0, 10.0, 11.0]
    assert rows.columns.tolist() == [0, 1, 2, 0, 1]
    assert torch.equal(rows.pad(rows.pack(x[:, :rows.width])), (x * mask)[:, :3])
    assert Packed.of(torch.zeros(2, 4, dtype=torch.bool)).pack(torch.ones(2, 1)).numel() == 0


def _documents():
    texts = ["One two three four five six seven eight nine ten eleven twelve. Short one. A b c d.",
             "Words here. And a longer sentence with some more words in it than that one. Yes."]
    docs = [tokenize(t) for t in texts]
    vocab = Vocab.build(docs, min_freq=1)
    return docs, encode_documents(docs, vocab, [0, 1]), len(vocab)


def test_hcan_convolves_only_the_real_words_at_inference():
    """Every matrix product of the word level's convolutions has one row per real word: Q, K, V
    of both self-attentions (3d columns each, a window of 3) and K, V of the target attention (2d),
    nothing for padding. The classifier is the one other such product; the sentence level uses
    ``F.conv1d``."""
    docs, batch, vocab_size = _documents()
    d, kernel = 16, 3
    model = build_model("hcan", {"vocab_size": vocab_size, "num_classes": 2, "d": d, "heads": 2}).eval()
    words = sum(doc.num_tokens for doc in docs)
    assert batch.word_mask.numel() > 2 * words  # padding the packed level must skip
    with torch.inference_mode(), FlopCounterMode(display=False) as counted:
        model(batch)
    products = counted.get_flop_counts()["Global"][torch.ops.aten.addmm]
    classifier = 2 * len(docs) * d * 2
    assert products == 2 * words * kernel * d * (3 * d + 3 * d + 2 * d) + classifier


def test_a_mask_with_a_gap_is_read_through_the_padded_layout():
    """A mask whose real positions do not all come first (no batch of ours has one) is not packed:
    the convolution's neighbours would be the wrong ones; the maps are the reference's still."""
    from hierattn.models.layers import straightforward

    _, batch, vocab_size = _documents()
    batch.word_mask[0, 0, 2] = False  # a gap inside the first sentence
    assert not Packed.of(batch.word_mask[0]).gapless
    model = build_model("hcan", {"vocab_size": vocab_size, "num_classes": 2, "d": 16, "heads": 2,
                                 "kernel": 5}).eval()  # a window of 5 reaches across the gap
    with torch.inference_mode():
        fast = model(batch)
        with straightforward():
            slow = model(batch)
    for name, a in fast.attentions.items():
        torch.testing.assert_close(a.weights, slow.attentions[name].weights, atol=1e-5, rtol=1e-4, msg=name)


def test_a_batch_without_a_real_sentence_reads_as_empty():
    """Documents with no word at all (a batch of them): finite logits, every map zero and of the
    batch's shape, from the packed level as from the sentence level."""
    from hierattn.contract import Batch

    B, S, W = 2, 3, 4
    batch = Batch(torch.zeros(B, S, W, dtype=torch.long), torch.zeros(B, S, W, dtype=torch.bool),
                  torch.zeros(B, S, dtype=torch.bool))
    model = build_model("hcan", {"vocab_size": 10, "num_classes": 2, "d": 16, "heads": 2}).eval()
    with torch.inference_mode():
        out = model(batch)
    assert torch.isfinite(out.logits).all()
    assert out.attentions["word.self.a"].weights.shape == (B, S, 2, W, W)
    assert all(not a.weights.any() for a in out.attentions.values())


def test_a_changed_weight_reaches_the_packed_convolution():
    """The tap matrix is kept between calls with the stacked kernels it came from; a parameter
    changed in place (a training step, a load) gives new taps on the next call."""
    from hierattn.models.layers import straightforward

    _, batch, vocab_size = _documents()
    model = build_model("hcan", {"vocab_size": vocab_size, "num_classes": 2, "d": 16, "heads": 2}).eval()
    with torch.inference_mode():
        before = model(batch).logits
    with torch.no_grad():
        model.word_level.branch_a.q.conv.weight.mul_(3.0)
    with torch.inference_mode():
        after = model(batch).logits
        with straightforward():
            expected = model(batch).logits
    assert not torch.allclose(after, before)
    torch.testing.assert_close(after, expected, atol=1e-5, rtol=1e-4)
