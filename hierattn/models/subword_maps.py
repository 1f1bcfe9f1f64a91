"""A transformer's token attention read at the levels every other model has: its words and its
sentences, by Clark et al.'s rule (``hierattn.models.transformer`` documents the maps)."""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

import torch

from hierattn.contract import SENTENCE, SUBWORD, WORD, AttentionMap, DerivedMap, Maps, Pieces

SITE = "subword.self"  # the maps' source, and the site every layer's attention passes through


class LayerStack:
    """Every layer's token attention, ``weights`` (B, L, H, T, T), written a layer at a time as the
    attention computes it. transformers' ``output_attentions`` keeps each layer's tensor to the
    end, and stacking them copies all of them again: at 512 tokens on 6 x 12 heads that held 150 MB
    at once, and glibc keeps what is freed, so the process stayed that large. Written in place,
    the stack is the only copy that outlives its layer."""

    def __init__(self, layers: int):
        self.layers, self.written = layers, 0
        self.weights: torch.Tensor | None = None

    def keep(self, weights: torch.Tensor) -> None:  # weights: (B, H, T, T), one layer
        if self.weights is None:
            self.weights = weights.new_empty((weights.shape[0], self.layers, *weights.shape[1:]))
        if self.written == self.layers:
            raise RuntimeError(f"attention ran more than the model's {self.layers} layers in one pass")
        self.weights[:, self.written] = weights
        self.written += 1

    def full(self) -> torch.Tensor:
        """The stack once every layer is written (a family whose attention bypassed ``SITE`` is refused)."""
        if self.written != self.layers:
            raise RuntimeError(f"{self.written} of {self.layers} layers' attention passed through {SITE}")
        return self.weights


# The stack of the calling thread's or task's forward pass, never a hook on the model: a cached
# model is shared by every session, and a hook would see every session's passes.
_STACK: ContextVar[LayerStack | None] = ContextVar("hierattn_layer_stack", default=None)


@contextmanager
def layer_stack(layers: int):
    """Within the block, this thread's attention layers write into the ``LayerStack`` it yields."""
    stack = LayerStack(layers)
    token = _STACK.set(stack)
    try:
        yield stack
    finally:
        _STACK.reset(token)


def keep_layer(weights: torch.Tensor) -> None:
    """The attention function's call: one layer's weights (B, H, T, T) into the block's stack."""
    stack = _STACK.get()
    if stack is not None:
        stack.keep(weights)


def memberships(pieces: Pieces, word_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Which word and which sentence each token is a piece of: (B, T, W) and (B, T, S), 1.0 or 0.0
    (special tokens and padding belong to none). Words in reading order, W and S the batch's most."""
    b, s, w = word_mask.shape
    words_per_doc = word_mask.sum((1, 2))
    n_words = max(1, int(words_per_doc.max()))
    word = pieces.word.clamp(min=-1)
    to_word = (word.unsqueeze(-1) == torch.arange(n_words, device=word.device)).float()  # (B, T, W)
    # reading-order word -> its sentence
    sentence_of = torch.arange(s, device=word.device).view(1, s, 1).expand(b, s, w)[word_mask]
    starts = torch.cumsum(words_per_doc, 0) - words_per_doc
    word_sentence = torch.full((b, n_words), -1, dtype=torch.long, device=word.device)
    doc = torch.arange(b, device=word.device).repeat_interleave(words_per_doc)
    position = torch.arange(len(doc), device=word.device) - starts[doc]
    word_sentence[doc, position] = sentence_of
    sentence = torch.where(word >= 0, word_sentence.gather(1, word.clamp(min=0)), -1)
    to_sentence = (sentence.unsqueeze(-1) == torch.arange(s, device=word.device)).float()  # (B, T, S)
    return to_word, to_sentence


def aggregate(weights: torch.Tensor, member: torch.Tensor, queries: bool = True) -> torch.Tensor:
    """Token attention to units (words or sentences): keys summed over a unit's tokens, queries
    averaged over them, attention to tokens of no unit (special tokens) left out and each row
    renormalised (a row whose mass all went to special tokens stays 0).
    weights: (B, ..., T, T) or (B, ..., T) for one query row; member: (B, T, U).
    Returns (B, ..., U, U) or (B, ..., U)."""
    extra = weights.dim() - (3 if queries else 2)
    m = member.view(member.shape[0], *([1] * extra), *member.shape[1:]).to(weights.dtype)
    to_units = torch.matmul(weights, m) if queries else torch.matmul(weights.unsqueeze(-2), m).squeeze(-2)
    if queries:
        mean = m / m.sum(-2, keepdim=True).clamp_min(1.0)
        to_units = torch.matmul(mean.transpose(-1, -2), to_units)
    return to_units / to_units.sum(-1, keepdim=True).clamp_min(1e-12)


def maps(weights: torch.Tensor, pieces: Pieces, word_mask: torch.Tensor) -> Maps:
    """The module doc's maps from every layer's token attention, weights (B, L, H, T, T). The word
    and sentence self-attention are computed when first read (``contract.Maps``), a layer at a time
    when only a layer is read: at 512 tokens they cost a second and 60 MB that Explore, showing one
    layer, never needed."""
    token = pieces.mask
    pairs = (token.unsqueeze(-1) & token.unsqueeze(-2))[:, None, None]  # (B, 1, 1, T, T)
    # masked_fill_ broadcasts the small mask; mul_ by the expanded mask made a float copy of it
    # (72 MB at 512 tokens on 6 x 12 heads, the explanation's peak)
    weights = weights.masked_fill_(~pairs, 0) if not weights.requires_grad else weights * pairs
    pairs = pairs.expand_as(weights)
    to_word, to_sentence = memberships(pieces, word_mask)
    axes = ("batch", "layer", "head", "query", "key")
    ready = {SITE: AttentionMap(weights, axes, SUBWORD, pairs)}
    derived = {}
    first = weights[:, -1, :, 0, :]  # (B, H, T): the first token's row in the last layer
    for level, member in ((WORD, to_word), (SENTENCE, to_sentence)):
        real = member.sum(1) > 0  # (B, U): a unit with at least one token read
        derived[f"{level}.self"] = DerivedMap(axes, level, "attention", SITE, _grid(level, member, real))
        row = aggregate(first, member, queries=False) * real[:, None]
        ready[f"{level}.first_token"] = AttentionMap(row, ("batch", "head", "key"), level,
                                                     real[:, None].expand_as(row), source=SITE)
    order = [SITE, *(f"{level}.{kind}" for level in (WORD, SENTENCE) for kind in ("self", "first_token"))]
    return Maps(ready, derived, order)


def _grid(level: str, member: torch.Tensor, real: torch.Tensor):
    """``DerivedMap.derive`` for the unit-to-unit map of ``level``: from any number of layers of
    the token map (the source's weights, masked), the same layers between units."""
    unit_pairs = (real.unsqueeze(-1) & real.unsqueeze(-2))[:, None, None]  # (B, 1, 1, U, U)

    def derive(source: torch.Tensor, layer: int | None) -> AttentionMap:
        grid = aggregate(source, member.to(source.device)) * unit_pairs.to(source.device)
        return AttentionMap(grid, ("batch", "layer", "head", "query", "key"), level,
                            unit_pairs.to(source.device).expand_as(grid), source=SITE)
    return derive
