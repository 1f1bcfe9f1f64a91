"""Attention metrics of Letarte et al. 2018 (SANet), section 5.3, as one registry.

A ``Metric`` is one figure of a self-attention matrix with everything that reports it: its key in
rows, tables and CSV, a reader's name for it, its function of one matrix, its function of many
matrices at once, and its even-spread value (a metric is only reported with its baseline).
``METRICS`` lists them in table order; statistics, tables, figures and exports iterate it, so a
metric is one entry there.

A metric of one matrix takes it already restricted to real tokens: an (n, n) tensor whose rows are
queries and columns keys. ``attention_metrics`` walks an ``AttentionMap`` and does that
restriction, per head and per sentence.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import numpy as np
import torch

from hierattn.contract import AttentionMap


@dataclass(frozen=True)
class Metric:
    """One figure of an attention matrix and how every report shows it."""

    name: str  # its key in metric rows, tables and CSV: "gini", "diagonality_b3"
    label: str  # a reader's name for it: "Gini coefficient", "Diagonality (bandwidth = 3)"
    short: str  # its column in a narrow table: "Gini", "b=3"
    # one (n, n) matrix over real positions -> its value
    of_matrix: Callable[[torch.Tensor], float]
    # many matrices at once (``batched_matrix_metrics``): cells (K, L, L), float32, each matrix's
    # real positions first (its first n_k) and every other cell 0; sizes (K,), the n_k; mass (K,),
    # float64, each matrix's total weight (summed once for every metric) -> (K,) float64
    batched: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
    # matrix sizes n (an array) -> what an even spread (every cell 1/n) gives at each, the same shape
    even: Callable[[np.ndarray], np.ndarray]
    # False where the even spread gives the same value at every size (Gini: 0): a reader's table then
    # shows the value alone, which is its own excess
    even_varies: bool = True
    in_report: bool = True  # a column of an HTML report's table (every metric is in the CSV)

    @property
    def even_name(self) -> str:
        """The key of its even-spread value: ``gini_even``, ``diagonality_b3_even``."""
        return f"{self.name}_even"


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


def _batched_gini(cells: torch.Tensor, sizes: torch.Tensor, total: torch.Tensor) -> torch.Tensor:
    """``gini`` of each matrix (``Metric.batched``). Sorted ascending, the cells outside real x real
    (zeros) come first, so the real cells hold the last N = n^2 ranks: rank i within them is the
    column number minus (L^2 - N), which turns the Gini sum into one vectorised expression: a
    matrix-vector product with the column numbers, then the shift, in float64."""
    length = cells.shape[-1]
    x = cells.flatten(1)
    n = sizes.to(torch.float64)
    big = n * n
    # NumPy's sort (vectorised quicksort) is about 20x faster than torch.sort on these rows on a CPU
    ascending = np.sort(x.detach().numpy(), axis=1)
    by_column = torch.from_numpy(ascending.astype(np.float64) @ np.arange(1, length * length + 1, dtype=np.float64))
    g = (2 * (by_column - (length * length - big) * total) - (big + 1) * total) / (big * total)
    return torch.where(total > 0, g, torch.zeros_like(g))


def _batched_diagonality(cells: torch.Tensor, sizes: torch.Tensor, total: torch.Tensor,
                          bandwidth: int) -> torch.Tensor:
    """``diagonality`` of each matrix (``Metric.batched``): with the real positions first, the mass
    within distance d is the sum of the 2d + 1 diagonals around the main one (11 L cells for b = 5
    instead of L^2), and distance counts real positions only, as cropping would."""
    length = cells.shape[-1]
    within = cells.diagonal(0, 1, 2).sum(-1, dtype=torch.float64)
    for offset in range(1, min(bandwidth, length - 1) + 1):
        within = within + (cells.diagonal(offset, 1, 2).sum(-1, dtype=torch.float64)
                           + cells.diagonal(-offset, 1, 2).sum(-1, dtype=torch.float64))
    d = within / total
    return torch.where(total > 0, d, torch.zeros_like(d))


def _even_gini(n: np.ndarray) -> np.ndarray:
    return np.zeros_like(n)  # every cell equal


def _even_diagonality(n: np.ndarray, bandwidth: int) -> np.ndarray:
    """The share of the n^2 cells within the band: ((2c + 1) n - c (c + 1)) / n^2, c = min(b, n - 1)."""
    c = np.minimum(bandwidth, np.maximum(n - 1, 0))
    return np.where(n > 0, ((2 * c + 1) * n - c * (c + 1)) / np.maximum(n, 1) ** 2, 0.0)


BANDWIDTHS = (1, 2, 3, 4, 5)
REPORTED_BANDWIDTHS = (1, 2, 3)  # the diagonality columns an HTML report has room for
GINI = Metric("gini", "Gini coefficient", "Gini", gini, _batched_gini, _even_gini, even_varies=False)
# the figures of one matrix, in table order: a metric is one entry here
METRICS: tuple[Metric, ...] = (GINI, *(
    Metric(f"diagonality_b{b}", f"Diagonality (bandwidth = {b})", f"b={b}", partial(diagonality, bandwidth=b),
           partial(_batched_diagonality, bandwidth=b), partial(_even_diagonality, bandwidth=b),
           in_report=b in REPORTED_BANDWIDTHS) for b in BANDWIDTHS))


def names() -> list[str]:
    """The registered metrics' keys, in table order."""
    return [m.name for m in METRICS]


def named(name: str) -> Metric:
    """The registered metric of key ``name`` (a ``KeyError`` for a key no metric has)."""
    found = next((m for m in METRICS if m.name == name), None)
    if found is None:
        raise KeyError(f"no metric {name!r}; the metrics are {', '.join(names())}")
    return found


def shown_columns(report: bool = False) -> list[str]:
    """The columns a reader's table gives the metrics: each value, followed by its even-spread value
    where that depends on the matrix's size; ``report``: only those an HTML report has room for."""
    return [c for m in METRICS if m.in_report or not report
            for c in ([m.name, m.even_name] if m.even_varies else [m.name])]


def column_labels() -> dict[str, str]:
    """Each metric column's header in a narrow table: "Gini", "b=1", "b=1 (even)", ..."""
    out = {}
    for m in METRICS:
        out[m.name] = m.short
        if m.even_varies:
            out[m.even_name] = f"{m.short} (even)"
    return out


def even_spread(sizes) -> dict[str, np.ndarray]:
    """The baseline every verdict about attention is judged against: each metric's value for an
    even spread over a matrix of n real positions (every query row spreads its weight evenly over
    the n keys, so every cell is 1/n). ``sizes``: n, an int or an array of them (one per matrix, so
    that means over matrices are length-matched). Returns metric -> array shaped like ``sizes``.

    Gini: 0 at any n (all cells equal). Diagonality at bandwidth b: the share of the n^2 cells
    within the band, ((2c + 1) n - c (c + 1)) / n^2 with c = min(b, n - 1); (7n - 12) / n^2 at
    b = 3 for n > 3: 41% for a 15-word tweet, under 1% for a 1,000-word article. Raw means of
    data sets of different lengths therefore differ without any model, which is why verdicts use
    the excess over this value.
    """
    n = np.asarray(sizes, dtype=np.float64)
    return {m.name: m.even(n) for m in METRICS}


def matrix_metrics(matrix: torch.Tensor) -> dict[str, float]:
    """Every registered metric of one (n, n) matrix over real positions."""
    return {m.name: m.of_matrix(matrix) for m in METRICS}


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
    """One row per matrix of a document: its sentence (or time step), head, size, every metric,
    and each metric's even-spread value at that size (``gini_even``, ...). ``sentence`` is None for
    maps without a sentence axis. Computed for all matrices at once (``metric_columns``); equal to
    ``matrix_metrics`` on each cropped matrix."""
    if not attention.is_self_attention:
        raise ValueError("metrics need a self-attention map (with a 'query' axis)")
    one = AttentionMap(attention.weights[batch_index: batch_index + 1], attention.axes, attention.level,
                       attention.mask[batch_index: batch_index + 1])
    group_axis = next((a for a in GROUP_AXES if a in attention.axes), None)
    cols = metric_columns(one, min_size=1)
    sizes = cols["size"].tolist()
    evens = even_spread(np.asarray(sizes, dtype=np.float64))  # every matrix at once: once per matrix cost a quarter
    figures = {**{m.name: cols[m.name].tolist() for m in METRICS},
               **{m.even_name: evens[m.name].tolist() for m in METRICS}}
    rows = []
    for i, (group, head, size) in enumerate(zip(cols["group"].tolist(), cols["head"].tolist(), sizes)):
        row = {"sentence": None, group_axis or "sentence": group if group_axis else None, "head": head, "size": size}
        rows.append({**row, **{key: values[i] for key, values in figures.items()}})
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
    """Every metric of every real matrix of a batch's self-attention map with at least ``min_size``
    real positions, as columns: ``batch_index``, ``group`` (-1 for maps without a sentence or time
    axis), ``head``, ``size``, then one per metric (``gini``, ``diagonality_b1`` ...), in batch,
    group, head order."""
    w, m, group = grouped(a)
    real = m.diagonal(dim1=-2, dim2=-1)  # (batch, group, head, L): a position is real when it sees itself
    keep = real.sum(-1) >= max(min_size, 1)
    doc, g, h = keep.nonzero(as_tuple=True)
    cols = {"batch_index": doc, "group": g if group else torch.full_like(g, -1), "head": h,
            "size": real[keep].sum(-1)}
    cols.update(batched_matrix_metrics(w[keep].float(), real[keep]))
    return cols


def batched_matrix_metrics(weights: torch.Tensor, real: torch.Tensor, metrics: Sequence[Metric] | None = None,
                           cells_per_chunk: int = 1 << 20) -> dict[str, torch.Tensor]:
    """``metrics`` (default every registered one) of many matrices at once, equal to
    ``matrix_metrics`` on each matrix cropped to its real positions (explain and the data set
    statistics need this to be fast).

    ``weights``: (K, L, L) query x key, padded; ``real``: (K, L) bool, the real positions of each.
    Returns metric -> (K,) float64.

    Each metric gets the cells of real x real, the rest zeroed, with each matrix's real positions
    moved first in their order (padding leaves them first already): a metric of the cropped matrix
    depends on nothing else. Matrices go in order of size, in chunks of about ``cells_per_chunk``
    cells, each cropped to its largest matrix, so short sentences do not pay for the padding of
    long ones.
    """
    metrics = METRICS if metrics is None else tuple(metrics)
    k = real.shape[0]
    out = {m.name: torch.zeros(k, dtype=torch.float64) for m in metrics}
    sizes = real.sum(1)
    order = torch.argsort(sizes, stable=True)
    sorted_sizes = sizes[order].tolist()
    chunks, first = [], 0
    while first < k:
        last = first + 1  # grow the chunk while its cropped cells stay within budget
        while last < k and (last + 1 - first) * max(sorted_sizes[last], 1) ** 2 <= cells_per_chunk:
            last += 1
        chunks.append(order[first: last])
        first = last

    def one(idx: torch.Tensor) -> list[torch.Tensor]:
        cells, n = _real_cells_first(weights[idx], real[idx])
        mass = cells.flatten(1).sum(1, dtype=torch.float64)
        return [m.batched(cells, n, mass) for m in metrics]

    workers = min(len(chunks), torch.get_num_threads())  # the process's share of the cores (hierattn.threads)
    if workers > 1:  # NumPy's sort and torch's kernels let go of the interpreter: chunks sort side by side
        with ThreadPoolExecutor(workers) as pool:
            done = list(pool.map(one, chunks))
    else:
        done = [one(chunk) for chunk in chunks]
    # written here, not in the workers: a worker thread is outside the caller's inference mode, where
    # an in-place write into the caller's tensors is refused
    for idx, values in zip(chunks, done):
        for m, v in zip(metrics, values):
            out[m.name][idx] = v
    return out


def _real_cells_first(weights: torch.Tensor, real: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(cells, sizes) for ``Metric.batched``: float32 cells (half the sorting work of float64; the
    metrics sum in float64, so errors stay below 1e-6) with each matrix's real positions first, in
    their order, cropped to the largest, and zero outside real x real; and each matrix's size."""
    weights, real = weights.cpu(), real.cpu()
    sizes = real.sum(1)
    length = real.shape[1]
    if not bool((real == (torch.arange(length) < sizes[:, None])).all()):  # scattered: gather them first
        order = torch.argsort((~real).to(torch.uint8), dim=1, stable=True)
        weights = weights.gather(1, order[:, :, None].expand(-1, -1, weights.shape[2]))
        weights = weights.gather(2, order[:, None, :].expand(-1, weights.shape[1], -1))
        real = real.gather(1, order)
    longest = max(int(sizes.max()), 1)
    real = real[:, :longest]
    return weights[:, :longest, :longest].to(torch.float32) * (real[:, :, None] & real[:, None, :]), sizes
