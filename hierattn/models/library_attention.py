"""The attention function hierattn runs a transformers model with, registered with the library's
``AttentionInterface`` under ``IMPLEMENTATION``: eager attention (SDPA and flash attention return no
weights) that passes its probabilities through ``intervention.intervene`` before using them, so the
interventions act on every layer's token attention (site ``subword.self``), and writes each layer's
weights into the pass's stack (``subword_maps.keep_layer``), the maps' one copy."""
from __future__ import annotations

import torch
from torch import nn

from hierattn.models.intervention import intervene
from hierattn.models.subword_maps import SITE, keep_layer

IMPLEMENTATION = "hierattn_eager"


def register() -> None:
    """Our eager attention, and transformers' eager mask for it, under ``IMPLEMENTATION`` (once)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    if IMPLEMENTATION not in AttentionInterface._global_mapping:
        AttentionInterface.register(IMPLEMENTATION, _attention)
        AttentionMaskInterface.register(IMPLEMENTATION, eager_mask)


def _attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Eager scaled dot-product attention whose probabilities pass through ``intervene``.
    query, key, value: (B, H, T, d_head); attention_mask: (B, 1, T, T), additive (0 where a key is
    real) or bool (True there), or None. Returns (B, T, H, d_head) and the weights (B, H, T, T)."""
    scores = torch.matmul(query, key.transpose(2, 3)) * (query.shape[-1] ** -0.5 if scaling is None else scaling)
    if attention_mask is None:
        real = torch.ones_like(scores, dtype=torch.bool)
    elif attention_mask.dtype == torch.bool:
        real = attention_mask.expand_as(scores)
        scores = scores.masked_fill(~real, torch.finfo(scores.dtype).min)
    else:
        real = (attention_mask == 0).expand_as(scores)
        scores = scores + attention_mask
    weights = torch.softmax(scores.float(), dim=-1).to(query.dtype)
    weights = intervene(SITE, weights, real)
    keep_layer(weights)
    used = nn.functional.dropout(weights, p=dropout, training=module.training)
    return torch.matmul(used, value).transpose(1, 2).contiguous(), weights  # the map: before dropout
