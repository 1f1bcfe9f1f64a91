"""Helpers the hierarchical models share: running an encoder over real sentences only, masks, loss."""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from hierattn.contract import AttentionMap, Batch
from hierattn.models import bigru
from hierattn.models.layers import is_straightforward


def run_rnn(rnn: nn.RNNBase, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(N, L, d_in), (N, L) -> (N, L, d_out), packed so that padding never enters the recurrence.

    A bidirectional GRU on the CPU runs as ``bigru.fused_bigru`` (same numbers, about twice as
    fast to train); inside ``layers.straightforward()`` it runs as ``nn.GRU`` on a packed sequence,
    the implementation the bench and the tests compare it with."""
    if bigru.fits(rnn, x) and not is_straightforward():
        return bigru.fused_bigru(rnn, x, mask) * mask.unsqueeze(-1)
    lengths = mask.sum(-1).clamp(min=1).cpu()
    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out, _ = rnn(packed)
    out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
    return out * mask.unsqueeze(-1)


def scatter_rows(values: torch.Tensor, rows: torch.Tensor, total: int) -> torch.Tensor:
    """Put ``values`` (n, ...) back at ``rows`` of a zero tensor (total, ...)."""
    out = values.new_zeros((total,) + tuple(values.shape[1:]))
    out[rows] = values
    return out


def pair_mask(mask: torch.Tensor, head_dim: int) -> torch.Tensor:
    """(..., L) -> (..., 1, L, L) inserted at ``head_dim``: True where query and key are both real."""
    pairs = mask.unsqueeze(-1) & mask.unsqueeze(-2)
    return pairs.unsqueeze(head_dim)


def classification_output(logits: torch.Tensor, batch: Batch, attentions: dict[str, AttentionMap],
                          document: torch.Tensor | None = None):
    """``document``: (batch, features), what the classifier's last layer read (``ClassifierOutput``)."""
    from hierattn.contract import ClassifierOutput

    loss = None if batch.labels is None else F.cross_entropy(logits, batch.labels)
    return ClassifierOutput(logits=logits, loss=loss, attentions=attentions, document=document)


_DOCUMENT_VECTORS: ContextVar[bool] = ContextVar("hierattn_document_vectors", default=False)


@contextmanager
def document_vectors():
    """Inside this block (this thread and asyncio task only) a model whose document vector costs
    extra returns it too: a transformer keeps its last layer's hidden states for it, which a
    training step or a page's explanation does not need."""
    token = _DOCUMENT_VECTORS.set(True)
    try:
        yield
    finally:
        _DOCUMENT_VECTORS.reset(token)


def wants_document_vectors() -> bool:
    return _DOCUMENT_VECTORS.get()


def flatten_words(batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """A flat model's input: each document's real words in reading order, left-aligned.

    (B, S, W) ids -> ids (B, T), mask (B, T) with T the longest document (at least 1).
    """
    B, S, W = batch.word_ids.shape
    flat_mask = batch.word_mask.view(B, S * W)
    order = torch.sort((~flat_mask).to(torch.int8), dim=1, stable=True).indices  # real words first, in order
    length = int(flat_mask.sum(1).max().clamp(min=1))
    order = order[:, :length]
    return batch.word_ids.view(B, S * W).gather(1, order), flat_mask.gather(1, order)


def reverse_padded(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Reverse each sequence within its own length: (N, L, ...) with (N, L) left-aligned mask.

    Applying it twice gives ``x`` back; padding stays where it was. Used to run a hand-written
    recurrent cell backwards without reading padding first.
    """
    N, L = mask.shape
    lengths = mask.sum(1, keepdim=True)  # (N, 1)
    pos = torch.arange(L, device=x.device).expand(N, L)
    index = torch.where(pos < lengths, lengths - 1 - pos, pos)  # (N, L)
    index = index.view(N, L, *([1] * (x.dim() - 2))).expand_as(x)
    return x.gather(1, index)


def last_real(h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(N, L, d), (N, L) -> (N, d): the state at each sequence's last real position (zeros if none)."""
    index = (mask.sum(1) - 1).clamp(min=0)
    out = h[torch.arange(h.shape[0], device=h.device), index]
    return out * mask.any(1, keepdim=True)
