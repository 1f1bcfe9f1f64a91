"""Hand-written recurrent cells (the ones cuDNN/nn.LSTM cannot express) and a masked scan over time.

``scan`` runs a cell step by step over left-aligned sequences. A sequence's state is frozen once
its real words end, so the result is the same whatever padding a batch adds.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from hierattn.models.common import reverse_padded


def scan(cell: nn.Module, x: torch.Tensor, mask: torch.Tensor, reverse: bool = False):
    """(N, L, d_in), (N, L) -> outputs (N, L, H) (zeros at padding), per-step extras (N, L, ...) or None.

    ``cell.project(x)`` maps every input at once (the input half of the gates, one matmul);
    ``cell.step(projected_t, state) -> (h_t, new_state, extra_t)``.
    """
    if reverse:
        x = reverse_padded(x, mask)
    projected = cell.project(x)
    state = cell.initial_state(x.shape[0], x.device, x.dtype)
    outputs, extras = [], []
    for t in range(x.shape[1]):
        h, new_state, extra = cell.step(projected[:, t], state)
        real = mask[:, t]
        state = tuple(torch.where(real.view(-1, *([1] * (new.dim() - 1))), new, old)
                      for new, old in zip(new_state, state))
        outputs.append(h * real.unsqueeze(-1))
        if extra is not None:
            extras.append(extra * real.view(-1, *([1] * (extra.dim() - 1))))
    out = torch.stack(outputs, 1)
    extra = torch.stack(extras, 1) if extras else None
    if reverse:
        out = reverse_padded(out, mask)
        extra = None if extra is None else reverse_padded(extra, mask)
    return out, extra


class LSTMStateCell(nn.Module):
    """A cell whose state is (h, c), both (n, hidden), starting at zero, and whose gates' input half
    is one linear map of every step at once (``scan`` calls ``project`` once)."""

    hidden: int
    input: nn.Linear

    def project(self, x):
        return self.input(x)

    def initial_state(self, n, device, dtype):
        zeros = torch.zeros(n, self.hidden, device=device, dtype=dtype)
        return zeros, zeros


class CachedLSTMCell(LSTMStateCell):
    """Cached LSTM (Xu et al. 2016, "Cached Long Short-Term Memory Neural Networks for Document-Level
    Sentiment Classification"), as the HAN report (section 2.4) uses it.

    The memory is split into ``groups`` groups of equal size. Group k (k = 0..K-1) has a forgetting
    rate confined to ((k)/K, (k+1)/K): r = (sigmoid(.) + k) / K. The input gate is coupled to it:
    c_t = (1 - r) * c_{t-1} + r * tanh(c~_t), h_t = o * tanh(c_t). Group 0 keeps its memory longest
    (a rate near 0 changes the cell slowly); the last group follows the input closely. This is Xu
    et al.'s convention (rate = share of the new content written); we take it as is.
    """

    def __init__(self, d_in: int, hidden: int, groups: int):
        super().__init__()
        if hidden % groups:
            raise ValueError(f"hidden={hidden} is not divisible by cache groups={groups}")
        self.hidden = hidden
        self.input = nn.Linear(d_in, 3 * hidden)
        self.recurrent = nn.Linear(hidden, 3 * hidden, bias=False)
        self.register_buffer("group", (torch.arange(hidden) // (hidden // groups)).float(), persistent=False)
        self.groups = groups

    def step(self, xg, state):
        h, c = state
        o, r, candidate = (xg + self.recurrent(h)).chunk(3, -1)
        rate = (torch.sigmoid(r) + self.group) / self.groups
        c = (1 - rate) * c + rate * torch.tanh(candidate)
        h = torch.sigmoid(o) * torch.tanh(c)
        return h, (h, c), None


class SlidingAttentionLSTMCell(nn.Module):
    """HA-LSTM cell (2020, section 2): the gates read a_{t-1} = flatten(softmax(Q K^T / sqrt(d_k)) V),
    self-attention over the window H_{t-1} = [h_{t-1}, ..., h_{t-N}] of the last N hidden states,
    in place of h_{t-1} (eq. 1-12), with d_k = d_v = H (section 3.2). The window starts as zeros.

    Window slot w (0-based) holds h_{t-1-w}: slot 0 is the newest state. The extra output of a step
    is its (N, N) attention matrix, queries and keys both indexed by slot.
    """

    def __init__(self, d_in: int, hidden: int, window: int):
        super().__init__()
        self.hidden, self.window = hidden, window
        self.input = nn.Linear(d_in, 4 * hidden)
        self.recurrent = nn.Linear(window * hidden, 4 * hidden, bias=False)  # U_f, U_i, U_o, U_c
        self.q, self.k, self.v = (nn.Linear(hidden, hidden, bias=False) for _ in range(3))

    def project(self, x):
        return self.input(x)

    def initial_state(self, n, device, dtype):
        return (torch.zeros(n, self.window, self.hidden, device=device, dtype=dtype),
                torch.zeros(n, self.hidden, device=device, dtype=dtype))

    def step(self, xg, state):
        window, c = state  # (n, N, H), (n, H)
        scores = self.q(window) @ self.k(window).transpose(1, 2) / math.sqrt(self.hidden)
        weights = torch.softmax(scores, -1)  # (n, N, N)
        a = (weights @ self.v(window)).flatten(1)  # (n, N*H)
        f, i, o, candidate = (xg + self.recurrent(a)).chunk(4, -1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(candidate)
        h = torch.sigmoid(o) * torch.tanh(c)
        window = torch.cat([h.unsqueeze(1), window[:, :-1]], 1)
        return h, (window, c), weights


def cumax(x: torch.Tensor) -> torch.Tensor:
    """Cumulative softmax (Shen et al. 2019, eq. 6): increasing from near 0 to 1 along the last axis."""
    return torch.cumsum(torch.softmax(x, -1), -1)


class OrderedNeuronsLSTMCell(LSTMStateCell):
    """ON-LSTM (Shen et al. 2019, "Ordered Neurons", section 4), with chunk size 1 as the HA-LSTM
    paper runs it (section 4): the master gates have one unit per hidden unit.

    Besides the LSTM's gates f, i, o and candidate c~, a master forget gate F = cumax(.) and a master
    input gate I = 1 - cumax(.) order the hidden units: with w = F * I (their overlap),
    f^ = f * w + (F - w), i^ = i * w + (I - w), c_t = f^ * c_{t-1} + i^ * c~_t, h_t = o * tanh(c_t).
    Units below the forget gate's split point are erased, units above it kept: low units hold
    short-lived (low-level) information, high units long-lived (high-level) information.

    The extra output of a step is softmax of the master forget gate's logits: the distribution of
    the split point over the H ordered units, whose cumulative sum is F. Its expected position says
    how much of the memory the word closes (Shen et al.'s syntactic distance d = H - sum(F)).
    """

    def __init__(self, d_in: int, hidden: int):
        super().__init__()
        self.hidden = hidden
        self.input = nn.Linear(d_in, 6 * hidden)
        self.recurrent = nn.Linear(hidden, 6 * hidden, bias=False)

    def step(self, xg, state):
        h, c = state
        f, i, o, candidate, master_f, master_i = (xg + self.recurrent(h)).chunk(6, -1)
        split = torch.softmax(master_f, -1)  # (n, H): where the forgetting boundary falls
        keep = torch.cumsum(split, -1)  # F
        write = 1 - cumax(master_i)  # I
        overlap = keep * write
        f_hat = torch.sigmoid(f) * overlap + (keep - overlap)
        i_hat = torch.sigmoid(i) * overlap + (write - overlap)
        c = f_hat * c + i_hat * torch.tanh(candidate)
        h = torch.sigmoid(o) * torch.tanh(c)
        return h, (h, c), split


class Bidirectional(nn.Module):
    """Two cells, one reading forwards and one backwards; outputs concatenated (N, L, 2H)."""

    def __init__(self, forward_cell: nn.Module, backward_cell: nn.Module):
        super().__init__()
        self.forward_cell, self.backward_cell = forward_cell, backward_cell

    def forward(self, x, mask):
        forwards, _ = scan(self.forward_cell, x, mask)
        backwards, _ = scan(self.backward_cell, x, mask, reverse=True)
        return torch.cat([forwards, backwards], -1)
