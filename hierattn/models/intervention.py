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


_CAPTURING: ContextVar[object | None] = ContextVar("hierattn_capturing", default=None)


@contextmanager
def module_calls(module: torch.nn.Module):
    """The ``(inputs, output)`` of every call of ``module`` made by this thread or asyncio task
    inside the block, in call order (a list that fills as the block runs).

    A cached model is shared by every session of the app, so a forward hook on it sees every
    thread's forward passes: one that kept whatever it saw handed one session another's tensors
    (their graph, their grad mode). The hook registered here keeps only calls made in this block's
    own context, and is removed when the block ends."""
    calls: list[tuple[tuple, torch.Tensor]] = []
    mine = object()

    def keep(_module, inputs, output):
        if _CAPTURING.get() is mine:
            calls.append((inputs, output))

    token = _CAPTURING.set(mine)
    handle = module.register_forward_hook(keep)
    try:
        yield calls
    finally:
        handle.remove()
        _CAPTURING.reset(token)
