"""A hierattn plug-in: a BiGRU over the document's words, pooled by multi-head additive attention.

The document is read as one sequence of words (no sentence level). A bidirectional GRU encodes it,
and ``heads`` additive-attention heads pool it, each with its own context vector (Yang et al.
2016's attention, with Lin et al. 2017's several hops):

    u_t = tanh(W h_t + b),   a_{k,t} = softmax_t(u_t . c_k),   d = [sum_t a_{1,t} h_t ; ... ; sum_t a_{K,t} h_t]

and a linear layer classifies ``d``. Lin et al. found that heads trained by cross-entropy alone can
learn similar distributions; ``diversity`` > 0 adds their penalty ||A A^T - I||_F^2 (per document,
times ``diversity``) to the training loss, which pushes the heads towards different words.

The map it reports, ``word.target`` with axes (batch, head, key) at the word level and no sentence
axis, is what hierattn draws as target attention over the document's words, per head. Its weights
pass through ``intervene``, so the faithfulness tests (permutation, uniform, adversarial) reach it.
What a plug-in needs from hierattn: the contract (``Batch`` in, ``ClassifierOutput`` out), a
``ModelSpec``, and optionally the helpers used below.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from hierattn.contract import WORD, AttentionMap, Batch, ClassifierOutput
from hierattn.models.common import flatten_words, run_rnn
from hierattn.models.intervention import intervene
from hierattn.models.spec import Knob, ModelSpec


@dataclass
class BiGRUAttentionConfig:
    vocab_size: int  # set from the checkpoint's vocabulary
    num_classes: int  # set from its labels
    embed_dim: int = 100
    hidden: int = 50  # GRU units per direction
    heads: int = 4
    attention_dim: int = 100
    dropout: float = 0.3
    diversity: float = 0.0  # weight of the penalty ||A A^T - I||_F^2 in the training loss


class BiGRUAttention(nn.Module):
    def __init__(self, config: BiGRUAttentionConfig):
        super().__init__()
        self.config = c = config
        if c.heads < 1:
            raise ValueError(f"heads must be at least 1, got {c.heads}")
        self.embedding = nn.Embedding(c.vocab_size, c.embed_dim, padding_idx=0)
        self.gru = nn.GRU(c.embed_dim, c.hidden, batch_first=True, bidirectional=True)
        self.project = nn.Linear(2 * c.hidden, c.attention_dim)
        self.contexts = nn.Parameter(torch.randn(c.heads, c.attention_dim) * c.attention_dim ** -0.5)
        self.dropout = nn.Dropout(c.dropout)
        self.classifier = nn.Linear(c.heads * 2 * c.hidden, c.num_classes)

    def forward(self, batch: Batch, return_attentions: bool = True) -> ClassifierOutput:
        ids, mask = flatten_words(batch)  # (B, T): each document's words in reading order, (B, T) real
        h = run_rnn(self.gru, self.dropout(self.embedding(ids)), mask)  # (B, T, 2H), zeros at padding
        scores = torch.einsum("bta,ka->bkt", torch.tanh(self.project(h)), self.contexts)  # (B, K, T)
        keys = mask.unsqueeze(1).expand_as(scores)  # (B, K, T)
        # a large finite fill, not -inf: a document without words gets zeros, never NaN
        weights = torch.softmax(scores.masked_fill(~keys, -1e9), -1) * keys  # (B, K, T)
        weights = intervene("word.target", weights, keys)
        document = torch.einsum("bkt,btd->bkd", weights, h).flatten(1)  # (B, K * 2H)
        logits = self.classifier(self.dropout(document))  # (B, classes)

        loss = None
        if batch.labels is not None:
            loss = F.cross_entropy(logits, batch.labels)
            if self.training and self.config.diversity > 0 and self.config.heads > 1:
                eye = torch.eye(self.config.heads, device=weights.device)
                gram = weights @ weights.transpose(1, 2)  # (B, K, K)
                loss = loss + self.config.diversity * ((gram - eye) ** 2).sum((1, 2)).mean()
        attentions = {}
        if return_attentions:
            attentions["word.target"] = AttentionMap(weights, ("batch", "head", "key"), WORD, keys)
        return ClassifierOutput(logits=logits, loss=loss, attentions=attentions)


def display_name(config: dict) -> str:
    heads = config.get("heads", 4)
    return f"BiGRU + {heads}-head attention" + (" (diverse)" if config.get("diversity", 0) > 0 else "")


SPEC = ModelSpec(
    "bigru_attention", BiGRUAttention, BiGRUAttentionConfig, "BiGRU + multi-head attention (plug-in example)",
    display_name, listed=50,
    knobs=(Knob("diversity", "Head diversity penalty",
                "Lin et al. 2017: weight of ||A A^T - I||^2 in the training loss, pushing the heads apart; 0: none.",
                "float", (), 0.0, 1.0),),
    maps="per-head target attention over the document's words (one sequence, no sentence level)")
