"""Pieces shared by the models: masked softmax and the self/target attention of HCAN."""
from __future__ import annotations

import math
from contextlib import contextmanager
from contextvars import ContextVar

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from hierattn.models.intervention import intervene, overriding
from hierattn.models.packed import Packed, packed_convolution, taps_of

# Every batch has its own lengths (length buckets, sentence groups), and cuDNN's attention builds
# a plan for each new shape: on an H100 that cost ~12 ms a call and made HCAN train at 21
# documents/s in bf16 (397 without it). The memory-efficient kernel takes the boolean key mask.
VARYING_SHAPE_BACKENDS = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


def masked_softmax(scores: torch.Tensor, key_mask: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax over real keys only; rows with no real key come out all zeros (not NaN)."""
    scores = scores.masked_fill(~key_mask, float("-inf"))
    weights = torch.softmax(scores, dim=dim)
    return torch.nan_to_num(weights, nan=0.0)


def masked_max(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(N, L, d), (N, L) -> (N, d): max over real positions; 0 where a sequence has none."""
    x = x.masked_fill(~mask.unsqueeze(-1), float("-inf")).amax(dim=1)
    return torch.where(torch.isinf(x), torch.zeros_like(x), x)


def max_over_windows(maps: torch.Tensor, lengths: torch.Tensor, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, C, P) convolution outputs -> (max, argmax) over the windows of ``width`` that start
    inside each sequence of ``lengths`` real positions (a sequence shorter than ``width`` keeps its
    first window), so padding added by a batch never wins."""
    starts = torch.arange(maps.shape[-1], device=maps.device)[None, :]
    valid = starts <= (lengths - width).clamp(min=0)[:, None]
    return maps.masked_fill(~valid.unsqueeze(1), float("-inf")).max(-1)


class ConvFeatures(nn.Module):
    """act(Conv1D(E, W) + b) over a sequence, window ``kernel`` and 'same' padding (HCAN eq. 2).

    Padded positions are zeroed before the convolution, so a real word next to padding sees the
    same zeros as at the true end of its sequence: results do not depend on how much padding a
    batch adds.
    """

    def __init__(self, d: int, kernel: int, activation):
        super().__init__()
        self.conv = nn.Conv1d(d, d, kernel, padding=kernel // 2)
        self.activation = activation

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:  # (N, L, d) -> (N, L, d)
        x = x * mask.unsqueeze(-1)
        return self.activation(self.conv(x.transpose(1, 2)).transpose(1, 2))


# Local to the calling thread (and asyncio task): one session's reference run never changes the
# implementation another thread of the server is using.
_REFERENCE: ContextVar[bool] = ContextVar("hierattn_reference_layers", default=False)


@contextmanager
def straightforward():
    """Within this block, in this thread only, HCAN runs its reference implementation: one
    convolution per Q, K and V, explicit masked softmax, weights kept, even when no weights are
    asked for. The bench measures the fast paths against it; the tests check both give the same
    numbers."""
    token = _REFERENCE.set(True)
    try:
        yield
    finally:
        _REFERENCE.reset(token)


def is_straightforward() -> bool:
    return _REFERENCE.get()


def cheap_dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Inverted dropout with a mask cut from 16-bit slices of 64-bit random integers.

    On CPU, ``bernoulli_`` (what ``F.dropout`` and the math path of ``scaled_dot_product_attention``
    use) draws one random number per element: 36 ms for a (800, 4, 30, 30) attention map on our
    2-core machine, 14% of an HCAN training step. Four 16-bit draws per 64-bit integer take 6 ms.
    The keep probability is rounded to a multiple of 1/65536 (0.7 -> 0.69999695) and the kept
    values are scaled by its inverse, so the expectation is unchanged. Elsewhere (CUDA, where
    ``bernoulli_`` is fast), and inside ``straightforward()``, this is ``F.dropout``.
    """
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu" or _REFERENCE.get():
        return F.dropout(x, p, True)
    n = x.numel()
    bits = torch.randint(-2 ** 63, 2 ** 63 - 1, ((n + 3) // 4,), dtype=torch.int64, device=x.device)
    kept = round((1.0 - p) * 65536)  # how many of the 65,536 16-bit values mean "keep"
    keep = bits.view(torch.int16)[:n].view(x.shape) < kept - 32768
    return x * keep * (65536 / kept)


class CheapDropout(nn.Dropout):
    """``nn.Dropout`` (same state, same ``p``) drawing its mask with ``cheap_dropout``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cheap_dropout(x, self.p, self.training)


def stacked_kernels(owner: nn.Module, convs) -> tuple[torch.Tensor, torch.Tensor]:
    """The kernels and biases of ``convs`` stacked along the output channels, so one convolution
    computes all of them (same numbers, one pass over the input). With gradients on, they are
    stacked on every call so gradients reach each convolution; at inference the stack is kept on
    ``owner`` until a parameter changes."""
    if torch.is_grad_enabled():
        return torch.cat([c.weight for c in convs]), torch.cat([c.bias for c in convs])
    key = tuple((t.data_ptr(), t._version) for c in convs for t in (c.weight, c.bias))
    if getattr(owner, "_stack_key", None) != key:
        owner._stack = (torch.cat([c.weight for c in convs]), torch.cat([c.bias for c in convs]))
        owner._stack_key = key
    return owner._stack


def stacked_taps(owner: nn.Module, convs) -> tuple[torch.Tensor, torch.Tensor]:
    """``stacked_kernels`` as the tap matrix ``packed_convolution`` reads (inference only), kept
    on ``owner`` with the stack it was made from: a new stack (a parameter changed) makes new taps."""
    weight, bias = stacked_kernels(owner, convs)
    made_from, taps = getattr(owner, "_taps", (None, None))
    if made_from is not weight:
        taps = taps_of(weight).contiguous()
        owner._taps = (weight, taps)
    return taps, bias


def split_heads(x: torch.Tensor, heads: int) -> torch.Tensor:  # (N, L, d) -> (N, h, L, d/h)
    n, length, d = x.shape
    return x.view(n, length, heads, d // heads).transpose(1, 2)


class ConvMultiHeadSelfAttention(nn.Module):
    """Convolutional multi-head self-attention (HCAN eq. 1-3).

    Scores are scaled by sqrt(d/h), the per-head width, as in Vaswani et al.; the paper writes
    sqrt(d) in eq. 1 before introducing heads, and we read it as the dimension of the dot product.
    """

    def __init__(self, d: int, heads: int, kernel: int, value_activation, dropout: float, site: str | None = None):
        super().__init__()
        if d % heads:
            raise ValueError(f"d={d} is not divisible by heads={heads}")
        self.heads = heads
        self.site = site  # the map's name, for ``intervention``
        self.q = ConvFeatures(d, kernel, F.elu)
        self.k = ConvFeatures(d, kernel, F.elu)
        self.v = ConvFeatures(d, kernel, value_activation)
        self.dropout = CheapDropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, need_weights: bool = True):
        # x: (N, L, d); mask: (N, L) -> out (N, L, d), weights (N, h, L, L) or None
        if _REFERENCE.get():
            q, k, v = (split_heads(f(x, mask), self.heads) for f in (self.q, self.k, self.v))
        elif not need_weights and not overriding():
            return self._fast(x, mask), None
        else:
            q, k, v = (split_heads(t.contiguous(), self.heads) for t in self._qkv(x, mask))
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        pair_mask = mask[:, None, :, None] & mask[:, None, None, :]  # (N, 1, L, L)
        weights = masked_softmax(scores, pair_mask)
        if self.site is not None:
            weights = intervene(self.site, weights, pair_mask)
        out = (self.dropout(weights) @ v).transpose(1, 2).reshape(x.shape)
        return out * mask.unsqueeze(-1), weights

    def _qkv(self, x: torch.Tensor, mask: torch.Tensor):
        """Q, K and V (each (N, L, d)) from one convolution with the three kernels stacked: the same
        numbers as the three ``ConvFeatures``, one pass over the input instead of three."""
        d = x.shape[-1]
        weight, bias = stacked_kernels(self, (self.q.conv, self.k.conv, self.v.conv))
        qkv = F.conv1d((x * mask.unsqueeze(-1)).transpose(1, 2), weight, bias,
                       padding=self.q.conv.padding).transpose(1, 2)
        return F.elu(qkv[..., :d]), F.elu(qkv[..., d: 2 * d]), self.v.activation(qkv[..., 2 * d:])

    def packed(self, x: torch.Tensor, rows: Packed, need_weights: bool = True):
        """``forward`` at inference over packed sequences: x (T, d) -> out (T, d), weights: one
        (n_g, h, L_g, L_g) map per length group of ``rows.parts``, or None. The convolution reads
        the real positions alone; the attention runs in each group's padded layout."""
        d = x.shape[-1]
        qkv = packed_convolution(x, *stacked_taps(self, (self.q.conv, self.k.conv, self.v.conv)), rows)
        if self.v.activation is F.elu:
            qkv = F.elu(qkv)
        else:
            qkv = torch.cat([F.elu(qkv[:, :2 * d]), self.v.activation(qkv[:, 2 * d:])], 1)
        qkv[:, :d] *= (self.heads / d) ** 0.5  # 1 / sqrt(d/h), on the T real rows
        outs, weights = zip(*(self._padded_attention(qkv[part.positions], part.packed, need_weights)
                              for part in rows.parts))
        return torch.cat(outs), list(weights) if need_weights else None

    def _padded_attention(self, qkv: torch.Tensor, rows: Packed, need_weights: bool):
        """(T, 3d) scaled Q, K, V of ``rows`` -> out (T, d), weights (n, h, L, L) or None: the
        weights of ``forward`` in fewer passes over the scores (masked in place; a row with no
        real key attends to any, and padded queries are zeroed after the softmax). Without
        weights, PyTorch's fused attention (as ``_fast``)."""
        (n, length), d = rows.mask.shape, qkv.shape[1] // 3  # (n, L, 3d) -> Q, K, V each (n, h, L, d/h), one copy
        q, k, v = rows.pad(qkv).view(n, length, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4).contiguous()
        keys = (rows.mask | ~rows.mask.any(-1, keepdim=True))[:, None, None, :]  # (n, 1, 1, L)
        if need_weights:
            scores = (q @ k.transpose(-1, -2)).masked_fill_(~keys, float("-inf"))
            weights = torch.softmax(scores, -1).mul_(rows.mask[:, None, :, None])
            out = weights @ v
        else:
            weights, out = None, F.scaled_dot_product_attention(q, k, v, attn_mask=keys, scale=1.0)
        return rows.pack(out.transpose(1, 2).reshape(n, length, d)), weights

    def _fast(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The same output without the weights (training). Padded queries attend to the real keys
        here (not to nothing); their outputs are zeroed below, so real positions get exactly what
        ``forward`` gives them. Without dropout: PyTorch's fused scaled-dot-product attention. With
        it, on CPU, SDPA falls back to its math path and a ``bernoulli_`` mask, so the same math is
        written out here with ``cheap_dropout``."""
        q, k, v = (split_heads(t.contiguous(), self.heads) for t in self._qkv(x, mask))
        keys = (mask | ~mask.any(-1, keepdim=True))[:, None, None, :]  # no real position: any keys, output zeroed
        p = self.dropout.p if self.training else 0.0
        if x.device.type == "cuda":
            with sdpa_kernel(VARYING_SHAPE_BACKENDS):
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=keys, dropout_p=p)
        elif p == 0.0 or x.device.type != "cpu":
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=keys, dropout_p=p)
        else:
            scores = (q @ k.transpose(-1, -2)).mul_(1 / math.sqrt(q.shape[-1])).masked_fill_(~keys, float("-inf"))
            out = self.dropout(torch.softmax(scores, -1)) @ v
        return out.transpose(1, 2).reshape(x.shape) * mask.unsqueeze(-1)


TARGET_STARTS = ("scaled", "normal")


class ConvMultiHeadTargetAttention(nn.Module):
    """Convolutional multi-head target attention against a learned target vector T (HCAN eq. 5).

    ``start``: how T is drawn before training. The paper learns T and does not say how it starts.
    "scaled", N(0, 1/d) (norm about 1, 1/sqrt(h) a head): against keys of norm about 5 it gives
    scores that differ by 0.07-0.13 across positions, so the softmax starts nearly even.
    "normal", N(0, 1) (norm about sqrt(d)), is the scale of a learned query: a layer-normed input
    (entries of unit variance) through a projection initialised with variance 1/d gives entries of
    unit variance, which is what the keys' dot products with T are scaled for (1/sqrt(d/h) in
    ``_attend``). ``variance``, when given, overrides both: T ~ N(0, variance), for the registry's
    sweep of the start. That sweep found that training barely moves |T| from where it starts, so the
    start sets how sharp the trained attention is (docs/RESULTS.md, "Where the attention starts")."""

    def __init__(self, d: int, heads: int, kernel: int, dropout: float, site: str | None = None,
                 start: str = "normal", variance: float | None = None):
        super().__init__()
        if start not in TARGET_STARTS:
            raise ValueError(f"target_start must be one of {', '.join(TARGET_STARTS)}, not {start!r}")
        if variance is not None and not variance > 0:
            raise ValueError(f"target_variance must be above 0, not {variance!r}")
        self.heads = heads
        self.site = site
        std = math.sqrt(variance) if variance is not None else d ** -0.5 if start == "scaled" else 1.0
        self.target = nn.Parameter(torch.randn(1, 1, d).mul_(std))  # in place: a meta count runs no arithmetic
        self.k = ConvFeatures(d, kernel, F.elu)
        self.v = ConvFeatures(d, kernel, F.elu)
        self.dropout = CheapDropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor):
        # x: (N, L, d); mask: (N, L) -> out (N, d), weights (N, h, L)
        d = x.shape[-1]
        if _REFERENCE.get():
            k, v = split_heads(self.k(x, mask), self.heads), split_heads(self.v(x, mask), self.heads)
            return self._attend(mask, k, v)
        kv = F.conv1d((x * mask.unsqueeze(-1)).transpose(1, 2), *stacked_kernels(self, (self.k.conv, self.v.conv)),
                      padding=self.k.conv.padding).transpose(1, 2)  # K and V in one pass, as in self-attention
        k, v = (split_heads(F.elu(t).contiguous(), self.heads) for t in (kv[..., :d], kv[..., d:]))
        return self._attend(mask, k, v)

    def packed(self, x: torch.Tensor, rows: Packed):
        """``forward`` at inference over packed sequences: x (T, d) -> out (n, d), weights: one
        (n_g, h, L_g) map per length group of ``rows.parts``."""
        d = x.shape[-1]
        kv = F.elu(packed_convolution(x, *stacked_taps(self, (self.k.conv, self.v.conv)), rows))
        outs, weights = [], []
        for part in rows.parts:
            n, length = part.packed.mask.shape  # (n, L, 2d) -> K, V each (n, h, L, d/h), in one copy
            k_v = part.packed.pad(kv[part.positions]).view(n, length, 2, self.heads, d // self.heads)
            k_v = k_v.permute(2, 0, 3, 1, 4)
            out, w = self._attend(part.packed.mask, *k_v.contiguous())
            outs.append(out)
            weights.append(w)
        return torch.cat(outs), weights

    def _attend(self, mask, k, v):  # mask (N, L); k, v (N, h, L, d/h)
        t = split_heads(self.target.expand(k.shape[0], 1, -1), self.heads)  # (N, h, 1, d/h)
        scores = t @ k.transpose(-1, -2) / math.sqrt(k.shape[-1])  # (N, h, 1, L)
        weights = masked_softmax(scores, mask[:, None, None, :])
        if self.site is not None:
            weights = intervene(self.site, weights, mask[:, None, None, :])
        out = (self.dropout(weights) @ v).reshape(k.shape[0], k.shape[1] * k.shape[3])  # heads concatenated
        return out, weights.squeeze(2)


class AdditiveAttention(nn.Module):
    """HAN attention (Yang et al. 2016): u = tanh(W h + b), alpha = softmax(u . u_w)."""

    def __init__(self, d_in: int, d_att: int, site: str | None = None, variance: float | None = None):
        super().__init__()
        if variance is not None and not variance > 0:
            raise ValueError(f"context_variance must be above 0, not {variance!r}")
        self.site = site
        self.proj = nn.Linear(d_in, d_att)
        # u_w ~ N(0, 1/d_att) unless ``variance`` says otherwise (the registry's sweep of the start)
        std = math.sqrt(variance) if variance is not None else d_att ** -0.5
        self.context = nn.Parameter(torch.randn(d_att).mul_(std))  # in place: a meta count runs no arithmetic

    def forward(self, h: torch.Tensor, mask: torch.Tensor):
        # h: (N, L, d_in); mask (N, L) -> out (N, d_in), weights (N, L)
        if _REFERENCE.get():
            scores = torch.tanh(self.proj(h)) @ self.context
        else:  # the projection and tanh at real positions only: the same scores, without padding's share
            real = mask.view(-1).nonzero().squeeze(1)  # (T,)
            real_scores = torch.tanh(self.proj(h.reshape(-1, h.shape[-1]).index_select(0, real))) @ self.context
            scores = h.new_zeros(mask.numel()).index_copy(0, real, real_scores).view(mask.shape)
        weights = masked_softmax(scores, mask)
        if self.site is not None:
            weights = intervene(self.site, weights, mask)
        return (weights.unsqueeze(-1) * h).sum(1), weights
