"""The Clark-style profile (``analysis.clark``): an even spread reads exactly its own even values;
a planted previous-token head and a [CLS] sink are read where they were planted, against a
reference computed with plain loops."""
from __future__ import annotations

import math

import pytest
import torch

from hierattn.analysis import clark
from hierattn.analysis.explain import explain
from hierattn.models.intervention import attention_override
from tests.analysis.test_heads import uniform  # noqa: F401  the even-spread BERT fixture
from tests.models.tiny_transformers import TEXTS


def _reference(weights, subwords):
    """Each figure by loops over one (T, T) matrix."""
    t = len(weights)
    first = subwords[0][1] < 0
    out = {"first special": 0.0, "other specials": 0.0, "punctuation": 0.0, "self": 0.0, "entropy": 0.0}
    for q in range(t):
        for k in range(t):
            w = float(weights[q][k])
            special = subwords[k][1] < 0
            if special and k == 0 and first:
                out["first special"] += w / t
            elif special:
                out["other specials"] += w / t
            elif clark.is_punctuation(subwords[k][0]):
                out["punctuation"] += w / t
            if q == k:
                out["self"] += w / t
            if w > 0:
                out["entropy"] -= w * math.log(w) / t
    out["previous"] = sum(float(weights[q][q - 1]) for q in range(1, t)) / (t - 1)
    out["next"] = sum(float(weights[q][q + 1]) for q in range(t - 1)) / (t - 1)
    return out


def test_punctuation_is_read_through_the_tokenizers_marks():
    assert clark.is_punctuation(",") and clark.is_punctuation("Ġ.") and clark.is_punctuation("##!")
    assert not clark.is_punctuation("Ġ") and not clark.is_punctuation("don") and not clark.is_punctuation("a.")


def test_an_even_spread_reads_its_own_even_values(uniform):  # noqa: F811
    for text in TEXTS:
        ex = explain(uniform, text)
        rows = clark.profile(ex)
        assert len(rows) == 3 * 2 and rows[0]["first_special"] == ex.subwords[0][0]
        for row in rows:
            for target in clark.TARGETS:
                assert row[target] == pytest.approx(row[f"{target}_even"], abs=1e-6)
            assert row["entropy"] == pytest.approx(row["entropy_even"], abs=1e-6)
            assert row["entropy_even"] == pytest.approx(math.log(row["size"]))


def _planted(previous_at: tuple[int, int], sink_at: tuple[int, int]):
    """Every head an even spread, but one a previous-token head and one putting 0.9 on the first
    token ([CLS]) and the rest evenly on the others."""
    calls = []

    def override(site, weights, mask):
        weights = mask.to(weights.dtype) / mask.sum(-1, keepdim=True).clamp_min(1)
        t = weights.shape[-1]
        if len(calls) == previous_at[0]:
            shifted = torch.zeros_like(weights[:, previous_at[1]])
            shifted[:, torch.arange(t), (torch.arange(t) - 1).clamp(min=0)] = 1.0
            weights[:, previous_at[1]] = shifted * mask[:, previous_at[1]]
        if len(calls) == sink_at[0]:
            real = mask[:, sink_at[1]].to(weights.dtype)
            rest = 0.1 * real / (real.sum(-1, keepdim=True) - 1).clamp_min(1)
            rest[..., 0] = 0.9
            weights[:, sink_at[1]] = rest * real
        calls.append(site)
        return weights

    return override


def test_planted_heads_are_read_as_the_loops_read_them(tmp_path):
    from hierattn.analysis.heads import layered_map
    from hierattn.checkpoint.reading import load_classifier
    from tests.models.tiny_transformers import save_tiny

    classifier = load_classifier(save_tiny("bert", tmp_path / "bert", layers=3), device="cpu")
    text = TEXTS[0] + " Yes! Really."
    with attention_override(_planted((0, 1), (2, 0)), in_order=False):
        ex = explain(classifier, text)
    name = layered_map(ex)
    rows = {(r["layer"], r["head"]): r for r in clark.profile(ex)}
    weights = ex.attentions[name].weights[0]
    real = ex.attentions[name].mask[0, 0, 0].diagonal()
    subwords = ex.subwords[: int(real.sum())]
    assert any(clark.is_punctuation(p) for p, w in subwords if w >= 0)  # "!" and "." are read
    for (layer, head), row in rows.items():
        matrix = weights[layer, head][real][:, real]
        for key, value in _reference(matrix.double(), subwords).items():
            assert row[key] == pytest.approx(value, abs=1e-6), (layer, head, key)
    t = rows[(0, 0)]["size"]
    assert rows[(0, 1)]["previous"] == pytest.approx(1.0) and rows[(2, 0)]["first special"] == pytest.approx(0.9)
    assert rows[(0, 0)]["previous"] == pytest.approx(1 / t)  # the heads left even read as even
    layers = clark.by_layer(list(rows.values()))
    assert [r["layer"] for r in layers] == [0, 1, 2]
    assert layers[2]["first special"] == pytest.approx((0.9 + rows[(2, 1)]["first special"]) / 2)
    split = clark.over_documents([ex, ex], draws=50)
    mean, low, high = split[2]["first special"]
    assert mean == pytest.approx(layers[2]["first special"]) and low <= mean <= high and split[2]["documents"] == 2


def test_special_tokens_kept_as_columns_and_left_out_agree(tmp_path):
    """The word map with its special tokens as columns sums to 1 a row; leaving those columns out
    and renormalising each row gives the word map the model reports (``subword_maps.aggregate``)."""
    from hierattn.checkpoint.reading import load_classifier
    from tests.models.tiny_transformers import save_tiny

    classifier = load_classifier(save_tiny("bert", tmp_path / "bert", layers=2, heads=2), device="cpu")
    ex = explain(classifier, TEXTS[0])  # "unbelievable" in three pieces
    words = sum(len(s.tokens) for s in ex.document.sentences)
    for layer in range(2):
        for head in (0, 1, None):
            matrix, labels = clark.words_with_specials(ex, layer, head)
            specials = sum(w < 0 for _, w in ex.subwords)
            assert matrix.shape == (words, words + specials) and len(labels) == words + specials
            assert torch.allclose(matrix.sum(-1), torch.ones(words, dtype=torch.float64), atol=1e-6)
            assert labels[-specials:][0].startswith("[CLS]") and "unbelievable" in labels
            if head is None:  # with the specials kept, a mean of heads is the mean of their matrices
                each = [clark.words_with_specials(ex, layer, h)[0] for h in (0, 1)]
                assert torch.allclose(matrix, (each[0] + each[1]) / 2)
                continue
            left_out = matrix[:, :words] / matrix[:, :words].sum(-1, keepdim=True)
            reported = ex.self_attention("word.self", layer, head)
            assert torch.allclose(left_out.float(), torch.as_tensor(reported).float()[:words, :words], atol=1e-5)
