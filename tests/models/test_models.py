"""One contract for every model in the registry: shapes, row sums, masked zeros, padding invariance."""
import pytest
import torch

from hierattn.contract import ClassifierOutput
from hierattn.data.batches import encode_documents
from hierattn.data.text import Vocab, tokenize
from hierattn.models import BUILT_IN, REGISTRY, build_from_spec, build_model, is_attention_free
from hierattn.models.plugins import specs_in_file
from tests.conftest import CORPUS, REPO

SMALL = {
    "han": {"embed_dim": 16, "hidden": 8, "attention_dim": 12, "cache_groups": 4},
    "hcan": {"d": 16, "heads": 4},
    "sanet": {"embed_dim": 16, "d": 16},
    "halstm": {"embed_dim": 16, "hidden": 16, "dense": 8},
    "mahnn": {"embed_dim": 16, "hidden": 8, "attention_dim": 8, "maps": 6, "dropout": 0.2},
    "kimcnn": {"embed_dim": 16, "maps": 6},
    "tfidf": {"num_bigrams": 4},
    # weights spread wider than transformers' 0.02, whose attention starts almost even
    "transformer": {"d": 16, "heads": 2, "ffn": 32, "layers": 2, "max_positions": 64, "init_std": 0.3},
}
# Every model type and every variant a paper compares: the HCAN variants of its Table 2 and the
# paper's own size, SANet's no-attention baseline and big size, HA-LSTM's windows and its LSTM /
# BiLSTM baselines, HAN's encoders, MahNN's channel counts and rv, both TF-IDF classifiers.
VARIANTS = [(t, SMALL[t]) for t in BUILT_IN] + [
    ("hcan", {**SMALL["hcan"], "parallel": p, "pooling": pool, "hierarchical": h})
    for p in (False, True) for pool in ("max", "target") for h in (False, True)
] + [("hcan", {"d": 512, "heads": 8})] + [
    ("sanet", {**SMALL["sanet"], "attention": False}), ("sanet", {**SMALL["sanet"], "blocks": 2, "scaled": True}),
    ("halstm", {**SMALL["halstm"], "window": 8}), ("halstm", {**SMALL["halstm"], "cell": "lstm"}),
    ("halstm", {**SMALL["halstm"], "cell": "bilstm"}), ("halstm", {**SMALL["halstm"], "cell": "onlstm"}),
    ("han", {**SMALL["han"], "encoder": "lstm"}), ("han", {**SMALL["han"], "encoder": "cached_lstm"}),
    ("mahnn", {**SMALL["mahnn"], "channels": 1}), ("mahnn", {**SMALL["mahnn"], "channels": 7}),
    ("mahnn", {**SMALL["mahnn"], "semantic": False}),
    ("tfidf", {**SMALL["tfidf"], "classifier": "nb"}),
    ("transformer", {**SMALL["transformer"], "family": "roberta", "pad_id": 1}),
    ("transformer", {**SMALL["transformer"], "family": "distilbert"}),
]
# The example plug-in (examples/bigru_attention) is held to the same contract, without being
# registered in this process: a plug-in's model is a model like any other.
EXAMPLE = specs_in_file(REPO / "examples" / "bigru_attention" / "bigru_attention.py")[0]
PLUGINS = [(EXAMPLE, {"embed_dim": 16, "hidden": 8, "heads": 3, "attention_dim": 12}),
           (EXAMPLE, {"embed_dim": 16, "hidden": 8, "heads": 3, "attention_dim": 12, "diversity": 0.5})]
_QUIET = ("init_std", "ffn", "max_positions",
          "dropout", "embed_dim", "attention_dim", "hidden", "dense", "maps", "cache_groups", "num_bigrams")
VARIANTS += PLUGINS
IDS = [f"{getattr(t, 'name', t)}-" + "-".join(f"{k}={v}" for k, v in c.items() if k not in _QUIET) for t, c in VARIANTS]
DOCS = [tokenize(t) for t in CORPUS] + [tokenize("Short one.")]


def test_every_registered_model_is_covered():
    assert {t for t, _ in VARIANTS if isinstance(t, str)} == set(BUILT_IN)


@pytest.fixture(params=VARIANTS, ids=IDS)
def model_and_vocab(request):
    model_type, config = request.param
    vocab = Vocab.build(DOCS, min_freq=1)
    torch.manual_seed(0)
    spec = model_type if not isinstance(model_type, str) else REGISTRY[model_type]
    model = build_from_spec(spec, {"vocab_size": len(vocab), "num_classes": 3, **config}).eval()
    return model, vocab


def test_output_contract(model_and_vocab):
    model, vocab = model_and_vocab
    batch = encode_documents(DOCS, vocab, [0, 1, 2, 0, 1])
    out = model(batch)
    assert isinstance(out, ClassifierOutput)
    assert out.logits.shape == (5, 3) and out.loss is not None and out.loss.dim() == 0
    # every model exposes attention, except the baselines that have none by design
    assert bool(out.attentions) != is_attention_free(model)
    for name, a in out.attentions.items():
        assert a.weights.shape == a.mask.shape, name
        assert a.weights.shape[0] == 5 and a.axes[0] == "batch" and a.axes[-1] == "key"
        assert a.level in ("word", "sentence", "hidden", "subword")
        if "sentence" in a.axes:
            assert a.weights.shape[a.axis("sentence")] == batch.word_ids.shape[1]
        assert (a.weights[~a.mask] == 0).all(), f"{name}: padded positions receive attention"
        assert (a.weights >= 0).all()
        sums = a.weights.sum(-1)
        rows_real = a.mask.any(-1)
        torch.testing.assert_close(sums[rows_real], torch.ones_like(sums[rows_real]), atol=1e-5, rtol=0)
        assert (sums[~rows_real] == 0).all()
        # the mask agrees with the batch: key positions are exactly the real words / sentences
        if a.level == "word" and "sentence" in a.axes:
            key_real = a.mask.any(-2) if a.is_self_attention else a.mask
            expected = batch.word_mask
            while key_real.dim() > expected.dim():
                key_real = key_real.any(2)
            assert torch.equal(key_real, expected), name
        if a.level == "sentence":
            key_real = a.mask
            while key_real.dim() > 2:
                key_real = key_real.any(1)
            assert torch.equal(key_real, batch.sentence_mask), name


def test_padding_invariance(model_and_vocab):
    """A document's logits and attention are the same alone or batched beside longer documents."""
    model, vocab = model_and_vocab
    with torch.no_grad():
        batched = model(encode_documents(DOCS, vocab))
        for i, doc in enumerate(DOCS):
            alone = model(encode_documents([doc], vocab))
            torch.testing.assert_close(alone.logits[0], batched.logits[i], atol=1e-5, rtol=0)
            for name, a in alone.attentions.items():
                b = batched.attentions[name].weights[i]
                crop = tuple(slice(0, n) for n in a.weights.shape[1:])
                torch.testing.assert_close(a.weights[0], b[crop], atol=1e-5, rtol=0)
                assert b.sum() == pytest.approx(a.weights.sum().item(), abs=1e-4), f"{name}: mass in padding"


def test_one_batch_overfit(model_and_vocab):
    """Loss on a tiny fixed batch falls under training (measured without dropout, before and after)."""
    model, vocab = model_and_vocab
    batch = encode_documents(DOCS, vocab, [0, 1, 2, 0, 1])
    big = sum(p.numel() for p in model.parameters()) > 5e6  # the paper-size config is slow on a CPU
    steps, lr = (5, 3e-4) if big else (40, 1e-2)
    with torch.no_grad():
        before = model.eval()(batch, return_attentions=False).loss.item()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for _ in range(steps):
        loss = model(batch, return_attentions=False).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        after = model.eval()(batch, return_attentions=False).loss.item()
    assert after < before * (0.8 if big else 0.3)


def test_dropout_is_off_in_eval(model_and_vocab):
    model, vocab = model_and_vocab
    batch = encode_documents(DOCS, vocab)
    with torch.no_grad():
        torch.testing.assert_close(model(batch).logits, model(batch).logits)


def test_empty_sentence_rows_do_not_produce_nan(model_and_vocab):
    model, vocab = model_and_vocab
    batch = encode_documents([tokenize("x")], vocab)  # unknown word only
    out = model(batch)
    assert torch.isfinite(out.logits).all()
    for a in out.attentions.values():
        assert torch.isfinite(a.weights).all()


def test_bad_configs_are_rejected():
    with pytest.raises(ValueError, match="divisible"):
        build_model("hcan", {"vocab_size": 10, "num_classes": 2, "d": 10, "heads": 4})
    with pytest.raises(ValueError, match="pooling"):
        build_model("hcan", {"vocab_size": 10, "num_classes": 2, "pooling": "mean"})
    with pytest.raises(ValueError, match="unknown hcan config keys"):
        build_model("hcan", {"vocab_size": 10, "num_classes": 2, "depth": 3})
    with pytest.raises(ValueError, match="unknown model type"):
        build_model("bert", {})


def test_attention_sites_take_an_override(model_and_vocab):
    """Every site an intervention reaches is named like the map the model reports, hands over
    weights of a map's shape rules (keys last, a distribution per real row), and the model uses
    what the override returns: identity changes nothing, an even spread changes the logits of a
    model that uses its attention."""
    from hierattn.models.intervention import attention_override

    model, vocab = model_and_vocab
    batch = encode_documents(DOCS, vocab)
    seen = {}

    def identity(site, weights, mask):
        assert weights.shape == mask.shape and mask.dtype == torch.bool
        assert (weights[~mask] == 0).all(), site
        rows = mask.any(-1)
        torch.testing.assert_close(weights.sum(-1)[rows], torch.ones_like(weights.sum(-1)[rows]), atol=1e-5, rtol=0)
        seen[site] = weights.shape
        return weights

    with torch.no_grad():
        plain = model(batch)
        with attention_override(identity):
            same = model(batch)
    torch.testing.assert_close(same.logits, plain.logits, atol=1e-5, rtol=0)
    assert set(seen) <= set(plain.attentions), f"sites {set(seen)} not among the maps {set(plain.attentions)}"
    if not seen:
        return
    even = lambda site, w, m: m.to(w.dtype) / m.sum(-1, keepdim=True).clamp_min(1)  # noqa: E731
    with torch.no_grad(), attention_override(even):
        changed = model(batch)
    assert (changed.logits - plain.logits).abs().max() > 1e-6, "an even spread left every logit as it was"
