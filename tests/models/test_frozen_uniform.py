"""Wiegreffe & Pinter's frozen-uniform models: trained and run with every
attention site frozen to an even spread, recorded in config.json, loaded as such."""
from __future__ import annotations

import pytest
import torch

from hierattn.checkpoint.reading import load_classifier
from hierattn.checkpoint.writing import save_checkpoint
from hierattn.contract import Batch
from hierattn.data.text import TextConfig
from hierattn.models import REGISTRY, build_model, display_name, model_config_dict
from tests.tiny import LABELS

FREEZABLE = ["han", "hcan", "sanet", "mahnn", "transformer"]  # their attention goes through an intervention site


def _batch(vocab_size: int = 40) -> Batch:
    torch.manual_seed(0)
    ids = torch.randint(2, vocab_size, (2, 3, 7))
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, 2, 4:] = False
    mask[0, 2, :] = False
    return Batch(ids * mask, mask, mask.any(-1), torch.tensor([0, 1]))


@pytest.mark.parametrize("model_type", FREEZABLE)
def test_every_attention_site_is_an_even_spread_in_training_and_at_inference(model_type):
    model = build_model(model_type, {"vocab_size": 40, "num_classes": 3, "attention_weights": "uniform"})
    batch = _batch()
    for training in (True, False):
        model.train(training)
        out = model(batch)
        for name, a in out.attentions.items():
            if name.endswith(".semantic"):  # MahNN's semantical attention is over hidden units, not keys
                continue
            if a.source:  # summed from a frozen site (a transformer's words and sentences from its tokens)
                continue
            real = a.mask.to(a.weights.dtype)
            even = real / real.sum(-1, keepdim=True).clamp_min(1.0)
            torch.testing.assert_close(a.weights * real, even * (real.sum(-1, keepdim=True) > 0), msg=name)
    out.logits.sum().backward()  # it trains: the rest of the model gets gradients
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


@pytest.mark.parametrize("model_type", sorted(set(REGISTRY) - set(FREEZABLE)))
def test_a_model_whose_attention_cannot_be_frozen_is_refused(model_type):
    """HA-LSTM's window attention lives inside its cell, where no override reaches; the baselines
    have none: "frozen" would silently change nothing."""
    with pytest.raises(ValueError, match="no attention site that can be frozen"):
        build_model(model_type, {"vocab_size": 40, "num_classes": 3, "attention_weights": "uniform"})


def test_a_frozen_uniform_checkpoint_says_so_and_loads_frozen(tmp_path, tiny_vocab):
    model = build_model("han", {"vocab_size": len(tiny_vocab), "num_classes": 4, "embed_dim": 8, "hidden": 4,
                                "attention_weights": "uniform"})
    assert model_config_dict(model)["attention_weights"] == "uniform"
    assert display_name("han", model_config_dict(model)) == "HAN (attention frozen uniform)"
    path = save_checkpoint(tmp_path / "han-uniform", model, "han", tiny_vocab, LABELS, TextConfig(4, 8), {})
    loaded = load_classifier(path, device="cpu")
    assert getattr(loaded.model, "frozen_uniform", False) and loaded.display_name.startswith("HAN (attention frozen")
    learned = build_model("han", {"vocab_size": len(tiny_vocab), "num_classes": 4, "embed_dim": 8, "hidden": 4})
    assert set(learned.state_dict()) == set(model.state_dict())  # the twin's layout
    assert "attention_weights" not in model_config_dict(learned)
    with pytest.raises(ValueError, match="attention_weights must be one of learned, uniform"):
        build_model("han", {"vocab_size": 10, "num_classes": 2, "attention_weights": "frozen"})


def test_hcans_target_only_twin_freezes_the_target_attention_and_trains_its_self_attention(tmp_path, tiny_vocab):
    """The twin that tests the attention the app paints: HCAN's target attention an even spread,
    both self-attentions as computed (the full twin flattens those too); saved and loaded as such.
    A model with no target attention is refused (freezing would change nothing)."""
    model = build_model("hcan", {"vocab_size": len(tiny_vocab), "num_classes": 4, "d": 16, "heads": 2,
                                 "attention_weights": "target-uniform"})
    out = model.eval()(_batch(len(tiny_vocab)))
    for name, a in out.attentions.items():
        real = a.mask.to(a.weights.dtype)
        even = real / real.sum(-1, keepdim=True).clamp_min(1.0)
        gap = float(((a.weights - even) * real).abs().max().detach())
        assert (gap < 1e-6) == name.endswith(".target"), (name, gap)
    config = model_config_dict(model)
    assert config["attention_weights"] == "target-uniform"
    assert display_name("hcan", config) == "HCAN (target attention frozen uniform)"
    path = save_checkpoint(tmp_path / "hcan-target", model, "hcan", tiny_vocab, LABELS, TextConfig(4, 8), {})
    loaded = load_classifier(path, device="cpu")
    assert loaded.model.frozen_sites == "target"
    with pytest.raises(ValueError, match="no target attention site"):
        build_model("sanet", {"vocab_size": 40, "num_classes": 3, "attention_weights": "target-uniform"})
