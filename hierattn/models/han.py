"""HAN (Yang et al. 2016) as the HCAN paper uses it (Gao et al. 2018, section 4.2).

Embedding -> word BiGRU (50 per direction) -> additive word attention -> sentence vectors ->
sentence BiGRU -> additive sentence attention -> softmax classifier. The attention MLP has a
hidden layer of 200 units, as stated in the HCAN paper's section 4.2.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..data import Batch
from ..outputs import SENTENCE, WORD, AttentionMap, ClassifierOutput
from .common import classification_output, run_rnn, scatter_rows
from .layers import AdditiveAttention


@dataclass
class HANConfig:
    vocab_size: int
    num_classes: int
    embed_dim: int = 100
    hidden: int = 50  # GRU units per direction
    attention_dim: int = 200
    dropout: float = 0.1  # on embeddings and on the document vector


class HAN(nn.Module):
    def __init__(self, config: HANConfig):
        super().__init__()
        self.config = c = config
        self.embedding = nn.Embedding(c.vocab_size, c.embed_dim, padding_idx=0)
        self.word_rnn = nn.GRU(c.embed_dim, c.hidden, batch_first=True, bidirectional=True)
        self.word_attention = AdditiveAttention(2 * c.hidden, c.attention_dim)
        self.sentence_rnn = nn.GRU(2 * c.hidden, c.hidden, batch_first=True, bidirectional=True)
        self.sentence_attention = AdditiveAttention(2 * c.hidden, c.attention_dim)
        self.dropout = nn.Dropout(c.dropout)
        self.classifier = nn.Linear(2 * c.hidden, c.num_classes)

    def forward(self, batch: Batch, return_attentions: bool = True) -> ClassifierOutput:
        B, S, W = batch.word_ids.shape
        real = batch.sentence_mask.view(-1).nonzero().squeeze(1)  # rows of real sentences in (B*S)
        word_mask = batch.word_mask.view(B * S, W)[real]  # (n, W)
        x = self.dropout(self.embedding(batch.word_ids.view(B * S, W)[real]))  # (n, W, E)
        h = run_rnn(self.word_rnn, x, word_mask)  # (n, W, 2H)
        sentence_vectors, word_weights = self.word_attention(h, word_mask)  # (n, 2H), (n, W)
        sentences = scatter_rows(sentence_vectors, real, B * S).view(B, S, -1)  # (B, S, 2H)
        h = run_rnn(self.sentence_rnn, sentences, batch.sentence_mask)  # (B, S, 2H)
        document, sentence_weights = self.sentence_attention(h, batch.sentence_mask)  # (B, 2H), (B, S)
        logits = self.classifier(self.dropout(document))

        attentions = {}
        if return_attentions:
            attentions["word.target"] = AttentionMap(
                scatter_rows(word_weights, real, B * S).view(B, S, W), ("batch", "sentence", "key"), WORD,
                batch.word_mask)
            attentions["sentence.target"] = AttentionMap(
                sentence_weights, ("batch", "key"), SENTENCE, batch.sentence_mask)
        return classification_output(logits, batch, attentions)
