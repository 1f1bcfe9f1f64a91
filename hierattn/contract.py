"""The contract between the data and the models: a model reads a ``Batch`` and returns a
``ClassifierOutput`` whose named-axis ``AttentionMap``s the app and the analyses read, nothing else."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class Pieces:
    """The subword tokens a model with its own tokenizer reads (a Hugging Face transformer), in one
    sequence per document, its special tokens (``[CLS]``, ``<s>``, ``[SEP]``) included.

    ``ids``: (batch, token) int64, the tokenizer's ids, padded with the tokenizer's pad id.
    ``mask``: (batch, token) bool, True for tokens read (special ones included).
    ``word``: (batch, token) int64, the reading-order index of the document word each token is a
        piece of; -1 for special tokens and padding; -2 (``data.subwords.NO_WORD``) for a piece of the
        text read that lies in no word (punctuation, symbols).
    """

    ids: torch.Tensor
    mask: torch.Tensor
    word: torch.Tensor

    def to(self, device) -> Pieces:
        return Pieces(*(t.to(device, non_blocking=True) for t in (self.ids, self.mask, self.word)))


@dataclass
class Batch:
    """A padded mini-batch.

    ``word_ids``: (batch, sentence, word) int64, 0 = ``<pad>``.
    ``word_mask``: (batch, sentence, word) bool, True for real words.
    ``sentence_mask``: (batch, sentence) bool, True for sentences with at least one real word.
    ``labels``: (batch,) int64 or None.
    ``pieces``: the same words as subword tokens, for a model that reads its own tokenizer's pieces;
        None for the models that read ``word_ids``.
    """

    word_ids: torch.Tensor
    word_mask: torch.Tensor
    sentence_mask: torch.Tensor
    labels: torch.Tensor | None = None
    pieces: Pieces | None = None

    def to(self, device) -> Batch:
        move = lambda t: None if t is None else t.to(device, non_blocking=True)  # noqa: E731
        return Batch(move(self.word_ids), move(self.word_mask), move(self.sentence_mask), move(self.labels),
                     None if self.pieces is None else self.pieces.to(device))

    def __len__(self) -> int:
        return self.word_ids.shape[0]


WORD, SENTENCE, HIDDEN, SUBWORD = "word", "sentence", "hidden", "subword"
LEVELS = (WORD, SENTENCE, HIDDEN, SUBWORD)
ATTENTION, COVERAGE, GATE = "attention", "coverage", "gate"
KINDS = (ATTENTION, COVERAGE, GATE)


@dataclass
class AttentionMap:
    """One named attention tensor with documented axes.

    ``weights``: attention probabilities; its axes are named by ``axes``, e.g.
        ``("batch", "sentence", "head", "query", "key")`` for word self-attention inside each sentence,
        ``("batch", "head", "key")`` for document-level target attention over sentences.
        The last axis is always ``key``: the weights over it sum to 1 for every real query.
        Without a ``sentence`` axis and with ``level == "word"``, key positions index the document's
        words in reading order (the flat HCAN variant).
        Other axes a model may add: ``time`` (one matrix per step of a recurrent model),
        ``layer`` (one matrix per stacked layer of a transformer), ``channel`` (MahNN's channels,
        read like heads), ``position`` (a word, when the keys are not words).
    ``level``: what the keys refer to: ``"word"``, ``"sentence"``, ``"hidden"`` (dimensions of a
        hidden state, MahNN's semantical attention) or ``"subword"`` (the tokens of the model's own
        tokenizer, ``Batch.pieces``, special tokens included).
    ``mask``: bool, same shape as ``weights``; True where both query (if any) and key are real.
        Weights are exactly 0 where the mask is False.
    ``kind``: what the weights are. ``"attention"``: a distribution the model computes and weighs
        its inputs by. ``"coverage"``: a stand-in for a model without attention, derived from what
        it computes (Kim CNN: the share of max-pooled filters whose window covers each word); the
        app draws it like attention and says it is not attention. ``"gate"``: a distribution the
        model computes over its own hidden units, not over its inputs (ON-LSTM's master forget
        gate: at each word, where the forgetting boundary falls among the ordered units); the app
        draws it as depth per word and says it is not attention.
    ``source``: for weights the model does not compute at this level but aggregates from another of
        its maps (a transformer's words from its subword tokens), that map's name: interventions
        on this level act on the source's weights. None for a map the model computes itself.
    """

    weights: torch.Tensor
    axes: tuple[str, ...]
    level: str
    mask: torch.Tensor
    kind: str = ATTENTION
    source: str | None = None

    def __post_init__(self):
        if self.weights.dim() != len(self.axes):
            raise ValueError(f"{self.weights.dim()}-d weights with axes {self.axes}")
        if self.axes[0] != "batch" or self.axes[-1] != "key":
            raise ValueError(f"axes must run from 'batch' to 'key', got {self.axes}")
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}, got {self.level!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")

    @property
    def is_self_attention(self) -> bool:
        return "query" in self.axes

    def axis(self, name: str) -> int:
        return self.axes.index(name)


@dataclass
class ClassifierOutput:
    """``logits``: (batch, classes). ``loss``: scalar cross-entropy when labels were given.
    ``attentions``: name -> AttentionMap, e.g. ``"word.target"``, ``"sentence.self.branch_a"``."""

    logits: torch.Tensor
    loss: torch.Tensor | None = None
    attentions: dict[str, AttentionMap] = field(default_factory=dict)
