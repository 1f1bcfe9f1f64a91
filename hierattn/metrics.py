"""Attention metrics of Letarte et al. 2018 (SANet), section 5.3.

Both take one attention matrix already restricted to real tokens: an (n, n) tensor whose rows
are queries and columns keys. ``attention_metrics`` walks an ``AttentionMap`` and does that
restriction, per head and per sentence.
"""
from __future__ import annotations

import torch

from .outputs import AttentionMap

BANDWIDTHS = (1, 2, 3, 4, 5)


def _values(x: torch.Tensor) -> torch.Tensor:
    return x.detach().to(torch.float64).flatten()


def gini(matrix: torch.Tensor, per_row: bool = False) -> float:
    """Gini coefficient of attention weights.

    Default (the paper's reading): flatten the n x n matrix into N = n^2 values, sort them
    ascending as x_(1) <= ... <= x_(N), and G = sum_i (2i - N - 1) x_(i) / (N sum_i x_(i)).
    0 for uniform attention, 1 - 1/n for one-hot rows (the largest value n x n row-stochastic
    matrices can reach: the flattened matrix always has total mass n spread over n^2 cells).

    ``per_row=True``: the Gini of each query's distribution over keys, averaged over rows; 0 for
    uniform rows, 1 - 1/n for one-hot rows. A matrix of all zeros has Gini 0 either way.
    """
    if matrix.dim() != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"expected a square matrix, got shape {tuple(matrix.shape)}")
    if per_row:
        return float(sum(_gini_1d(row) for row in matrix) / matrix.shape[0])
    return _gini_1d(matrix)


def _gini_1d(x: torch.Tensor) -> float:
    x = torch.sort(_values(x)).values
    n, total = x.numel(), x.sum()
    if n == 0 or total <= 0:
        return 0.0
    i = torch.arange(1, n + 1, dtype=torch.float64)
    return float(((2 * i - n - 1) * x).sum() / (n * total))


def diagonality(matrix: torch.Tensor, bandwidth: int) -> float:
    """Share of the attention mass within the band |i - j| <= bandwidth (0 for an all-zero matrix)."""
    if matrix.dim() != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"expected a square matrix, got shape {tuple(matrix.shape)}")
    m = matrix.detach().to(torch.float64)
    n = m.shape[0]
    idx = torch.arange(n)
    band = (idx[:, None] - idx[None, :]).abs() <= bandwidth
    total = m.sum()
    return float(m[band].sum() / total) if total > 0 else 0.0


def matrix_metrics(matrix: torch.Tensor, bandwidths=BANDWIDTHS, per_row_gini: bool = False) -> dict[str, float]:
    out = {"gini": gini(matrix, per_row=per_row_gini)}
    out.update({f"diagonality_b{b}": diagonality(matrix, b) for b in bandwidths})
    return out


GROUP_AXES = ("sentence", "time")  # an axis that holds one matrix (per head) per entry


EVERY = object()  # real_matrices: all groups


def real_matrices(attention: AttentionMap, batch_index: int = 0, group=EVERY):
    """Yield ``(group or None, head, matrix)`` for every self-attention matrix of one document,
    cropped to its real queries and keys. ``group`` indexes the map's ``sentence`` (or ``time``)
    axis; maps without a ``head`` axis have head 0. Padded sentences and steps are skipped.
    Passing ``group`` yields only that entry's matrices (``None``: a map without such an axis)."""
    if not attention.is_self_attention:
        raise ValueError("metrics need a self-attention map (with a 'query' axis)")
    weights, mask = attention.weights[batch_index], attention.mask[batch_index]
    axes = attention.axes[1:]
    if "head" not in axes:
        weights, mask = weights.unsqueeze(-3), mask.unsqueeze(-3)
    axis = next((a for a in GROUP_AXES if a in axes), None)
    if axis is None:
        if group is EVERY or group is None:
            yield from _heads(weights, mask, None)
        return
    dim, size = axes.index(axis), weights.shape[axes.index(axis)]
    if group is EVERY:
        wanted = range(size)
    elif group is not None and 0 <= group < size:
        wanted = [group]
    else:
        return
    for g in wanted:
        yield from _heads(weights.select(dim, g), mask.select(dim, g), g)


def _heads(weights: torch.Tensor, mask: torch.Tensor, group):
    # weights, mask: (head, query, key)
    real = mask[0].diagonal()  # a position is real when it may attend to itself
    n = int(real.sum())
    if n == 0:
        return
    idx = real.nonzero().squeeze(1)
    for h in range(weights.shape[0]):
        yield group, h, weights[h][idx][:, idx]


def attention_metrics(attention: AttentionMap, batch_index: int = 0, per_row_gini: bool = False) -> list[dict]:
    """One row per matrix of a document: its sentence (or time step), head, size, Gini and
    diagonality b=1..5. ``sentence`` is None for maps without a sentence axis."""
    group = next((a for a in GROUP_AXES if a in attention.axes), "sentence")
    rows = []
    for index, head, m in real_matrices(attention, batch_index):
        rows.append({"sentence": None, group: index, "head": head, "size": m.shape[0],
                     **matrix_metrics(m, per_row_gini=per_row_gini)})
    return rows


@torch.no_grad()
def mean_self_attention_metrics(model, batches, device, max_documents: int = 256, bandwidth: int = 3) -> dict:
    """Mean Gini and diagonality (at ``bandwidth``) over every self-attention matrix of up to
    ``max_documents`` documents: how sharp and how local a model's attention is at this point of
    training. Matrices of one position are skipped (their metrics say nothing). Empty when the
    model has no self-attention."""
    was_training = model.training
    model.eval()
    ginis, diagonals, seen = [], [], 0
    for batch in batches:
        out = model(batch.to(device), return_attentions=True)
        maps = [a for a in out.attentions.values() if a.is_self_attention]
        if not maps:
            break
        for a in maps:
            a = AttentionMap(a.weights.float().cpu(), a.axes, a.level, a.mask.cpu())
            for i in range(min(len(batch), max_documents - seen)):
                for _, _, m in real_matrices(a, i):
                    if m.shape[0] > 1:
                        ginis.append(gini(m))
                        diagonals.append(diagonality(m, bandwidth))
        seen += len(batch)
        if seen >= max_documents:
            break
    model.train(was_training)
    if not ginis:
        return {}
    return {"attention_gini": sum(ginis) / len(ginis), f"attention_diagonality_b{bandwidth}": sum(diagonals) / len(diagonals)}


def batched_matrix_metrics(weights: torch.Tensor, real: torch.Tensor, bandwidths=BANDWIDTHS,
                           chunk: int = 1024) -> tuple[torch.Tensor, torch.Tensor]:
    """Gini and diagonality of many matrices at once, equal to ``matrix_metrics`` on each matrix
    cropped to its real positions (the whole data set statistics need this to be fast).

    ``weights``: (K, L, L) query x key, padded; ``real``: (K, L) bool, the real positions of each.
    Returns ``gini`` (K,) and ``diagonality`` (K, len(bandwidths)), float64.

    Cells outside real x real are zeroed. Sorted ascending, those zeros come first, so the real
    cells hold the last N = n^2 ranks: rank i within the real cells is the global rank minus
    (L^2 - N), which turns the Gini sum of ``gini`` into one vectorised expression. Band distance
    counts real positions only (their index among the real ones), as cropping would.
    """
    k, length = real.shape
    ginis, diagonals = [], []
    for first in range(0, k, chunk):
        r = real[first: first + chunk]
        cells = r[:, :, None] & r[:, None, :]
        x = (weights[first: first + chunk].to(torch.float64) * cells).flatten(1)
        n = r.sum(1).to(torch.float64)
        total = x.sum(1)
        big = n * n
        ranks = torch.arange(1, length * length + 1, dtype=torch.float64) - (length * length - big)[:, None]
        g = ((2 * ranks - big[:, None] - 1) * torch.sort(x, dim=1).values).sum(1) / (big * total)
        ginis.append(torch.where(total > 0, g, torch.zeros_like(g)))
        position = r.cumsum(1) - 1  # index among the real positions
        distance = (position[:, :, None] - position[:, None, :]).abs().flatten(1)
        cells = cells.flatten(1)
        inside = [(x * ((distance <= b) & cells)).sum(1) for b in bandwidths]
        d = torch.stack(inside, 1) / total[:, None]
        diagonals.append(torch.where(total[:, None] > 0, d, torch.zeros_like(d)))
    if not ginis:
        return torch.zeros(0, dtype=torch.float64), torch.zeros(0, len(bandwidths), dtype=torch.float64)
    return torch.cat(ginis), torch.cat(diagonals)
