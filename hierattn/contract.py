"""The contract between the data and the models: a model reads a ``Batch`` and returns a
``ClassifierOutput`` whose named-axis ``AttentionMap``s the app and the analyses read, nothing else."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace

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
class DerivedMap:
    """A map computed from another map of the same output when it is read, not before: its
    description now, its weights on demand. ``derive(source_weights, layer)`` returns the map from
    the source's weights: the whole source (``layer=None``) or one entry of its ``layer`` axis
    (``layer=l``: the source sliced to that layer, the layer axis kept with size 1)."""

    axes: tuple[str, ...]
    level: str
    kind: str
    source: str
    derive: Callable[[torch.Tensor, int | None], AttentionMap]

    @property
    def is_self_attention(self) -> bool:
        return "query" in self.axes

    def axis(self, name: str) -> int:
        return self.axes.index(name)


HALF_CELLS = 1 << 20  # a map of more cells than this is held in float16 by ``Maps.held``


class Maps(Mapping):
    """A model's named maps, some computed when first read (``DerivedMap``), some held in float16.

    Reading a map by name (``maps[name]``, ``.items()``) gives a float32 ``AttentionMap`` and keeps
    it (a derived map is computed from its source, a half one widened). ``describe`` answers what a
    map is without computing it; ``layer`` gives one entry of a map's ``layer`` axis without keeping
    the whole. A transformer of 6 layers x 12 heads over 512 tokens holds 38 MB this way, where its
    token, word and sentence maps in float32 held 150 MB and took a second to aggregate."""

    def __init__(self, ready: Mapping[str, AttentionMap], derived: Mapping[str, DerivedMap] | None = None,
                 order: list[str] | None = None):
        self._ready = dict(ready)  # as stored: float32, or float16 for a big map ``held`` packed
        self._derived = dict(derived or {})
        self._order = order or [*self._ready, *self._derived]  # the model's own order of its maps
        self._widened: dict[str, AttentionMap] = {}  # float32 copies of half maps, once read
        self._last_layer: dict[str, tuple[int, AttentionMap]] = {}  # a derived map's layer last read

    def __getitem__(self, name: str) -> AttentionMap:
        if name in self._widened:
            return self._widened[name]
        if name in self._ready:
            a = self._ready[name]
            if a.weights.dtype != torch.float16:
                return a
            self._widened[name] = replace(a, weights=a.weights.float())
            return self._widened[name]
        d = self._derived[name]  # KeyError for a name it does not have, as a dict
        self._widened[name] = d.derive(self[d.source].weights, None)
        return self._widened[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._ready) + len(self._derived)

    def describe(self, name: str) -> AttentionMap | DerivedMap:
        """The map's axes, level, kind and source, computing nothing (its weights may be float16)."""
        return self._widened.get(name) or self._ready.get(name) or self._derived[name]

    def layer(self, name: str, index: int) -> AttentionMap:
        """Entry ``index`` of the map's ``layer`` axis, that axis kept with size 1, in float32."""
        if name in self._widened or (name in self._ready and self._ready[name].weights.dtype != torch.float16):
            return _layer_of(self[name], index)
        if name in self._ready:
            return _layer_of(self._ready[name], index, widen=True)
        last = self._last_layer.get(name)
        if last is None or last[0] != index:  # a page rerun reads the layer on screen again: kept, one a map
            d = self._derived[name]
            self._last_layer[name] = last = (index, d.derive(self.layer(d.source, index).weights, index))
        return last[1]

    def held(self, device: torch.device | str = "cpu") -> Maps:
        """These maps on ``device`` as an explanation keeps them: the small ones in float32, a map of
        more than ``HALF_CELLS`` cells in float16 (attention weights lose nothing a reader sees:
        float16 keeps 3 significant digits, and a colour scale or a table shows fewer), the derived
        ones still to be computed, from the held source."""
        def keep(a: AttentionMap) -> AttentionMap:
            dtype = torch.float16 if a.weights.numel() > HALF_CELLS else torch.float32
            return replace(a, weights=a.weights.detach().to(device=device, dtype=dtype), mask=a.mask.to(device))
        return Maps({n: keep(a) for n, a in self._ready.items()}, self._derived, self._order)

    @property
    def weight_bytes(self) -> int:
        """The bytes of the weights held as stored (float16 or float32), derived maps not counted:
        what a model's explanation holds before anything is read (``limits.EXPLANATION_CELLS``
        counts it in float32 cells)."""
        return sum(a.weights.numel() * a.weights.element_size() for a in self._ready.values())

    @property
    def nbytes(self) -> int:
        """What the maps hold now, counting each tensor's storage once (a mask expanded from one
        matrix costs that matrix)."""
        seen, total = set(), 0
        for a in [*self._ready.values(), *self._widened.values(), *(m for _, m in self._last_layer.values())]:
            for t in (a.weights, a.mask):
                storage = t.untyped_storage()
                if storage.data_ptr() not in seen:
                    seen.add(storage.data_ptr())
                    total += storage.nbytes()
        return total


def _layer_of(a: AttentionMap, index: int, widen: bool = False) -> AttentionMap:
    dim = a.axis("layer")
    weights = a.weights.narrow(dim, index, 1)
    return replace(a, weights=weights.float() if widen else weights, mask=a.mask.narrow(dim, index, 1))


@dataclass
class ClassifierOutput:
    """``logits``: (batch, classes). ``loss``: scalar cross-entropy when labels were given.
    ``attentions``: name -> AttentionMap, e.g. ``"word.target"``, ``"sentence.self.branch_a"``; a
    dict, or ``Maps`` when some are computed only when read. ``document``: (batch, features), the
    vector the classifier's last layer reads (HAN's and HCAN's document vector, a CNN's pooled
    filters; a transformer's last layer averaged over the tokens read, inside
    ``models.common.document_vectors()`` only): where a document sits among the model's own
    (``analysis.domain``). None where a model does not say (a plug-in may leave it out)."""

    logits: torch.Tensor
    loss: torch.Tensor | None = None
    attentions: Mapping[str, AttentionMap] = field(default_factory=dict)
    document: torch.Tensor | None = None
