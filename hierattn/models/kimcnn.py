"""Kim (2014) CNN baseline as the HCAN paper runs it (section 4.2): embedding -> convolutions with
windows 3, 4 and 5 (100 maps each, ReLU) -> max pooling over time -> dropout 0.5 -> softmax layer.
The document is read flat.

It has no attention. For the app it exposes ``word.maxpool``, of kind ``coverage``: for each word,
the share of the 300 filters whose max-pooled window covers it (normalised over the document's
words). It says which words the pooled features came from; it is not an attention distribution and
the app says so.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from hierattn.contract import COVERAGE, WORD, AttentionMap, Batch, ClassifierOutput
from hierattn.models.common import classification_output, flatten_words
from hierattn.models.layers import max_over_windows
from hierattn.models.spec import ModelSpec


@dataclass
class KimCNNConfig:
    vocab_size: int
    num_classes: int
    embed_dim: int = 100
    filter_sizes: tuple[int, ...] = (3, 4, 5)
    maps: int = 100
    dropout: float = 0.5


class KimCNN(nn.Module):
    def __init__(self, config: KimCNNConfig):
        super().__init__()
        self.config = c = config
        self.embedding = nn.Embedding(c.vocab_size, c.embed_dim, padding_idx=0)
        self.convs = nn.ModuleList(nn.Conv1d(c.embed_dim, c.maps, k) for k in c.filter_sizes)
        self.dropout = nn.Dropout(c.dropout)
        self.classifier = nn.Linear(c.maps * len(c.filter_sizes), c.num_classes)

    def forward(self, batch: Batch, return_attentions: bool = True) -> ClassifierOutput:
        ids, mask = flatten_words(batch)  # (B, T)
        x = self.dropout(self.embedding(ids)) * mask.unsqueeze(-1)  # (B, T, E)
        widest = max(self.config.filter_sizes)
        if x.shape[1] < widest:  # a short document still gets one window per filter, padded with zeros
            x = F.pad(x, (0, 0, 0, widest - x.shape[1]))
        x = x.transpose(1, 2)  # (B, E, T')
        lengths = mask.sum(1)
        pooled, coverage = [], torch.zeros(mask.shape, device=x.device, dtype=x.dtype)
        for k, conv in zip(self.config.filter_sizes, self.convs):
            maps = F.relu(conv(x))  # (B, maps, T' - k + 1)
            values, starts = max_over_windows(maps, lengths, k)  # (B, maps)
            pooled.append(values)
            if return_attentions:  # which words each filter's winning window covers
                for offset in range(k):
                    pos = (starts + offset).clamp(max=mask.shape[1] - 1)
                    hit = (starts + offset < mask.shape[1]).to(x.dtype)
                    coverage.scatter_add_(1, pos, hit)
        document = torch.cat(pooled, 1)
        logits = self.classifier(self.dropout(document))
        attentions = {}
        if return_attentions:
            coverage = coverage * mask
            share = coverage / coverage.sum(1, keepdim=True).clamp(min=1e-12)
            attentions["word.maxpool"] = AttentionMap(share, ("batch", "key"), WORD, mask, kind=COVERAGE)
        return classification_output(logits, batch, attentions, document)


def display_name(config: dict) -> str:
    return "Kim CNN"


SPEC = ModelSpec(
    "kimcnn", KimCNN, KimCNNConfig, "Kim CNN (no attention)", display_name, listed=6,
    maps="a coverage map, the share of its max-pooled filters whose winning window covers each word")
