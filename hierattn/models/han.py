"""HAN (Yang et al. 2016) as the HCAN paper uses it (Gao et al. 2018, section 4.2).

Embedding -> word BiGRU (50 per direction) -> additive word attention -> sentence vectors ->
sentence BiGRU -> additive sentence attention -> softmax classifier. The attention MLP has a
hidden layer of 200 units, as stated in the HCAN paper's section 4.2.

``encoder`` swaps the recurrent units of both levels (the HAN report, section 2): ``"gru"`` (the
original), ``"lstm"`` (BiLSTM) or ``"cached_lstm"`` (bidirectional Cached LSTM, Xu et al. 2016,
with ``cache_groups`` memory groups; see ``recurrent.CachedLSTMCell`` for the convention).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from hierattn.contract import SENTENCE, WORD, AttentionMap, Batch, ClassifierOutput
from hierattn.models.common import classification_output, run_rnn, scatter_rows
from hierattn.models.layers import AdditiveAttention, CheapDropout
from hierattn.models.recurrent import Bidirectional, CachedLSTMCell
from hierattn.models.spec import Knob, ModelSpec


@dataclass
class HANConfig:
    vocab_size: int
    num_classes: int
    embed_dim: int = 100
    hidden: int = 50  # GRU units per direction
    attention_dim: int = 200
    dropout: float = 0.1  # on embeddings and on the document vector
    encoder: str = "gru"  # "gru", "lstm" or "cached_lstm"
    cache_groups: int = 5  # cached_lstm: memory groups (must divide hidden)
    # The context vectors u_w start at N(0, context_variance); None: N(0, 1 / attention_dim), the
    # default. The registry sweeps it to ask whether training or the start sets how sharp HAN's
    # attention ends (docs/RESULTS.md, "Where the attention starts").
    context_variance: float | None = None

    @staticmethod
    def query_start_variance(config: dict) -> float | None:
        """The variance v of N(0, v) that u_w started at, as a saved config means it."""
        if config.get("context_variance") is not None:
            return float(config["context_variance"])
        return 1.0 / config.get("attention_dim", HANConfig.attention_dim)


ENCODERS = ("gru", "lstm", "cached_lstm")


class HAN(nn.Module):
    def __init__(self, config: HANConfig):
        super().__init__()
        self.config = c = config
        self.embedding = nn.Embedding(c.vocab_size, c.embed_dim, padding_idx=0)
        if c.encoder not in ENCODERS:
            raise ValueError(f"encoder must be one of {', '.join(ENCODERS)}, got {c.encoder!r}")
        self.word_rnn = _encoder(c, c.embed_dim)
        self.word_attention = AdditiveAttention(2 * c.hidden, c.attention_dim, "word.target", c.context_variance)
        self.sentence_rnn = _encoder(c, 2 * c.hidden)
        self.sentence_attention = AdditiveAttention(2 * c.hidden, c.attention_dim, "sentence.target",
                                                    c.context_variance)
        self.dropout = CheapDropout(c.dropout)  # same state dict as nn.Dropout; its mask far cheaper on CPU
        self.classifier = nn.Linear(2 * c.hidden, c.num_classes)

    def forward(self, batch: Batch, return_attentions: bool = True) -> ClassifierOutput:
        B, S, W = batch.word_ids.shape
        real = batch.sentence_mask.view(-1).nonzero().squeeze(1)  # rows of real sentences in (B*S)
        word_mask = batch.word_mask.view(B * S, W)[real]  # (n, W)
        x = self.dropout(self.embedding(batch.word_ids.view(B * S, W)[real]))  # (n, W, E)
        h = _encode(self.word_rnn, x, word_mask)  # (n, W, 2H)
        sentence_vectors, word_weights = self.word_attention(h, word_mask)  # (n, 2H), (n, W)
        sentences = scatter_rows(sentence_vectors, real, B * S).view(B, S, -1)  # (B, S, 2H)
        h = _encode(self.sentence_rnn, sentences, batch.sentence_mask)  # (B, S, 2H)
        document, sentence_weights = self.sentence_attention(h, batch.sentence_mask)  # (B, 2H), (B, S)
        logits = self.classifier(self.dropout(document))

        attentions = {}
        if return_attentions:
            attentions["word.target"] = AttentionMap(
                scatter_rows(word_weights, real, B * S).view(B, S, W), ("batch", "sentence", "key"), WORD,
                batch.word_mask)
            attentions["sentence.target"] = AttentionMap(
                sentence_weights, ("batch", "key"), SENTENCE, batch.sentence_mask)
        return classification_output(logits, batch, attentions, document)


def _encoder(c: HANConfig, d_in: int) -> nn.Module:
    if c.encoder == "gru":
        return nn.GRU(d_in, c.hidden, batch_first=True, bidirectional=True)
    if c.encoder == "lstm":
        return nn.LSTM(d_in, c.hidden, batch_first=True, bidirectional=True)
    return Bidirectional(CachedLSTMCell(d_in, c.hidden, c.cache_groups), CachedLSTMCell(d_in, c.hidden, c.cache_groups))


def _encode(encoder: nn.Module, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(N, L, d_in), (N, L) -> (N, L, 2H) with zeros at padding."""
    if isinstance(encoder, nn.RNNBase):
        return run_rnn(encoder, x, mask)
    return encoder(x, mask)


def display_name(config: dict) -> str:
    return {"gru": "HAN", "lstm": "HAN (BiLSTM)", "cached_lstm": "HAN (Cached LSTM)"}.get(config.get("encoder",
                                                                                                     "gru"), "HAN")


SPEC = ModelSpec(
    "han", HAN, HANConfig, "HAN (hierarchical RNN + attention)", display_name, listed=1,
    knobs=(
        Knob("encoder", "Encoder",
             "Recurrent units of both levels: BiGRU (Yang et al.), BiLSTM, or Cached LSTM (memory groups with "
             "different forgetting rates).", "choice", ("gru", "lstm", "cached_lstm")),
    ),
    maps="word attention within each sentence and sentence attention over the document (target attention)")
