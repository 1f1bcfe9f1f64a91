"""Self-attention beside what it passes on: attention rollout where self-attention layers stack
(Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers", eq. for rollout) and
gradient-weighted attention where they do not (a layer's weights times their gradient, Chefer et
al. 2021's relevance for one layer).

- **Rollout** over L stacked layers of the same positions: each layer's head-mean map A_l becomes
  0.5 A_l + 0.5 I (the residual connection carries half), rows renormalised, and the product
  A~_L ... A~_1 says how much of each input position reaches each output position. Only SANet with
  two or more blocks stacks self-attention over the same words.
- **Gradient-weighted attention**: for each map, mean over heads of max(0, A * dy/dA), y the
  predicted class's logit: where a weight both exists and pushes the prediction up. HCAN's maps
  (one layer per level, two parallel branches) and a one-block SANet get this.

Both come back as ``AttentionMap``s with the axes, level and mask of the raw map they explain,
heads averaged into one (batch of one), so every heatmap view draws them.
"""
from __future__ import annotations

from dataclasses import replace

import torch

from hierattn.analysis.explain import Explanation
from hierattn.checkpoint.classifier import Classifier
from hierattn.contract import AttentionMap
from hierattn.data.batches import encode_documents
from hierattn.models.intervention import attention_override

ROLLOUT, GRADIENT_WEIGHTED = "rollout", "gradient-weighted"


def _head_mean(a: AttentionMap) -> AttentionMap:
    if "head" not in a.axes:
        return a
    h = a.axis("head")
    return AttentionMap(a.weights.mean(h), a.axes[:h] + a.axes[h + 1:], a.level, a.mask.select(h, 0), a.kind)


def stacked_layers(ex: Explanation) -> list[str]:
    """Names of word self-attention maps that stack over the same positions (SANet's blocks), in
    the order the model applies them: by block number, so block10 comes after block2 (sorted as
    text, it came before)."""
    names = [n for n in ex.self_attention_names if ".block" in n and ex.attentions[n].axes == ("batch", "query",
                                                                                                 "key")]
    return sorted(names, key=_block_number)


def _block_number(name: str) -> tuple[str, int]:
    head, _, number = name.rpartition(".block")
    return head, int(number) if number.isdigit() else -1


def rollout(maps: list[torch.Tensor], mask: torch.Tensor) -> torch.Tensor:
    """(L, L) maps of stacked layers, first layer first, and the (L,) real positions -> the
    rolled-out (L, L) map over real positions (zeros elsewhere)."""
    real = mask.to(maps[0].dtype)
    eye = torch.diag(real)
    out = eye
    for a in maps:
        mixed = 0.5 * a + 0.5 * eye
        mixed = mixed / mixed.sum(-1, keepdim=True).clamp_min(1e-12)
        out = mixed @ out
    return out * real[:, None] * real[None, :]


def gradient_weighted(classifier: Classifier, ex: Explanation) -> dict[str, AttentionMap]:
    """max(0, A * dy/dA), heads averaged, for every self-attention map that takes an override."""
    label = ex.labels.index(ex.label)
    scales = {}

    def weigh(site, weights, mask):
        if site not in ex.attentions or not ex.attentions[site].is_self_attention:
            return weights
        scales[site] = torch.ones_like(weights, requires_grad=True)
        return weights * scales[site]  # d y / d scale = A * d y / d A, in the layer's own layout

    batch = encode_documents([ex.document], classifier.vocab).to(classifier.device)
    with attention_override(weigh), torch.enable_grad():
        logits = classifier.model(batch, return_attentions=False).logits
        names = list(scales)
        if not names:  # no self-attention map takes an override (HA-LSTM's runs inside its cell)
            return {}
        grads = torch.autograd.grad(logits[0, label], [scales[n] for n in names], allow_unused=True)
    out = {}
    for name, grad in zip(names, grads):
        raw = ex.attentions[name]
        if grad is None:
            continue
        relevance = grad.detach().float().cpu().clamp_min(0.0)
        # batch of one, one pass (an override reads all sentences at once): the layer's rows are the
        # map's sentences (or its one document), so the layout is the map's without its batch axis
        relevance = relevance.reshape(raw.weights.shape) * raw.mask
        out[name] = _head_mean(replace(raw, weights=relevance))
    return out


def layered(ex: Explanation) -> dict[str, AttentionMap]:
    """Rollout of a map with a ``layer`` axis (a transformer's token attention) through every layer
    up to each, and of the maps summed from it (``AttentionMap.source``: its words and sentences),
    by the model's own rule applied to the rolled-out tokens. Each comes back with the raw map's
    axes less ``head`` (batch, layer, query, key): layer l holds the rollout of layers 1..l."""
    from hierattn.models.subword_maps import aggregate  # the rule the model sums its words by

    out = {}
    for name, a in ex.attentions.items():
        if "layer" not in a.axes or not a.is_self_attention or a.source is not None:
            continue
        mean = _head_mean(a)
        weights, mask = mean.weights[0].float(), mean.mask[0, 0].diagonal()  # (layer, T, T), (T,)
        rolled = torch.stack([rollout(list(weights[: i + 1]), mask) for i in range(weights.shape[0])]).unsqueeze(0)
        out[name] = replace(mean, weights=rolled)
        word = torch.tensor([w for _, w in ex.subwords] or [-1] * weights.shape[-1])
        sentence_of = [s for s, sentence in enumerate(ex.document.sentences) for _ in sentence.tokens]
        for derived, d in ex.attentions.items():
            if d.source != name or not d.is_self_attention:
                continue
            units = word if d.level == "word" else torch.tensor([sentence_of[w] if w >= 0 else -1 for w in word])
            member = (units.unsqueeze(-1) == torch.arange(d.weights.shape[-1])).float().unsqueeze(0)
            unit_mask = _head_mean(d).mask
            out[derived] = AttentionMap(aggregate(rolled, member) * unit_mask, _head_mean(d).axes,
                                        d.level, unit_mask, d.kind, d.source)
    order = ("word", "sentence", "subword")  # the words first: the view a reader compares with the other models
    return dict(sorted(out.items(), key=lambda item: order.index(item[1].level) if item[1].level in order else 9))


def rolled_out(ex: Explanation) -> dict[str, AttentionMap]:
    """Rollout of each stacked layer up to it (the first layer's rollout is itself mixed with the
    residual); {} where layers do not stack."""
    if any("layer" in a.axes for a in ex.attentions.values()):
        return layered(ex)
    names = stacked_layers(ex)
    if len(names) < 2:
        return {}
    first = ex.attentions[names[0]]
    mask = first.mask[0].diagonal()
    out = {}
    for i in range(2, len(names) + 1):
        maps = [ex.attentions[n].weights[0].float() for n in names[:i]]
        out[names[i - 1]] = replace(first, weights=rollout(maps, mask).unsqueeze(0))
    return out


def beside_raw(classifier: Classifier, ex: Explanation) -> tuple[str, dict[str, AttentionMap]]:
    """Which derived view applies to this model and its maps: rollout for stacked layers,
    gradient-weighted attention otherwise ({} for a model without self-attention)."""
    rolled = rolled_out(ex)
    if rolled:
        return ROLLOUT, rolled
    return GRADIENT_WEIGHTED, gradient_weighted(classifier, ex) if ex.self_attention_names else {}
