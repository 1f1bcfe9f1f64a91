"""The head overview: a uniform-attention model reads "no finding" in every head; a
previous-token head, made so by an override the explanation records, is found, and only it."""
from __future__ import annotations

import pytest
import torch

from hierattn.analysis import heads
from hierattn.analysis.explain import explain
from hierattn.checkpoint.reading import load_classifier
from hierattn.checkpoint.writing import save_checkpoint
from hierattn.data.subwords import SubwordVocab
from hierattn.data.text import TextConfig
from hierattn.models import build_model
from hierattn.models.intervention import attention_override
from tests.models.tiny_transformers import LABELS, TEXTS, save_tiny, wordpiece


@pytest.fixture(scope="module")
def uniform(tmp_path_factory):
    """A BERT whose every attention is an even spread (Wiegreffe & Pinter's frozen-uniform model)."""
    tokenizer, _ = wordpiece()
    model = build_model("transformer", {"vocab_size": tokenizer.get_vocab_size(), "num_classes": 3, "d": 16,
                                        "heads": 2, "ffn": 32, "layers": 3, "max_positions": 64,
                                        "attention_weights": "uniform"})
    folder = tmp_path_factory.mktemp("uniform") / "uniform-bert"
    save_checkpoint(folder, model, "transformer", SubwordVocab(tokenizer, 64, 0), LABELS, TextConfig(), {})
    return load_classifier(folder, device="cpu")


def test_an_even_spread_is_no_finding_in_any_head(uniform):
    for text in TEXTS:
        rows = heads.overview(explain(uniform, text))
        assert len(rows) == 3 * 2
        for row in rows:
            assert row["finding"] is None
            for pattern in ("special", "previous", "next"):
                assert row[pattern] == pytest.approx(row[f"{pattern}_even"], abs=1e-6)
            assert row["gini"] == pytest.approx(0.0, abs=1e-6)
    values, labels = heads.grid(rows)
    assert values.max() == pytest.approx(0.0, abs=1e-6) and {x for r in labels for x in r} == {"no finding"}


def previous_token(layer: int, head: int):
    """An override that makes one head of one layer attend to the token before each query (the
    first token to itself) and every other head spread its attention evenly."""
    calls = []

    def override(site, weights, mask):
        weights = mask.to(weights.dtype) / mask.sum(-1, keepdim=True).clamp_min(1)
        if len(calls) == layer:
            t = weights.shape[-1]
            shifted = torch.zeros_like(weights[:, head])
            shifted[:, torch.arange(t), (torch.arange(t) - 1).clamp(min=0)] = 1.0
            weights[:, head] = shifted * mask[:, head]
        calls.append(site)
        return weights

    return override


def test_a_previous_token_head_is_found_and_only_it(tmp_path):
    classifier = load_classifier(save_tiny("bert", tmp_path / "bert", layers=3), device="cpu")
    with attention_override(previous_token(1, 0), in_order=False):
        ex = explain(classifier, TEXTS[0])
    rows = {(r["layer"], r["head"]): r for r in heads.overview(ex)}
    assert rows[(1, 0)]["finding"] == "previous" and rows[(1, 0)]["previous"] > 0.9
    assert all(r["finding"] is None for key, r in rows.items() if key != (1, 0))
    split = heads.split_overview([ex, ex, ex])
    found = {(r["layer"], r["head"]): r["finding"] for r in split}
    assert found[(1, 0)] == "previous" and sum(f is not None for f in found.values()) == 1


def test_same_word_pieces_are_measured_on_a_split_word(tmp_path):
    classifier = load_classifier(save_tiny("bert", tmp_path / "bert"), device="cpu")
    ex = explain(classifier, TEXTS[0])  # "unbelievable": un ##believ ##able
    row = heads.overview(ex)[0]
    assert row["same word"] is not None and row["same word_even"] == pytest.approx(2 / len(ex.subwords))
    assert heads.overview(explain(classifier, "the movie was good .")) [0]["same word"] is None


def test_a_model_without_layers_of_subword_heads_has_no_overview(checkpoint_dir):
    assert heads.overview(explain(load_classifier(checkpoint_dir / "tiny-hcan"), TEXTS[0])) == []


def test_the_first_tokens_share_of_special_tokens_is_what_the_word_shading_leaves_out(tmp_path):
    classifier = load_classifier(save_tiny("roberta", tmp_path / "roberta"), device="cpu")
    ex = explain(classifier, TEXTS[1])
    a = ex.attentions["subword.self"]
    special = torch.tensor([w < 0 for _, w in ex.subwords])
    for head in range(2):
        row = a.weights[0, -1, head, 0]
        assert heads.first_token_to_special(ex, head) == pytest.approx(float(row[special].sum()), abs=1e-6)
        assert 0 < heads.first_token_to_special(ex, head) < 1
