"""MahNN: multi-granularity attention-based hybrid network (Liu et al. 2020, section III).

Embedding -> BiLSTM (100 per direction) -> L channels, each the BiLSTM states reweighted by a
syntactical attention over words (eq. 4-12) and, unless ``semantic=False`` (the paper's
``MahNN-rv``), a semantical attention over hidden dimensions (eq. 13-14) -> the channels stacked
as the input channels of a CNN (filter sizes 3/4/5 x 100 maps, ReLU, max pool, eq. 15-17) ->
dropout -> softmax layer (eq. 18). Dropout on the embeddings, the CNN input and the penultimate
layer (section IV.B). The document is read flat.

Readings of the paper where it is garbled or silent:
- Eq. (4) prints M_l[i,i] = tanh([h_i, W_l h_i] + b_l), which does not give a word x word matrix.
  We read it as the bilinear association M_l[i, j] = tanh(h_i^T W_l h_j + b_l), one W_l
  (2H x 2H) and scalar b_l per channel: the only reading that yields the "association between
  the i-th and the j-th word" the text describes.
- Channel masks V_l ~ Bernoulli(p_l) element-wise (eq. 5). The paper gives no p_l; the channels
  are meant to be perturbed differently ("diversification caused by data perturbation"), so
  p_l runs evenly from ``keep_max`` to ``keep_min`` over the channels (one channel: ``keep_max``).
  Training samples fresh masks every step; at test time A_l = p_l * M_l, the mask's expectation
  (dropout's rule), so predictions and the attention shown in the app are deterministic.
- Column sums s_lk = sum_x A_l[x, k] run over real words x only, and padded words k get -inf
  before the softmax (eq. 8 with -999999 taken to its limit).
- Eq. (13) conflicts with its own text. As printed, the softmax sums over i, the words
  (sum_i exp(score_li)), which would make it a second attention over words, per dimension. The
  text says it computes "the semantical importance weight of each dimension in the input element",
  a "coarser-grained attention at the latent semantical space" that "assigns different learning
  speeds to each dimension of the hidden state". We follow the text: for each word and channel, a
  softmax over the 2H hidden dimensions, score_li = W_l1 sigmoid(W_l2 h_i + b_l), with
  W_l2: 2H -> ``attention_dim``. (Over words, the two attentions would both weigh words and the
  model would have no attention over dimensions at all.)
- Eq. (14), c_li = a_li (a'_li ⊙ h_i), multiplies h_i by two softmax outputs (~1/n and ~1/2H), which
  would shrink the CNN input by orders of magnitude. We divide each distribution by its own largest
  weight (``rescale="peak"``): c_li = (a_li / max_k a_lk) (a'_li / max_j a'_lij) ⊙ h_i. That is eq. (14)
  up to one positive factor per document and channel (and per word for a'), uniform attention leaves
  h_i unchanged, and |c_li| <= |h_i| element-wise for any length, so the CNN input stays within the
  BiLSTM's range. Checkpoints written before this rule multiplied by the lengths instead
  (``rescale="length"``: n a_li and 2H a'_li, implied by a config.json without the key). On a
  1,000-word document the syntactical softmax over column sums of tanh is near one-hot, and n a_li
  then inflated one word about a thousandfold; those checkpoints load and predict as before.
  The exposed attention maps are the unscaled distributions either way.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from hierattn.contract import HIDDEN, WORD, AttentionMap, Batch, ClassifierOutput
from hierattn.models.common import classification_output, flatten_words, run_rnn
from hierattn.models.intervention import intervene
from hierattn.models.layers import masked_softmax, max_over_windows
from hierattn.models.spec import Knob, ModelSpec


@dataclass
class MahNNConfig:
    vocab_size: int
    num_classes: int
    embed_dim: int = 100
    hidden: int = 100  # LSTM units per direction (Table 3)
    channels: int = 3  # L: MahNN-1/3/5/7
    semantic: bool = True  # False: MahNN-rv
    attention_dim: int = 100  # semantical attention hidden size
    filter_sizes: tuple[int, ...] = (3, 4, 5)
    maps: int = 100
    keep_max: float = 0.9
    keep_min: float = 0.5
    dropout: float = 0.5
    rescale: str = "peak"  # eq. 14: "peak" (divide by the largest weight) or "length" (checkpoints before the fix)
    # What a config.json written before a key existed means by its absence.
    LEGACY: ClassVar[dict] = {"rescale": "length"}


class MahNN(nn.Module):
    def __init__(self, config: MahNNConfig):
        super().__init__()
        self.config = c = config
        if not 0 < c.keep_min <= c.keep_max <= 1:
            raise ValueError("need 0 < keep_min <= keep_max <= 1")
        if c.rescale not in ("peak", "length"):
            raise ValueError(f"rescale must be 'peak' or 'length', got {c.rescale!r}")
        L, d = c.channels, 2 * c.hidden
        self.embedding = nn.Embedding(c.vocab_size, c.embed_dim, padding_idx=0)
        self.rnn = nn.LSTM(c.embed_dim, c.hidden, batch_first=True, bidirectional=True)
        self.association = nn.Parameter(torch.randn(L, d, d).mul_(d ** -1))  # W_l
        self.association_bias = nn.Parameter(torch.zeros(L))  # b_l
        keep = torch.linspace(c.keep_max, c.keep_min, L) if L > 1 else torch.tensor([c.keep_max])
        self.register_buffer("keep", keep, persistent=False)
        if c.semantic:
            self.semantic_in = nn.Parameter(torch.randn(L, d, c.attention_dim).mul_(d ** -0.5))  # W_l2
            self.semantic_bias = nn.Parameter(torch.zeros(L, c.attention_dim))
            self.semantic_out = nn.Parameter(torch.randn(L, c.attention_dim, d).mul_(c.attention_dim ** -0.5))  # W_l1
        self.convs = nn.ModuleList(nn.Conv2d(L, c.maps, (k, d)) for k in c.filter_sizes)
        self.dropout = nn.Dropout(c.dropout)
        self.classifier = nn.Linear(c.maps * len(c.filter_sizes), c.num_classes)

    def forward(self, batch: Batch, return_attentions: bool = True) -> ClassifierOutput:
        c = self.config
        ids, mask = flatten_words(batch)  # (B, T)
        h = run_rnn(self.rnn, self.dropout(self.embedding(ids)), mask)  # (B, T, 2H), zeros at padding
        lengths = mask.sum(1).clamp(min=1).to(h.dtype)  # (B,)

        # Syntactical attention, eq. 4-10: (B, L, T, T) association, masked, column sums, softmax.
        M = torch.tanh(torch.einsum("bid,lde,bje->blij", h, self.association, h)
                       + self.association_bias.view(1, -1, 1, 1))
        keep = self.keep.view(1, -1, 1, 1).to(h.dtype)
        A = M * torch.bernoulli(keep.expand_as(M)) if self.training else M * keep
        A = A * mask[:, None, :, None]  # only real words x contribute to column k
        syntactic = masked_softmax(A.sum(2), mask.unsqueeze(1))  # (B, L, T)
        syntactic = intervene("word.syntactic", syntactic, mask.unsqueeze(1))
        if c.rescale == "length":
            channels = (syntactic * lengths.view(-1, 1, 1)).unsqueeze(-1) * h.unsqueeze(1)  # (B, L, T, 2H)
        else:
            channels = _by_peak(syntactic).unsqueeze(-1) * h.unsqueeze(1)

        semantic = None
        if c.semantic:  # eq. 13-14: a distribution over hidden dimensions for every word and channel
            inner = torch.sigmoid(torch.einsum("btd,lda->blta", h, self.semantic_in) + self.semantic_bias[None, :,
                                                                                                          None])
            semantic = torch.softmax(torch.einsum("blta,lad->bltd", inner, self.semantic_out), -1)
            semantic = semantic * mask[:, None, :, None]
            channels = channels * semantic * h.shape[-1] if c.rescale == "length" else channels * _by_peak(semantic)

        features = self._convolve(self.dropout(channels), mask)  # (B, maps * filters)
        logits = self.classifier(self.dropout(features))
        attentions = {}
        if return_attentions:
            attentions["word.syntactic"] = AttentionMap(
                syntactic, ("batch", "channel", "key"), WORD, mask.unsqueeze(1).expand_as(syntactic))
            if semantic is not None:
                attentions["hidden.semantic"] = AttentionMap(
                    semantic, ("batch", "channel", "position", "key"), HIDDEN,
                    mask[:, None, :, None].expand_as(semantic))
        return classification_output(logits, batch, attentions, features)

    def _convolve(self, channels: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Multi-channel CNN with max pooling over the windows that start inside the real words.

        A document shorter than a filter is padded with zeros to the filter's width, so it still
        has one window; the windows counted do not depend on the batch's padding.
        """
        B, L, T, d = channels.shape
        widest = max(self.config.filter_sizes)
        if T < widest:
            channels = F.pad(channels, (0, 0, 0, widest - T))
        lengths = mask.sum(1)
        pooled = []
        for k, conv in zip(self.config.filter_sizes, self.convs):
            maps = F.relu(conv(channels)).squeeze(-1)  # (B, maps, T' - k + 1)
            pooled.append(max_over_windows(maps, lengths, k)[0])
        return torch.cat(pooled, 1)


def _by_peak(distribution: torch.Tensor) -> torch.Tensor:
    """Eq. 14's factor: a distribution over the last axis divided by its largest weight, in [0, 1]
    (all-zero rows, padded words, stay zero)."""
    return distribution / distribution.amax(-1, keepdim=True).clamp(min=torch.finfo(distribution.dtype).tiny)


def display_name(config: dict) -> str:
    return "MahNN-rv" if not config.get("semantic", True) else f"MahNN-{config.get('channels', 3)}"


SPEC = ModelSpec(
    "mahnn", MahNN, MahNNConfig, "MahNN (multi-granularity attention + CNN)", display_name, listed=5,
    knobs=(
        Knob("channels", "Channels", "Syntactical-attention channels L (MahNN-1 ... MahNN-7).", "int", (), 1, 7),
        Knob("semantic", "Semantical attention", "Off: MahNN-rv.", "bool"),
    ),
    maps="per channel, syntactical attention over the words, and semantical attention over each word's "
         "hidden dimensions",
    tested_words=(23, "MahNN's paper tested it on data sets whose texts average 3 to 23 words"))
