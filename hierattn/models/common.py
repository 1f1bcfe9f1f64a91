"""Helpers the hierarchical models share: running an encoder over real sentences only, masks, loss."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ..data import Batch
from ..outputs import AttentionMap


def run_rnn(rnn: nn.RNNBase, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(N, L, d_in), (N, L) -> (N, L, d_out), packed so that padding never enters the recurrence."""
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


def classification_output(logits: torch.Tensor, batch: Batch, attentions: dict[str, AttentionMap]):
    from ..outputs import ClassifierOutput

    loss = None if batch.labels is None else F.cross_entropy(logits, batch.labels)
    return ClassifierOutput(logits=logits, loss=loss, attentions=attentions)
