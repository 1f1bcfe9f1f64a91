"""HCAN's target vector starts at the scale of a learned query: started at
N(0, 1/d) the target attention began, and stayed, an even spread."""
from __future__ import annotations

import json
import math

import torch

from hierattn.checkpoint.reading import load_classifier
from hierattn.checkpoint.writing import save_checkpoint
from hierattn.data.text import TextConfig
from hierattn.models import build_model, model_config_dict
from hierattn.models.layers import ConvMultiHeadTargetAttention
from tests.conftest import REPO
from tests.models.test_frozen_uniform import _batch
from tests.tiny import LABELS


def _from_even(model) -> float:
    """Mean Jensen-Shannon divergence of the word target attention (each sentence, each head) from an
    even spread over the same words, on a batch, at initialisation."""
    from hierattn.analysis.attention_tests import even_spread, jsd

    model.eval()
    with torch.no_grad():
        a = model(_batch(200)).attentions["word.target"]
    real = a.mask.unsqueeze(1).expand_as(a.weights) if a.weights.dim() > a.mask.dim() else a.mask
    d = jsd(a.weights.float(), even_spread(a.weights.float(), real))
    return float(d[real.sum(-1) >= 2].mean())


def test_the_target_vector_starts_at_the_scale_of_a_query_and_its_attention_is_not_flat():
    config = {"vocab_size": 200, "num_classes": 3, "d": 64, "heads": 4}
    torch.manual_seed(0)
    new = build_model("hcan", config)
    torch.manual_seed(0)
    old = build_model("hcan", {**config, "target_start": "scaled"})
    target, old_target = (next(m.target.detach() for m in model.modules()
                               if isinstance(m, ConvMultiHeadTargetAttention)) for model in (new, old))
    assert model_config_dict(new)["target_start"] == "normal"
    assert abs(float(target.norm()) / math.sqrt(64) - 1) < 0.35  # N(0, 1): norm about sqrt(d)
    assert abs(float(old_target.norm()) - 1) < 0.35  # N(0, 1/d): norm about 1
    assert _from_even(new) > 10 * _from_even(old)  # the old start's softmax is nearly even


def test_a_config_written_before_the_key_loads_with_the_old_start(tmp_path, tiny_vocab):
    model = build_model("hcan", {"vocab_size": len(tiny_vocab), "num_classes": 4, "d": 16, "heads": 2,
                                 "target_start": "scaled"})
    path = save_checkpoint(tmp_path / "old-hcan", model, "hcan", tiny_vocab, LABELS, TextConfig(4, 8), {})
    config = json.loads((path / "config.json").read_text())
    del config["model_config"]["target_start"]  # as the older checkpoints were written
    (path / "config.json").write_text(json.dumps(config))
    loaded = load_classifier(path, device="cpu")
    assert loaded.model.config.target_start == "scaled"
    for a, b in zip(model.state_dict().values(), loaded.model.state_dict().values()):
        torch.testing.assert_close(a.half().float(), b.float())  # the same weights: it predicts as before


def test_the_shipped_hcans_were_trained_with_the_new_start_and_their_spread_is_recorded():
    for dataset in ("tweets", "bbc-news"):
        config = json.loads((REPO / "checkpoints" / f"{dataset}-hcan" / "config.json").read_text())
        assert config["model_config"]["target_start"] == "normal"
        recorded = json.loads((REPO / "results" / "spread" / f"{dataset}.json").read_text())
        by_name = {r["checkpoint"]: r for r in recorded["checkpoints"]}
        new, old, han = (by_name[f"{dataset}-hcan"], by_name[f"{dataset}-hcan, T from N(0, 1/d)"],
                         by_name[f"{dataset}-han"])
        assert recorded["documents"] >= 223 and new["target_start"] == "normal" and old["target_start"] == "scaled"
        word = {k: r["levels"]["word"]["jsd"][0] for k, r in (("new", new), ("old", old), ("han", han))}
        assert word["new"] > 10 * word["old"] and word["han"] > word["new"]  # the figures RESULTS.md states


def test_the_start_variance_of_hcans_target_and_hans_context_is_a_config_and_the_probe_reads_it():
    """The registry's sweep of the start: T ~ N(0, v) (per head of d/h entries, norm about sqrt(v d/h)),
    u_w ~ N(0, v) (norm about sqrt(v d_att)); ``probe.query_norms`` reports them per site and head."""
    from hierattn.experiments.probe import query_norms

    torch.manual_seed(0)
    hcan = build_model("hcan", {"vocab_size": 50, "num_classes": 3, "d": 128, "heads": 4, "target_variance": 10.0})
    norms = query_norms(hcan)
    assert set(norms) == {"word.target", "sentence.target"} and len(norms["word.target"]) == 4
    assert all(abs(n / math.sqrt(10 * 32) - 1) < 0.35 for n in norms["word.target"])
    han = build_model("han", {"vocab_size": 50, "num_classes": 3, "context_variance": 0.1})
    default = build_model("han", {"vocab_size": 50, "num_classes": 3})
    assert abs(query_norms(han)["word.target"][0] / math.sqrt(0.1 * 200) - 1) < 0.2
    assert abs(query_norms(default)["word.target"][0] - 1) < 0.2  # N(0, 1 / attention_dim): norm about 1
    assert model_config_dict(hcan)["target_variance"] == 10.0
