"""Which heads matter (hierattn/analysis/head_importance.py): a planted idle head (its value
projection zeroed: it writes nothing) moves nothing when made even; a planted decisive head (the only
head of the last layer that writes) moves the prediction; every head's drop equals a direct pass
with that head alone made even, which the batched measurement must match."""
from __future__ import annotations

import pytest
import torch

from hierattn.analysis import head_importance
from hierattn.analysis.head_importance import HeadSite, document_drops, heads_of, split_drops
from hierattn.checkpoint.reading import load_classifier
from hierattn.data.text import tokenize
from hierattn.models.intervention import attention_override
from tests.models.tiny_transformers import TEXTS, save_tiny

HEAD = 8  # tiny BERT: 16 wide, 2 heads of 8


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A tiny BERT whose head 2 of layer 1 writes nothing and whose head 1 of layer 2 is the only
    head of its layer that writes, eight times louder (so head 2 of layer 2 writes nothing either)."""
    classifier = load_classifier(save_tiny("bert", tmp_path_factory.mktemp("planted") / "b"), device="cpu")
    layers = classifier.model.encoder.bert.encoder.layer
    with torch.no_grad():
        idle = layers[0].attention.self.value
        idle.weight[HEAD:] = 0
        idle.bias[HEAD:] = 0
        loud = layers[1].attention.self.value
        loud.weight[HEAD:] = 0
        loud.bias[HEAD:] = 0
        loud.weight[:HEAD] *= 8
        layers[1].attention.self.query.weight[:HEAD] *= 10  # and it looks where it looks: far from even
    return classifier


def _document(classifier, text):
    return classifier.vocab.within_window(tokenize(text, classifier.text_config))


def _alone(classifier, document, head: HeadSite) -> float:
    """A direct computation: one pass with ``head`` alone made even, one as trained."""
    calls = {}

    def even(site, weights, mask):
        layer = calls.get(site, 0)
        calls[site] = layer + 1
        if site != head.site or layer != head.layer:
            return weights
        out = weights.clone()
        real = mask[:, head.head].to(weights.dtype)
        out[:, head.head] = real / real.sum(-1, keepdim=True)
        return out

    batch = head_importance._batch(classifier, [document])
    with torch.inference_mode():
        before = torch.softmax(classifier.model(batch, return_attentions=False).logits.float(), -1)[0]
        with attention_override(even):
            after = torch.softmax(classifier.model(batch, return_attentions=False).logits.float(), -1)[0]
    predicted = int(before.argmax())
    return float(before[predicted] - after[predicted])


def test_a_planted_idle_head_moves_nothing_and_a_planted_decisive_head_moves_most(planted):
    for text in TEXTS:
        document = _document(planted, text)
        drops = document_drops(planted, document)
        assert set(drops) == set(heads_of(planted, document)) and len(drops) == 4
        loud = HeadSite("subword.self", 1, 0)
        for idle in (HeadSite("subword.self", 0, 1), HeadSite("subword.self", 1, 1)):
            assert abs(drops[idle]) < 1e-6, drops
        assert abs(drops[loud]) > 0.02, drops
        for head, drop in drops.items():  # batched copies, each its own head: as one head at a time
            assert drop == pytest.approx(_alone(planted, document, head), abs=1e-5)


def test_over_a_split_an_idle_head_never_matters_and_the_interval_holds_the_mean(planted):
    documents = [_document(planted, t) for t in TEXTS * 4]
    found = {d.head: d for d in split_drops(planted, documents)}
    idle = found[HeadSite("subword.self", 0, 1)]
    assert not idle.matters and idle.low <= idle.mean <= idle.high and abs(idle.mean) < 1e-6
    assert all(d.low <= d.mean <= d.high and d.documents == len(documents) for d in found.values())


def test_an_hcans_target_and_self_attention_heads_are_each_measured(checkpoint_dir):
    classifier = load_classifier(checkpoint_dir / "tiny-hcan", device="cpu")
    document = tokenize("The team won the match. The fans cheered all night.", classifier.text_config)
    heads = heads_of(classifier, document)
    sites = {h.site for h in heads}
    assert any("self" in s for s in sites) and any("target" in s for s in sites), sites
    drops = document_drops(classifier, document)
    assert set(drops) == set(heads) and all(abs(d) <= 1 for d in drops.values())
    for head in heads[:3]:
        assert drops[head] == pytest.approx(_alone(classifier, document, head), abs=1e-5)


def test_the_stats_command_gives_each_heads_drop_over_a_split_with_its_interval(tmp_path, capsys):
    import json

    from hierattn.cli import main
    from tests.conftest import REPO

    out = tmp_path / "report.json"
    assert main(["stats", "--checkpoint", str(REPO / "checkpoints" / "tweets-transformer"), "--documents", "6",
                 "--heads-matter", "--json", str(out)]) == 0
    said = capsys.readouterr().out
    assert "which heads matter over 6 documents (Michel et al. 2019)" in said
    rows = json.loads(out.read_text())["heads_matter"]
    assert len(rows) == 16 and {r["site"] for r in rows} == {"subword.self"}  # 4 layers x 4 heads
    assert all(r["low"] <= r["drop"] <= r["high"] and r["documents"] == 6 for r in rows)
    assert all(r["matters"] == (r["low"] > head_importance.MATTERS) for r in rows)
