"""A bidirectional GRU over left-aligned padded sequences, for the CPU: both directions advance in
one batched step, the inputs are projected once for every step, and the backward pass through time
is written out by hand.

It computes what ``nn.GRU(bidirectional=True)`` on a packed sequence computes (same parameters, same
gate equations, PyTorch's convention ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``), padding
never entering the recurrence. Why: on a 2-core CPU, HAN's word BiGRU spent most of a training step
in the per-step bookkeeping of the packed recurrence and its autograd graph (one node per operation
per step and direction, a matrix product per step for each weight gradient, ``add_``/``copy_``/
``fill_`` for the slices of a packed sequence). Here a step is seven operations for both
directions together, and the weight gradients are two matrix products over the whole sequence.

Like a packed sequence, only real positions are computed: sequences are sorted by length, longest
first, so that the rows still running at step ``t`` are a prefix of those of step ``t - 1``, and
each step's rows are stored one after the other. The backward direction reads each sequence
reversed within its own length, so it runs forwards in time as well, in the same step as the
forward direction.
"""
from __future__ import annotations

import torch
from torch import nn


class _Recurrence(torch.autograd.Function):
    """h_t = GRU(gi_t, h_{t-1}) for two directions at once, over a packed sequence.

    gi: (2, T, 3H), the input projections W_ih x + b_ih of every real position, step by step:
    step t holds rows ``[offsets[t], offsets[t] + sizes[t])``, its running sequences, longest first
    (a prefix of the previous step's). w_hh: (2, 3H, H); b_hh: (2, 3H). ``previous``: (T,) the
    position of each row's state at step t - 1, T (a zero row) at t = 0. Returns h: (2, T, H).
    """

    @staticmethod
    def forward(ctx, gi, w_hh, b_hh, sizes, offsets, previous):
        _, T, G = gi.shape
        H = G // 3
        out = gi.new_empty(2, T, H)
        gates = gi.new_empty(2, T, 2 * H)  # sigmoid(r), sigmoid(z), kept for the backward pass
        candidate = gi.new_empty(2, T, H)  # n
        hidden_n = gi.new_empty(2, T, H)  # W_hn h + b_hn
        weight, bias = w_hh.transpose(1, 2), b_hh.unsqueeze(1)  # (2, H, 3H), (2, 1, 3H)
        h = gi.new_zeros(2, sizes[0], H)
        for start, b in zip(offsets, sizes):
            rows = slice(start, start + b)
            h = h[:, :b]
            gh = torch.baddbmm(bias, h, weight)  # (2, b, 3H)
            g = gi[:, rows]
            rz = torch.sigmoid(g[..., :2 * H] + gh[..., :2 * H], out=gates[:, rows])
            hidden_n[:, rows] = gh[..., 2 * H:]
            n = torch.tanh(torch.addcmul(g[..., 2 * H:], rz[..., :H], gh[..., 2 * H:]), out=candidate[:, rows])
            h = torch.lerp(n, h, rz[..., H:], out=out[:, rows])  # (1 - z) * n + z * h
        ctx.save_for_backward(w_hh, out, gates, candidate, hidden_n, previous)
        ctx.steps = (sizes, offsets)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out):
        w_hh, out, gates, candidate, hidden_n, previous = ctx.saved_tensors
        _, T, H = out.shape
        h_before = torch.cat([out, out.new_zeros(2, 1, H)], 1)[:, previous]  # (2, T, H): h_{t-1} of each row
        d_gh = out.new_empty(2, T, 3 * H)  # gradient of W_hh h + b_hh at each row
        d_gi_n = out.new_empty(2, T, H)  # the n gate's input part differs from its hidden part by r
        d_h = out.new_zeros(2, 0, H)  # carried from step t + 1
        sigmoid_backward, tanh_backward = torch.ops.aten.sigmoid_backward, torch.ops.aten.tanh_backward
        sizes, offsets = ctx.steps
        for start, b in zip(reversed(offsets), reversed(sizes)):
            rows = slice(start, start + b)
            d = grad_out[:, rows].clone()
            d[:, :d_h.shape[1]] += d_h  # rows that ended after this step get nothing carried
            r, z = gates[:, rows, :H], gates[:, rows, H:]
            n = candidate[:, rows]
            step = d_gh[:, rows]
            d_n = tanh_backward.grad_input(d - d * z, n, grad_input=d_gi_n[:, rows])
            sigmoid_backward.grad_input(d_n * hidden_n[:, rows], r, grad_input=step[..., :H])
            sigmoid_backward.grad_input(d * (h_before[:, rows] - n), z, grad_input=step[..., H:2 * H])
            torch.mul(d_n, r, out=step[..., 2 * H:])
            d_h = torch.baddbmm(d * z, step, w_hh)
        d_w_hh = torch.bmm(d_gh.transpose(1, 2), h_before)
        d_gi = torch.cat([d_gh[..., :2 * H], d_gi_n], -1)
        return d_gi, d_w_hh, d_gh.sum(1), None, None, None


def fused_bigru(gru: nn.GRU, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(N, L, d_in), (N, L) left-aligned -> (N, L, 2H) with zeros at padding, as ``run_rnn`` gives
    for a one-layer bidirectional ``nn.GRU`` (whose parameters it uses)."""
    N, L, d_in = x.shape
    H = gru.hidden_size
    if N == 0 or L == 0:
        return x.new_zeros(N, L, 2 * H) + 0 * x.sum()  # nothing to run; keeps the graph connected
    lengths = mask.sum(-1).clamp(min=1)
    lengths, order = torch.sort(lengths, descending=True, stable=True)
    running = torch.arange(L, device=x.device)[:, None] < lengths[None, :]  # (L, N): sorted row i runs at t
    t, i = running.nonzero(as_tuple=True)  # every real position, step by step, longest row first
    sizes = running.sum(1)
    sizes = sizes[sizes > 0]
    offsets = torch.cumsum(sizes, 0) - sizes
    T = t.numel()
    # the state a row carries into step t sits at row i of step t - 1
    previous = torch.where(t > 0, offsets[(t - 1).clamp(min=0)] + i, T)
    row = order[i] * L
    source = torch.cat([row + t, row + lengths[i] - 1 - t])  # forwards, and each row reversed in its length
    w_ih = torch.stack([gru.weight_ih_l0, gru.weight_ih_l0_reverse])  # (2, 3H, d_in)
    b_ih = torch.stack([gru.bias_ih_l0, gru.bias_ih_l0_reverse])
    w_hh = torch.stack([gru.weight_hh_l0, gru.weight_hh_l0_reverse])
    b_hh = torch.stack([gru.bias_hh_l0, gru.bias_hh_l0_reverse])
    packed = x.reshape(N * L, d_in).index_select(0, source).view(2, T, d_in)
    gi = torch.baddbmm(b_ih.unsqueeze(1), packed, w_ih.transpose(1, 2))  # (2, T, 3H)
    h = _Recurrence.apply(gi, w_hh, b_hh, sizes.tolist(), offsets.tolist(), previous)  # (2, T, H)
    target = torch.cat([source[:T] * 2, source[T:] * 2 + 1])  # forward state in the first half, backward in the second
    return x.new_zeros(N * L * 2, H).index_copy(0, target, h.reshape(2 * T, H)).view(N, L, 2 * H)


def fits(rnn: nn.Module, x: torch.Tensor) -> bool:
    """Whether ``fused_bigru`` computes this module's output here: a one-layer bidirectional GRU
    with biases, on the CPU, in fp32 without autocast."""
    return (isinstance(rnn, nn.GRU) and rnn.bidirectional and rnn.num_layers == 1 and rnn.bias
            and rnn.batch_first and x.device.type == "cpu" and x.dtype == torch.float32
            and not torch.is_autocast_enabled("cpu"))
