"""HCAN: Hierarchical Convolutional Attention Network (Gao et al. 2018, section 3).

Every variant of the paper's Table 2 is a config: ``parallel`` (two self-attentions multiplied
element-wise, eq. 4, or one), ``pooling`` (``"target"``: convolutional multi-head target attention,
eq. 5, or ``"max"``), ``hierarchical`` (words -> sentences -> document, or one flat pass over the
document's words).

Readings of the paper where it is not explicit:
- Layer norm follows the element-wise product (section 3.8); with one self-attention it follows
  that attention's output, so the variants differ only in what the paper varies.
- No residual connection: the paper describes none.
- Learned positional embeddings (3.6), P in R^{l x d} with l the longest sequence a level reads,
  are added at each level, initialised N(0, 0.02). Training sizes each table from the text caps
  (``sized_for_text``): a flat variant reads up to max_sentences x max_words words, so its word
  table has that many rows and every position it reads has its own embedding. A learned table (not
  a fixed sinusoid) because the paper found learned positions "provide a slight boost"; sized from
  the caps because the caps bound every input the model is given (explain, statistics and training
  all read through them). An input longer than its table is refused, never silently folded.
  Checkpoints written before this rule had 128-row tables and reused the last row for every
  later position (``clamp_positions``, which their config.json implies by lacking the key): on a
  1,000-word flat document 873 positions shared one embedding. They load and predict as before.
- Dropout 0.1 on attention weights inside every attention and on the embeddings after the
  positional embeddings are added (3.8).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from hierattn.contract import SENTENCE, WORD, AttentionMap, Batch, ClassifierOutput
from hierattn.models.common import classification_output, flatten_words, pair_mask, scatter_rows
from hierattn.models.intervention import overriding, rows_in_order
from hierattn.models.layers import (
    CheapDropout,
    ConvMultiHeadSelfAttention,
    ConvMultiHeadTargetAttention,
    is_straightforward,
    masked_max,
)
from hierattn.models.packed import Packed
from hierattn.models.spec import Knob, ModelSpec

# Sentences grouped by length for the word level: at most this many groups of at least this many.
MAX_GROUPS, MIN_GROUP = 4, 16


@dataclass
class HCANConfig:
    vocab_size: int
    num_classes: int
    d: int = 128  # embedding and attention width (the paper: 512)
    heads: int = 4  # (the paper: 8)
    parallel: bool = True
    pooling: str = "target"  # "target" or "max"
    hierarchical: bool = True
    kernel: int = 3
    dropout: float = 0.1
    word_positions: int = 128  # positional table rows; training sets them from the text caps
    sentence_positions: int = 128
    clamp_positions: bool = False  # True: positions past the table reuse its last row (checkpoints before the fix)
    # How the target vector T starts ("normal": N(0, 1), the scale of a learned query; "scaled": N(0, 1/d),
    # the older checkpoints' start; layers.ConvMultiHeadTargetAttention). ``target_variance``, when set,
    # overrides it: T ~ N(0, target_variance). A checkpoint's weights replace T, so these record how the
    # model was trained, nothing more; but training barely moves |T|, so they set how sharp it ends.
    target_start: str = "normal"
    target_variance: float | None = None
    # What a config.json written before a key existed means by its absence.
    LEGACY: ClassVar[dict] = {"clamp_positions": True, "target_start": "scaled"}

    @staticmethod
    def sized_for_text(config: dict, max_sentences: int, max_words: int) -> dict:
        """Table sizes that give every position the model will read its own embedding (none with
        ``clamp_positions``: the old rule, 128-row tables, for re-measuring what it gave)."""
        if config.get("clamp_positions", False):
            return {}
        if not config.get("hierarchical", True):
            return {"word_positions": max_sentences * max_words}  # one pass over the document's words
        return {"word_positions": max_words, "sentence_positions": max_sentences}

    @staticmethod
    def query_start_variance(config: dict) -> float | None:
        """The variance v of N(0, v) that T started at, as a saved config means it (a config
        without ``target_start`` was written when T started at N(0, 1/d)); None without target
        pooling."""
        if config.get("pooling", "target") != "target":
            return None
        if config.get("target_variance") is not None:
            return float(config["target_variance"])
        start = config.get("target_start", HCANConfig.LEGACY["target_start"])
        return 1.0 if start == "normal" else 1.0 / config.get("d", HCANConfig.d)

    @staticmethod
    def text_problem(config: dict, max_sentences: int, max_words: int) -> str | None:
        """Why a model with ``config`` cannot read text with these caps (None: it can)."""
        if config.get("clamp_positions", False):
            return None
        defaults = {"word_positions": 128, "sentence_positions": 128}
        short = [(key, config.get(key, defaults[key]), needed)
                 for key, needed in HCANConfig.sized_for_text(config, max_sentences, max_words).items()
                 if config.get(key, defaults[key]) < needed]
        return "; ".join(f"its {key} table has {rows} rows, but its text caps let it read {needed} positions"
                         for key, rows, needed in short) or None


class HCANLevel(nn.Module):
    """One level of the hierarchy: positions, self-attention(s), layer norm, pooling."""

    def __init__(self, c: HCANConfig, positions: int, level: str = "word"):
        super().__init__()
        self.clamp_positions = c.clamp_positions
        self.position = nn.Embedding(positions, c.d)
        # Small start: N(0, 1) positions would swamp the sentence vectors they are added to.
        nn.init.normal_(self.position.weight, std=0.02)
        self.dropout = CheapDropout(c.dropout)
        self_site = f"{level}.self" + (".a" if c.parallel else "")
        self.branch_a = ConvMultiHeadSelfAttention(c.d, c.heads, c.kernel, F.elu, c.dropout, self_site)
        self.branch_b = ConvMultiHeadSelfAttention(c.d, c.heads, c.kernel, torch.tanh, c.dropout,
                                                   f"{level}.self.b") if c.parallel else None
        self.norm = nn.LayerNorm(c.d)
        self.target = (ConvMultiHeadTargetAttention(c.d, c.heads, c.kernel, c.dropout, f"{level}.target",
                                                    c.target_start, c.target_variance)
                       if c.pooling == "target" else None)

    def _check_positions(self, length: int):
        rows = self.position.num_embeddings
        if length > rows and not self.clamp_positions:
            raise ValueError(f"HCAN's positional table has {rows} rows, but this input has {length} positions: "
                             "train with text caps that fit the table (word_positions / sentence_positions)")

    def forward(self, x: torch.Tensor, mask: torch.Tensor, need_weights: bool = True):
        # x: (N, L, d), mask: (N, L) -> vector (N, d), weights {name: (N, h, L, L) or (N, h, L)}
        self._check_positions(x.shape[1])
        positions = torch.arange(x.shape[1], device=x.device).clamp(max=self.position.num_embeddings - 1)
        x = self.dropout((x + self.position(positions)) * mask.unsqueeze(-1))
        weights = {}
        name_a = "self" if self.branch_b is None else "self.a"
        y, weights[name_a] = self.branch_a(x, mask, need_weights)
        if self.branch_b is not None:
            y_b, weights["self.b"] = self.branch_b(x, mask, need_weights)
            y = y * y_b
        y = self.norm(y) * mask.unsqueeze(-1)
        if self.target is None:
            return masked_max(y, mask), weights
        vector, weights["target"] = self.target(y, mask)
        return vector, weights

    def packed(self, x: torch.Tensor, rows: Packed, need_weights: bool = True):
        """``forward`` at inference over packed sequences (see ``models.packed``): x (T, d) ->
        vector (n, d) in ``rows``' order, weights {name: one map per length group of
        ``rows.parts``, or None}. The same numbers at every real position: the convolutions sum
        the same terms, and padding never reaches a real one."""
        self._check_positions(rows.width)
        x = self.dropout(x + self.position(rows.columns.clamp(max=self.position.num_embeddings - 1)))
        weights = {}
        name_a = "self" if self.branch_b is None else "self.a"
        y, weights[name_a] = self.branch_a.packed(x, rows, need_weights)
        if self.branch_b is not None:
            y_b, weights["self.b"] = self.branch_b.packed(x, rows, need_weights)
            y = y * y_b
        y = self.norm(y)
        if self.target is None:
            return torch.cat([masked_max(p.packed.pad(y[p.positions]), p.packed.mask) for p in rows.parts]), weights
        vector, weights["target"] = self.target.packed(y, rows)
        return vector, weights


class HCAN(nn.Module):
    def __init__(self, config: HCANConfig):
        super().__init__()
        if config.pooling not in ("target", "max"):
            raise ValueError(f"pooling must be 'target' or 'max', got {config.pooling!r}")
        self.config = c = config
        self.embedding = nn.Embedding(c.vocab_size, c.d, padding_idx=0)
        self.word_level = HCANLevel(c, c.word_positions)
        self.sentence_level = HCANLevel(c, c.sentence_positions, "sentence") if c.hierarchical else None
        self.classifier = nn.Linear(c.d, c.num_classes)

    def forward(self, batch: Batch, return_attentions: bool = True) -> ClassifierOutput:
        if self.config.hierarchical:
            return self._hierarchical(batch, return_attentions)
        return self._flat(batch, return_attentions)

    def _hierarchical(self, batch: Batch, return_attentions: bool) -> ClassifierOutput:
        B, S, W = batch.word_ids.shape
        if is_straightforward():  # every (document, sentence) row, padding sentences included
            real = torch.arange(B * S, device=batch.word_ids.device)
        else:
            real = batch.sentence_mask.view(-1).nonzero().squeeze(1)  # rows of real sentences in (B*S)
        word_mask = batch.word_mask.view(B * S, W)[real]  # (n, W)
        x = self.embedding(batch.word_ids.view(B * S, W)[real])  # (n, W, d)
        sentences, word_weights = self._word_level(x, word_mask, real, B * S, return_attentions)  # (B*S, d)
        sentences = sentences.view(B, S, -1)  # (B, S, d)
        document, sentence_weights = self.sentence_level(sentences, batch.sentence_mask, return_attentions)  # (B, d)
        logits = self.classifier(document)

        attentions = {}
        if return_attentions:
            for name, w in word_weights.items():  # (B*S, h, W, W) or (B*S, h, W)
                w = w.view((B, S) + tuple(w.shape[1:]))
                if w.dim() == 5:
                    axes, mask = ("batch", "sentence", "head", "query", "key"), pair_mask(batch.word_mask, 2)
                else:
                    axes, mask = ("batch", "sentence", "head", "key"), batch.word_mask.unsqueeze(2)
                attentions[f"word.{name}"] = AttentionMap(w, axes, WORD, mask.expand_as(w))
            for name, w in sentence_weights.items():  # (B, h, S, S) or (B, h, S)
                attentions[f"sentence.{name}"] = _document_level_map(w, batch.sentence_mask, SENTENCE)
        return classification_output(logits, batch, attentions, document)

    def _word_level(self, x: torch.Tensor, mask: torch.Tensor, real: torch.Tensor, total: int, need_weights: bool):
        """x (n, W, d), mask (n, W): the batch's real sentences, rows ``real`` of its ``total``
        sentence slots -> vectors (total, d), maps {name: (total, h, W, W) or (total, h, W)},
        zeros at the other slots.

        Sentences are read in up to MAX_GROUPS groups of similar length, each cut to its own longest
        sentence, so a 12-word sentence does not pay for the 60-word one beside it. Real words get
        what one padded pass gives them (the level is padding-invariant: see ``ConvFeatures``).

        At inference on a CPU (no gradients, no override) the level is also packed
        (``models.packed``): its convolutions, most of its arithmetic there, read the real words
        alone (a news article: 1,068 words against 1,817 positions in length groups, 0.97 GFLOP a
        forward pass against 1.56). On a GPU one document's pass is bound by kernel launches, which
        packing adds to (an H200, one article: 2.7 ms grouped, 3.5 ms packed), so there the groups
        stay as they are."""
        n, W = mask.shape
        groups = 1 if is_straightforward() or rows_in_order() or n < 2 * MIN_GROUP else min(MAX_GROUPS, n // MIN_GROUP)
        inference = not (is_straightforward() or overriding() or self.training or torch.is_grad_enabled())
        if inference and x.device.type == "cpu":
            rows = Packed.of(mask, groups)
            if rows.gapless:
                vectors, weights = self.word_level.packed(rows.pack(x), rows, need_weights)
                destination = real if rows.order is None else real[rows.order]
                return scatter_rows(vectors, destination, total), {
                    name: _placed(maps, [destination[p.rows] for p in rows.parts], total, W)
                    for name, maps in weights.items() if maps is not None}
        if groups == 1:
            vectors, weights = self.word_level(x, mask, need_weights)
            return scatter_rows(vectors, real, total), {
                name: scatter_rows(m, real, total) for name, m in weights.items() if m is not None}
        lengths = mask.sum(1)
        order = lengths.argsort()
        parts = [g for g in order.tensor_split(groups) if len(g)]
        widths = lengths[torch.stack([g[-1] for g in parts])].clamp(min=1).tolist()
        vectors, weights = [], {}
        for rows, width in zip(parts, widths):
            v, w = self.word_level(x[rows, :width], mask[rows, :width], need_weights)
            vectors.append(v)
            for name, m in w.items():
                if m is not None:
                    weights.setdefault(name, []).append(m)
        return scatter_rows(torch.cat(vectors), real[order], total), {
            name: _placed(maps, [real[rows] for rows in parts], total, W) for name, maps in weights.items()}

    def _flat(self, batch: Batch, return_attentions: bool) -> ClassifierOutput:
        ids, mask = flatten_words(batch)  # (B, T)
        document, weights = self.word_level(self.embedding(ids), mask, return_attentions)
        logits = self.classifier(document)
        attentions = {}
        if return_attentions:
            attentions = {f"word.{n}": _document_level_map(w, mask, WORD) for n, w in weights.items()}
        return classification_output(logits, batch, attentions, document)


def _placed(maps: list[torch.Tensor], rows: list[torch.Tensor], total: int, width: int) -> torch.Tensor:
    """Maps of sentence groups, (n_g, h, L_g, L_g) or (n_g, h, L_g), each into its ``rows`` of one
    (total, h, W, W) or (total, h, W) tensor (zeros elsewhere), written once into the batch's layout."""
    first = maps[0]
    out = first.new_zeros((total, first.shape[1]) + (width,) * (first.dim() - 2))
    for m, at in zip(maps, rows):
        out[(at, slice(None)) + (slice(0, m.shape[-1]),) * (m.dim() - 2)] = m
    return out


def _document_level_map(weights: torch.Tensor, mask: torch.Tensor, level: str) -> AttentionMap:
    """(B, h, L, L) or (B, h, L) weights over one sequence per document."""
    if weights.dim() == 4:
        return AttentionMap(weights, ("batch", "head", "query", "key"), level, pair_mask(mask, 1).expand_as(weights))
    return AttentionMap(weights, ("batch", "head", "key"), level, mask.unsqueeze(1).expand_as(weights))


def display_name(config: dict) -> str:
    parts = [] if config.get("parallel", True) else ["one self-attention"]
    parts += [] if config.get("pooling", "target") == "target" else ["max pool"]
    parts += [] if config.get("hierarchical", True) else ["flat"]
    return "HCAN" + (f" ({', '.join(parts)})" if parts else "")


SPEC = ModelSpec(
    "hcan", HCAN, HCANConfig, "HCAN (hierarchical convolutional attention)", display_name, listed=2,
    knobs=(
        Knob("parallel", "Two parallel self-attentions",
             "HCAN eq. 4: an ELU and a tanh self-attention multiplied; off: one self-attention.", "bool"),
        Knob("pooling", "Pooling", "Target attention (eq. 5) or max pooling.", "choice", ("target", "max")),
        Knob("hierarchical", "Hierarchical", "Words -> sentences -> document; off: one flat pass over the words.",
             "bool"),
    ),
    maps="per-head self-attention among words (per sentence) and among sentences, one map per branch, "
         "and multi-head target attention over words and sentences")
