"""Attention metrics of Letarte et al. 2018 (SANet), section 5.3.

Both take one attention matrix already restricted to real tokens: an (n, n) tensor whose rows
are queries and columns keys. ``attention_metrics`` walks an ``AttentionMap`` and does that
restriction, per head and per sentence.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from hierattn.contract import AttentionMap

BANDWIDTHS = (1, 2, 3, 4, 5)
METRICS = ["gini"] + [f"diagonality_b{b}" for b in BANDWIDTHS]  # the figures of one matrix, in table order
EVEN = {m: f"{m}_even" for m in METRICS}  # the column of each metric's even-spread value


def even_spread(sizes) -> dict[str, np.ndarray]:
    """The baseline every verdict about attention is judged against: the Gini and diagonality
    b = 1..5 that an even spread gives to a matrix of n real positions (every query row spreads
    its weight evenly over the n keys, so every cell is 1/n). ``sizes``: n, an int or an array of
    them (one per matrix, so that means over matrices are length-matched). Returns metric ->
    array shaped like ``sizes``.

    Gini: 0 at any n (all cells equal). Diagonality at bandwidth b: the share of the n^2 cells
    within the band, ((2c + 1) n - c (c + 1)) / n^2 with c = min(b, n - 1); (7n - 12) / n^2 at
    b = 3 for n > 3: 41% for a 15-word tweet, under 1% for a 1,000-word article. Raw means of
    data sets of different lengths therefore differ without any model, which is why verdicts use
    the excess over this value.
    """
    n = np.asarray(sizes, dtype=np.float64)
    out = {"gini": np.zeros_like(n)}
    for b in BANDWIDTHS:
        c = np.minimum(b, np.maximum(n - 1, 0))
        out[f"diagonality_b{b}"] = np.where(n > 0, ((2 * c + 1) * n - c * (c + 1)) / np.maximum(n, 1) ** 2, 0.0)
    return out


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
        return float(sum(gini_of_values(row) for row in matrix) / matrix.shape[0])
    return gini_of_values(matrix)


def gini_of_values(x: torch.Tensor) -> float:
    """The Gini coefficient of any set of non-negative values (flattened), ``gini``'s formula."""
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


GROUP_AXES = ("sentence", "time", "layer")  # an axis that holds one matrix (per head) per entry


EVERY = object()  # real_matrices: all groups


def real_matrices(attention: AttentionMap, batch_index: int = 0, group=EVERY):
    """Yield ``(group or None, head, matrix)`` for every self-attention matrix of one document,
    cropped to its real queries and keys. ``group`` indexes the map's ``sentence`` (or ``time``, or
    ``layer``) axis; maps without a ``head`` axis have head 0. Padded sentences and steps are skipped.
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


def attention_metrics(attention: AttentionMap, batch_index: int = 0) -> list[dict]:
    """One row per matrix of a document: its sentence (or time step), head, size, Gini and
    diagonality b=1..5, and each metric's even-spread value at that size (``gini_even``, ...).
    ``sentence`` is None for maps without a sentence axis. Computed for all matrices at once
    (``metric_columns``); equal to ``matrix_metrics`` on each cropped matrix."""
    if not attention.is_self_attention:
        raise ValueError("metrics need a self-attention map (with a 'query' axis)")
    one = AttentionMap(attention.weights[batch_index: batch_index + 1], attention.axes, attention.level,
                       attention.mask[batch_index: batch_index + 1])
    group_axis = next((a for a in GROUP_AXES if a in attention.axes), None)
    cols = metric_columns(one, min_size=1)
    sizes = cols["size"].tolist()
    evens = even_spread(np.asarray(sizes, dtype=np.float64))  # every matrix at once: once per matrix cost a quarter
    table = zip(cols["group"].tolist(), cols["head"].tolist(), sizes, *(cols[n].tolist() for n in METRICS),
                *(evens[m].tolist() for m in METRICS))
    rows = []
    for group, head, size, *values in table:
        row = {"sentence": None, group_axis or "sentence": group if group_axis else None, "head": head, "size": size}
        rows.append({**row, **dict(zip(METRICS, values[: len(METRICS)])),
                     **dict(zip((EVEN[m] for m in METRICS), values[len(METRICS):]))})
    return rows


def grouped(a: AttentionMap) -> tuple[torch.Tensor, torch.Tensor, str | None]:
    """A self-attention map's weights and mask as (batch, group, head, query, key), and the name of
    its group axis (``sentence``, ``time`` or ``layer``; None when there is one matrix per head)."""
    w, m, axes = a.weights, a.mask, list(a.axes)
    if "head" not in axes:
        w, m = w.unsqueeze(-3), m.unsqueeze(-3)
        axes.insert(len(axes) - 2, "head")
    group = next((g for g in GROUP_AXES if g in axes), None)
    if group is None:
        w, m = w.unsqueeze(1), m.unsqueeze(1)
        axes.insert(1, "group")
    if len(axes) != 5:
        raise ValueError(f"unexpected self-attention axes {a.axes}")
    order = [0, axes.index(group or "group"), axes.index("head"), 3, 4]
    return w.permute(order), m.permute(order), group


def metric_columns(a: AttentionMap, min_size: int = 2) -> dict[str, torch.Tensor]:
    """Gini and diagonality of every real matrix of a batch's self-attention map with at least
    ``min_size`` real positions, as columns: ``batch_index``, ``group`` (-1 for maps without a
    sentence or time axis), ``head``, ``size``, ``gini``, ``diagonality_b1`` ... (in batch, group,
    head order)."""
    w, m, group = grouped(a)
    real = m.diagonal(dim1=-2, dim2=-1)  # (batch, group, head, L): a position is real when it sees itself
    keep = real.sum(-1) >= max(min_size, 1)
    doc, g, h = keep.nonzero(as_tuple=True)
    gini_values, diag = batched_matrix_metrics(w[keep].float(), real[keep])
    cols = {"batch_index": doc, "group": g if group else torch.full_like(g, -1), "head": h,
            "size": real[keep].sum(-1), "gini": gini_values}
    cols.update({f"diagonality_b{b}": diag[:, i] for i, b in enumerate(BANDWIDTHS)})
    return cols


def batched_matrix_metrics(weights: torch.Tensor, real: torch.Tensor, bandwidths=BANDWIDTHS,
                           cells_per_chunk: int = 1 << 20) -> tuple[torch.Tensor, torch.Tensor]:
    """Gini and diagonality of many matrices at once, equal to ``matrix_metrics`` on each matrix
    cropped to its real positions (explain and the data set statistics need this to be fast).

    ``weights``: (K, L, L) query x key, padded; ``real``: (K, L) bool, the real positions of each.
    Returns ``gini`` (K,) and ``diagonality`` (K, len(bandwidths)), float64.

    Cells outside real x real are zeroed. Sorted ascending, those zeros come first, so the real
    cells hold the last N = n^2 ranks: rank i within the real cells is the global rank minus
    (L^2 - N), which turns the Gini sum of ``gini`` into one vectorised expression. Band distance
    counts real positions only (their index among the real ones), as cropping would; the mass at
    each distance is summed once, and its running sum gives every bandwidth. Matrices go in order
    of size, in chunks of about ``cells_per_chunk`` cells, each cropped to its largest real prefix,
    so short sentences do not pay for the padding of long ones.
    """
    k = real.shape[0]
    gini_out = torch.zeros(k, dtype=torch.float64)
    diag_out = torch.zeros(k, len(bandwidths), dtype=torch.float64)
    sizes = real.sum(1)
    order = torch.argsort(sizes, stable=True)
    sorted_sizes = sizes[order].tolist()
    chunks, first = [], 0
    while first < k:
        last = first + 1  # grow the chunk while its cropped cells stay within budget
        while last < k and (last + 1 - first) * max(sorted_sizes[last], 1) ** 2 <= cells_per_chunk:
            last += 1
        chunks.append((order[first: last], max(sorted_sizes[last - 1], 1)))
        first = last

    def one(chunk) -> tuple[torch.Tensor, torch.Tensor]:
        idx, longest = chunk
        r = real[idx]
        if not r[:, longest:].any():  # real positions are a prefix (as padding makes them): crop
            r = r[:, :longest]
        return _metrics_of(weights[idx][:, : r.shape[1], : r.shape[1]], r, bandwidths)

    workers = min(len(chunks), torch.get_num_threads())  # the process's share of the cores (hierattn.threads)
    if workers > 1:  # NumPy's sort and torch's kernels let go of the interpreter: chunks sort side by side
        with ThreadPoolExecutor(workers) as pool:
            done = list(pool.map(one, chunks))
    else:
        done = [one(chunk) for chunk in chunks]
    # written here, not in the workers: a worker thread is outside the caller's inference mode, where
    # an in-place write into the caller's tensors is refused
    for (idx, _), (g, d) in zip(chunks, done):
        gini_out[idx], diag_out[idx] = g, d
    return gini_out, diag_out


def _metrics_of(weights: torch.Tensor, r: torch.Tensor, bandwidths) -> tuple[torch.Tensor, torch.Tensor]:
    # float32 cells (half the sorting work of float64), float64 sums: errors stay below 1e-6.
    weights, r = weights.cpu(), r.cpu()
    length = r.shape[1]
    cells = r[:, :, None] & r[:, None, :]
    x = (weights.to(torch.float32) * cells).flatten(1)
    n = r.sum(1).to(torch.float64)
    total = x.sum(1, dtype=torch.float64)
    big = n * n
    # NumPy's sort (vectorised quicksort) is about 20x faster than torch.sort on these rows on a CPU.
    ascending = np.sort(x.detach().cpu().numpy(), axis=1)
    # sum_i (2 r_i - N - 1) x_(i) with r_i = j + 1 - (L^2 - N) at sorted column j: one matrix-vector
    # product with the column numbers, then the shift, in float64.
    by_column = torch.from_numpy(ascending.astype(np.float64) @ np.arange(1, length * length + 1, dtype=np.float64))
    g = (2 * (by_column - (length * length - big) * total) - (big + 1) * total) / (big * total)
    g = torch.where(total > 0, g, torch.zeros_like(g))
    widest = min(max(bandwidths), length - 1)
    if bool((r == (torch.arange(length) < r.sum(1, keepdim=True))).all()):
        # real positions are a prefix (padding makes them so): the mass within distance d is the sum
        # of the 2d + 1 diagonals around the main one, 11 L cells for b <= 5 instead of L^2
        m = x.view(-1, length, length)
        bands = [m.diagonal(0, 1, 2).sum(-1, dtype=torch.float64)]
        bands += [m.diagonal(o, 1, 2).sum(-1, dtype=torch.float64) + m.diagonal(-o, 1, 2).sum(-1, dtype=torch.float64)
                  for o in range(1, widest + 1)]
        within = torch.stack(bands, 1).cumsum(1)  # mass within distance 0, 1, ..., widest
    else:
        position = r.cumsum(1) - 1  # index among the real positions; padding has x = 0
        distance = (position[:, :, None] - position[:, None, :]).abs().clamp_(max=length - 1).flatten(1)
        by_distance = torch.zeros(len(x), length, dtype=torch.float64).scatter_add_(1, distance, x.to(torch.float64))
        within = by_distance.cumsum(1)[:, : widest + 1]  # mass within distance 0, 1, 2, ...
    d = within[:, [min(b, length - 1) for b in bandwidths]] / total[:, None]
    d = torch.where(total[:, None] > 0, d, torch.zeros_like(d))
    return g, d
