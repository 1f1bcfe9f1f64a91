"""Sequences without their padding: the real positions of a padded batch as the rows of one tensor,
and a 'same' convolution over them that does not reach from one sequence into the next.

HCAN's word level convolves every sentence of a document. Padded to a common width, a news article's
sentences (5 to 57 words) carried 70% padding through every convolution, even in length groups
(1,817 padded positions for 1,068 words). Packed, the convolutions see the 1,068 words alone; only
the attention, a small part of the level's arithmetic, goes back to a padded layout, one per length
group (``Packed.parts``). HCAN packs at inference on a CPU (``HCAN._word_level`` says why there).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import torch


@dataclass(frozen=True)
class Part:
    """One length group of a packing: its rows (``rows`` of the packed mask), their real positions
    (``positions`` of the packed rows), and their own packing, cut to the group's longest row."""

    rows: slice
    positions: slice
    packed: Packed


@dataclass(frozen=True)
class Packed:
    """Where the T real positions of n padded sequences sit.

    ``index`` (T,): each real position's place in the (n * L) grid of the padded layout, in reading
    order; ``mask`` (n, L): True at real positions, L the last real column + 1 (at least 1).
    ``order`` (n,): row i of ``mask`` is row ``order[i]`` of the mask it was made from (None: the
    same rows). ``parts``: the rows in length groups, for what runs in the padded layout (the
    attention), so that a 5-word sentence is not padded to the 57-word one's width."""

    index: torch.Tensor
    mask: torch.Tensor
    order: torch.Tensor | None = None
    parts: tuple[Part, ...] = ()
    _adjacent: dict = field(default_factory=dict, compare=False, repr=False)  # shift -> ``adjacent``

    @staticmethod
    def of(mask: torch.Tensor, groups: int = 1) -> Packed:
        """(n, W) mask -> the packing of its real positions (columns after the last real one
        dropped). ``groups`` > 1: the rows sorted by length (``order``) and cut into that many
        groups of consecutive rows (``parts``); else one part, the whole."""
        if groups <= 1:
            whole = _packing(mask)
            whole_part = Part(slice(0, len(mask)), slice(0, len(whole.index)), whole)
            return Packed(whole.index, whole.mask, None, (whole_part,))
        lengths = mask.sum(1)
        order = lengths.argsort(stable=True)
        mask = mask[order]
        whole = _packing(mask)
        before = [0] + lengths[order].cumsum(0).tolist()  # real positions before each row
        parts = []
        for rows in torch.arange(len(mask)).tensor_split(groups):
            if len(rows):
                first, end = int(rows[0]), int(rows[-1]) + 1
                parts.append(Part(slice(first, end), slice(before[first], before[end]), _packing(mask[first:end])))
        return Packed(whole.index, whole.mask, order, tuple(parts))

    @property
    def gapless(self) -> bool:
        """Every sequence's real positions come first (as ``encode_documents`` lays them out):
        what ``packed_convolution`` needs, its neighbours being the next rows of the packing."""
        return not bool((self.mask[:, 1:] & ~self.mask[:, :-1]).any())

    @property
    def width(self) -> int:
        return self.mask.shape[1]

    @cached_property  # read by the positions and by ``pack``
    def columns(self) -> torch.Tensor:  # (T,): each real position's column, its place in its sequence
        return self.index % self.width

    def pack(self, x: torch.Tensor) -> torch.Tensor:
        """(n, W, ...), rows as in the mask given to ``of`` and W >= L -> (T, ...), in one gather."""
        rows = self.index // self.width
        if self.order is not None:
            rows = self.order[rows]
        return x.reshape((-1,) + tuple(x.shape[2:])).index_select(0, rows * x.shape[1] + self.columns)

    def pad(self, x: torch.Tensor) -> torch.Tensor:  # (T, ...) -> (n, L, ...) rows as ``mask``'s, zeros at padding
        n, width = self.mask.shape
        grid = x.new_zeros((n * width,) + tuple(x.shape[1:])).index_copy_(0, self.index, x)
        return grid.view((n, width) + tuple(x.shape[1:]))

    def adjacent(self, shift: int, dtype: torch.dtype) -> torch.Tensor:
        """(T - shift, 1), shift > 0: 1 where real position t + shift is the position ``shift``
        columns after t in the same sequence, 0 where it is in another sequence. Kept for the
        packing's other convolutions."""
        if (shift, dtype) not in self._adjacent:
            later, earlier = self.index[shift:], self.index[:-shift]
            same = (later - earlier == shift) & (later // self.width == earlier // self.width)
            self._adjacent[shift, dtype] = same.unsqueeze(1).to(dtype)
        return self._adjacent[shift, dtype]


def _packing(mask: torch.Tensor) -> Packed:
    columns = mask.any(0).nonzero()
    width = int(columns.max()) + 1 if len(columns) else 1
    mask = mask[:, :width]
    return Packed(mask.reshape(-1).nonzero().squeeze(1), mask)


def taps_of(weight: torch.Tensor) -> torch.Tensor:
    """(out, d_in, k) Conv1d kernels -> (k * d_in, out): the kernel as one matrix over a window of
    k positions laid side by side (tap j, the input j - k//2 positions away, in rows j * d_in...)."""
    return weight.permute(2, 1, 0).reshape(-1, weight.shape[0])


def packed_convolution(x: torch.Tensor, taps: torch.Tensor, bias: torch.Tensor, rows: Packed) -> torch.Tensor:
    """Conv1D with an odd window k and 'same' zero padding over each packed sequence (``rows``
    gapless), at inference: x (T, d_in), taps (k * d_in, out) from ``taps_of``, bias (out,) ->
    (T, out).

    Each position's window (its neighbours in its own sequence, zeros past either end, as padding
    gives ``F.conv1d``) is laid out as one row, and one matrix product does the rest. Laying out
    the windows costs k times the input; summing each tap's product with shifted rows instead
    would keep k times the output, which for a large batch (18,000 words, three 128-wide kernels)
    took twice as long as the windows."""
    length, d_in = x.shape
    k = taps.shape[0] // d_in
    window = x.new_empty(length, k, d_in)  # (T, k, d_in): row t holds x[t - k//2 .. t + k//2]
    for j in range(k):
        shift = j - k // 2  # position t reads t + shift
        if shift == 0:
            window[:, j] = x
        elif abs(shift) >= length:
            window[:, j] = 0
        elif shift > 0:
            torch.mul(x[shift:], rows.adjacent(shift, x.dtype), out=window[:-shift, j])
            window[-shift:, j] = 0
        else:
            torch.mul(x[:shift], rows.adjacent(-shift, x.dtype), out=window[-shift:, j])
            window[:-shift, j] = 0
    return torch.addmm(bias, window.view(length, k * d_in), taps)
