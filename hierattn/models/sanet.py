"""SANet: Self-Attention Network for text classification (Letarte et al. 2018, section 3).

Embedding -> + sinusoidal positions -> linear map to d -> N blocks of [single-head self-attention,
Add & Norm, feed-forward (one ReLU layer), Add & Norm] -> global max pooling over real words ->
linear classifier. Flat: the document is one sequence of words.

Readings of the paper:
- The attention score is softmax(X W_QK X^T) with W_QK = W_Q W_K^T, *without* the 1/sqrt(d) scale
  of Vaswani et al.: the paper writes it so (section 3). ``scaled=True`` adds the scale.
- Dropout 0.1 is applied to the output of each sub-layer before the residual sum, as the paper
  says; we also apply it to the embeddings, as the Transformer does.
- The positional encoding is added to the embeddings (dimension ``embed_dim``) before the linear
  map to d, following the order of the paper's Figure 1.
- ``attention=False`` is the paper's baseline: each self-attention layer is replaced by a
  feed-forward layer (Linear d->d, ReLU, Linear d->d), and the model exposes no attention.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from hierattn.contract import WORD, AttentionMap, Batch, ClassifierOutput
from hierattn.models.common import classification_output, flatten_words, pair_mask
from hierattn.models.intervention import intervene
from hierattn.models.layers import masked_max, masked_softmax
from hierattn.models.spec import Knob, ModelSpec


@dataclass
class SANetConfig:
    vocab_size: int
    num_classes: int
    embed_dim: int = 100  # base: 100, big: 200
    d: int = 128  # base: 128, big: 256
    blocks: int = 1  # base: 1, big: 2
    attention: bool = True  # False: the paper's no-attention baseline
    scaled: bool = False
    dropout: float = 0.1


def sinusoidal_positions(length: int, dim: int, device=None) -> torch.Tensor:
    """(length, dim): PE[pos, 2i] = sin(pos / 10000^(2i/dim)), PE[pos, 2i+1] = cos(...)."""
    pos = torch.arange(length, device=device, dtype=torch.float32).unsqueeze(1)
    rate = torch.exp(torch.arange(0, dim, 2, device=device, dtype=torch.float32) * (-math.log(10000.0) / dim))
    pe = torch.zeros(length, dim, device=device)
    pe[:, 0::2] = torch.sin(pos * rate)
    pe[:, 1::2] = torch.cos(pos * rate)[:, : dim // 2]
    return pe


class FeedForward(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.inner, self.outer = nn.Linear(d, d), nn.Linear(d, d)

    def forward(self, x):
        return self.outer(F.relu(self.inner(x)))


class SelfAttention(nn.Module):
    """Single-head dot-product self-attention over real words; padded rows and columns get 0."""

    def __init__(self, d: int, scaled: bool, site: str | None = None):
        super().__init__()
        self.site = site
        self.q, self.k, self.v = (nn.Linear(d, d, bias=False) for _ in range(3))
        self.scale = 1 / math.sqrt(d) if scaled else 1.0

    def forward(self, x: torch.Tensor, mask: torch.Tensor):
        # x: (B, T, d), mask: (B, T) -> out (B, T, d), weights (B, T, T)
        scores = self.q(x) @ self.k(x).transpose(1, 2) * self.scale
        pairs = mask[:, :, None] & mask[:, None, :]
        weights = masked_softmax(scores, pairs)
        if self.site is not None:
            weights = intervene(self.site, weights, pairs)
        return weights @ self.v(x), weights


class Block(nn.Module):
    def __init__(self, c: SANetConfig, number: int = 1):
        super().__init__()
        self.mixer = SelfAttention(c.d, c.scaled, f"word.self.block{number}") if c.attention else FeedForward(c.d)
        self.norm1, self.norm2 = nn.LayerNorm(c.d), nn.LayerNorm(c.d)
        self.ffn = FeedForward(c.d)
        self.dropout = nn.Dropout(c.dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor):
        weights = None
        if isinstance(self.mixer, SelfAttention):
            y, weights = self.mixer(x, mask)
        else:
            y = self.mixer(x)
        x = self.norm1(x + self.dropout(y)) * mask.unsqueeze(-1)
        x = self.norm2(x + self.dropout(self.ffn(x))) * mask.unsqueeze(-1)
        return x, weights


class SANet(nn.Module):
    def __init__(self, config: SANetConfig):
        super().__init__()
        self.config = c = config
        if c.embed_dim % 2:
            raise ValueError(f"embed_dim must be even for sinusoidal positions, got {c.embed_dim}")
        self.embedding = nn.Embedding(c.vocab_size, c.embed_dim, padding_idx=0)
        self.project = nn.Linear(c.embed_dim, c.d)
        self.blocks = nn.ModuleList(Block(c, i) for i in range(1, c.blocks + 1))
        self.dropout = nn.Dropout(c.dropout)
        self.classifier = nn.Linear(c.d, c.num_classes)

    @property
    def attention_free(self) -> bool:
        return not self.config.attention

    def forward(self, batch: Batch, return_attentions: bool = True) -> ClassifierOutput:
        ids, mask = flatten_words(batch)  # (B, T)
        x = self.embedding(ids) + sinusoidal_positions(ids.shape[1], self.config.embed_dim, ids.device)
        x = self.project(self.dropout(x)) * mask.unsqueeze(-1)  # (B, T, d)
        attentions = {}
        for i, block in enumerate(self.blocks, 1):
            x, weights = block(x, mask)
            if return_attentions and weights is not None:
                attentions[f"word.self.block{i}"] = AttentionMap(
                    weights, ("batch", "query", "key"), WORD, pair_mask(mask, 1).squeeze(1))
        document = masked_max(x, mask)
        return classification_output(self.classifier(document), batch, attentions, document)


def display_name(config: dict) -> str:
    size = "big" if config.get("blocks", 1) >= 2 and config.get("d", 128) >= 256 else "base"
    return f"SANet {size}" if config.get("attention", True) else f"SANet baseline ({size}, no attention)"


SPEC = ModelSpec(
    "sanet", SANet, SANetConfig, "SANet (self-attention network)", display_name, listed=3,
    knobs=(
        Knob("attention", "Self-attention",
             "Off: the SANet paper's baseline, each self-attention replaced by a feed-forward layer.", "bool"),
    ),
    maps="one word x word self-attention matrix over the document per block")
