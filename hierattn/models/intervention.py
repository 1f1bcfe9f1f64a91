"""Interventions on attention at inference: what the faithfulness tests do to a model's weights.

Inside ``attention_override(fn)`` (this thread and asyncio task only, like ``straightforward()``),
every attention site of a model passes its weights through ``fn(site, weights, mask)`` before
using them, and uses what ``fn`` returns. ``site`` is the name of the map the model reports for
those weights (``"word.target"``, ``"sentence.target"``, ``"word.self.a"``, ``"word.self.block1"``,
``"word.syntactic"``); ``weights`` are the probabilities in the layer's own layout, the key axis
last (e.g. ``(n, W)`` for HAN's word attention over the n real sentences of a batch,
``(n, h, 1, W)`` for HCAN's target attention, ``(n, h, W, W)`` for its self-attention); ``mask``
is a bool tensor of the same shape, True at real keys (and real queries). A returned tensor must
have the same shape; it is used as the distribution over the keys.

Outside such a block ``intervene`` returns the weights it is given, so models run as before.
With ``in_order=True`` (the default) HCAN reads all sentences of a batch in one pass (not in length
groups), so that rows arrive in sentence order: the n rows of a site are the batch's real sentences
in reading order. An override that treats every row alike (a permutation, an even spread) passes
``in_order=False`` and keeps the faster grouped pass.
"""
from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from contextvars import ContextVar

import torch

Override = Callable[[str, torch.Tensor, torch.Tensor], torch.Tensor]
_OVERRIDE: ContextVar[Override | None] = ContextVar("hierattn_attention_override", default=None)
_IN_ORDER: ContextVar[bool] = ContextVar("hierattn_attention_override_in_order", default=False)


@contextmanager
def attention_override(fn: Override, in_order: bool = True):
    token, order = _OVERRIDE.set(fn), _IN_ORDER.set(in_order)
    try:
        yield
    finally:
        _OVERRIDE.reset(token)
        _IN_ORDER.reset(order)


def overriding() -> bool:
    return _OVERRIDE.get() is not None


def rows_in_order() -> bool:
    """An active override needs a site's rows in sentence order (see the module doc)."""
    return _OVERRIDE.get() is not None and _IN_ORDER.get()


def intervene(site: str, weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    fn = _OVERRIDE.get()
    if fn is None:
        return weights
    out = fn(site, weights, mask.expand_as(weights))
    if out.shape != weights.shape:
        raise ValueError(f"an attention override returned {tuple(out.shape)} for {site} {tuple(weights.shape)}")
    return out


_EMBEDDED: ContextVar[list | None] = ContextVar("hierattn_embedding_lookups", default=None)


# (ids, vectors) -> the vectors the model goes on with: an attribution method's inputs in place of a
# lookup's (captum's Integrated Gradients interpolates them), for this thread or task alone.
_REPLACED: ContextVar[Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None] = ContextVar(
    "hierattn_embedding_replaced", default=None)


class ObservedEmbedding(torch.nn.Embedding):
    """``nn.Embedding`` that hands each lookup, ``(ids, vectors)``, to an ``embedding_lookups()``
    block of the calling thread or asyncio task, and to nothing otherwise; inside an
    ``embedding_replaced(fn)`` block, the model reads ``fn(ids, vectors)`` instead of the vectors.

    A cached model is shared by every session of the app: a forward hook attached to it per call
    sees every thread's forward passes (one such hook handed a session another's tensors, from
    another graph). This needs nothing attached per call: the checkpoint loader makes a model's
    ``embedding`` one of these once (``observe_embedding``), and a lookup outside such a block does
    exactly what ``nn.Embedding`` does. Same parameters, same state dict."""

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        vectors = super().forward(ids)
        replace = _REPLACED.get()
        if replace is not None:
            vectors = replace(ids, vectors)
        lookups = _EMBEDDED.get()
        if lookups is not None:
            lookups.append((ids, vectors))
        return vectors


def observe_embedding(model: torch.nn.Module) -> torch.nn.Module:
    """Make ``model.embedding`` (a plain ``nn.Embedding``, as every built-in model and the example
    plug-in have) an ``ObservedEmbedding``, at load time, before the model is shared."""
    embedding = getattr(model, "embedding", None)
    if type(embedding) is torch.nn.Embedding:
        embedding.__class__ = ObservedEmbedding
    return model


@contextmanager
def embedding_replaced(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]):
    """Inside the block, every ``ObservedEmbedding`` lookup of this thread or task returns
    ``fn(ids, vectors)``; other threads' lookups are untouched, and nothing outlives the block."""
    token = _REPLACED.set(fn)
    try:
        yield
    finally:
        _REPLACED.reset(token)


@contextmanager
def embedding_lookups():
    """The ``(ids, vectors)`` of every ``ObservedEmbedding`` lookup this thread or task makes inside
    the block, in order (a list that fills as the block runs)."""
    token = _EMBEDDED.set([])
    try:
        yield _EMBEDDED.get()
    finally:
        _EMBEDDED.reset(token)


def even_weights(site: str, weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """An even spread over each distribution's real keys: the override of a frozen-uniform model."""
    real = mask.to(weights.dtype)
    return real / real.sum(-1, keepdim=True).clamp_min(1.0)


def even_target_weights(site: str, weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """An even spread at the pooling (target) sites only (``"word.target"``, ``"sentence.target"``);
    every self-attention keeps its computed weights."""
    return even_weights(site, weights, mask) if site.endswith(".target") else weights


class FrozenUniform:
    """Mixed into a model's class (``freeze_to_uniform``): every attention site of every forward
    pass, in training and at inference, uses an even spread over its real keys instead of its
    computed weights. Wiegreffe & Pinter (2019, section 3.1) train such a model to ask whether a
    task needs attention at all: if it does as well as its trained twin, attention was not needed.
    The parameters that computed the weights stay (and get no gradient through them), so the
    checkpoint has the twin's layout."""

    frozen_uniform = True
    frozen_sites = "every"

    def forward(self, *args, **kwargs):
        with attention_override(even_weights, in_order=False):
            return super().forward(*args, **kwargs)


class FrozenUniformTarget(FrozenUniform):
    """Only the target (pooling) attention frozen to an even spread; self-attention is trained and
    used as computed. For HCAN, whose frozen-uniform twin (``FrozenUniform``) also flattens both
    self-attentions: that twin asks whether the model needs non-uniform mixing anywhere, this one
    whether it needs the target attention the app paints on the text."""

    frozen_sites = "target"

    def forward(self, *args, **kwargs):
        with attention_override(even_target_weights, in_order=False):
            return super(FrozenUniform, self).forward(*args, **kwargs)


def freeze_to_uniform(model: torch.nn.Module, sites: str = "every") -> torch.nn.Module:
    """``model``, its class swapped for one with ``FrozenUniform`` (``sites="every"``) or
    ``FrozenUniformTarget`` (``"target"``) mixed in (state dict unchanged). ValueError for a model
    whose attention no override reaches (HA-LSTM's window attention inside its cell, the
    attention-free baselines), or, for ``"target"``, that has no target site: freezing it would
    silently change nothing."""
    from hierattn.contract import Batch

    on_meta = any(p.is_meta for p in model.parameters())  # counted, not run (``footprint.parameter_count``)
    reached = [] if not on_meta else ["meta"]

    def count(site, weights, mask):
        reached.append(site)
        return weights

    ids = torch.ones(1, 2, 3, dtype=torch.long)
    was_training = model.training
    if not on_meta:
        with torch.no_grad(), attention_override(count, in_order=False):
            model.eval()(Batch(ids, ids.bool(), ids.bool().any(-1), None))
    model.train(was_training)
    if sites == "target":
        reached = [site for site in reached if site == "meta" or site.endswith(".target")]
    if not reached:
        what = "target attention site" if sites == "target" else "attention site"
        raise ValueError(f"{type(model).__name__} has no {what} that can be frozen to uniform")
    cls = type(model)
    mixin = FrozenUniformTarget if sites == "target" else FrozenUniform
    model.__class__ = type(f"{mixin.__name__}{cls.__name__}", (mixin, cls), {})
    return model
