"""Does the model need its attention? The intervention tests of Jain & Wallace (2019, "Attention is
not Explanation", sections 4.1-4.3) and Wiegreffe & Pinter (2019, "Attention is not not
Explanation", sections 3.1 and 3.2), on any model whose attention sites take an
``attention_override`` (``hierattn.models.intervention``).

Readings (each tested in tests/analysis/test_attention_tests.py):

- **Output change** is the total variation distance between the two output distributions,
  TVD(p, q) = 1/2 sum_c |p_c - q_c| (Jain & Wallace's measure for more than two classes; for two
  it is |p_1 - q_1|, their binary |delta y|).
- **Kendall tau** is tau-b (ties counted as Kendall's tau-b counts them), between the attention
  and (a) gradient importance: |d y / d x_t| for the one-hot input x_t of word t, which is
  |gradient . embedding| of the predicted class's probability with every attention weight held
  constant (detached), as Jain & Wallace compute it (``faithfulness.gradient_times_input`` with
  ``jain_wallace=True``; a gradient through the attention, of the logit, would not be theirs),
  and (b) leave-one-out: TVD between the output with and without unit t.
- **Permutation**: each real position's weight goes to another real position of the same
  distribution (a random permutation per distribution: every sentence's word attention, every head,
  every copy), all sites of a level at once; ``draws`` permutations; the figure is the median TVD.
- **Uniform** (Wiegreffe & Pinter 3.1): every distribution of the level's sites replaced by an
  even spread over its real keys, at inference; per document the TVD and whether the predicted class
  changes; over a split the accuracy with and without.
- **Adversarial** (Jain & Wallace 4.3): ``k`` distributions searched by gradient ascent (Adam on
  their logits) to be as far as possible, in Jensen-Shannon divergence (natural log, ceiling ln 2),
  from the real ones while the output stays within ``epsilon`` TVD of the real output; the loss is
  -JSD + ``penalty`` x max(0, TVD - epsilon). At the word level of a hierarchical model a document
  has one word distribution per sentence: its divergence is their mean (over sentences with at
  least two words, and over heads). The figure is the largest divergence any of the k reached within
  epsilon (None when none did).
- **JSD** between two attention distributions (seed variance) uses the same divergence.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from hierattn.analysis.eraser import output_distributions
from hierattn.checkpoint.classifier import Classifier
from hierattn.contract import ATTENTION
from hierattn.data.batches import encode_documents
from hierattn.data.text import Document
from hierattn.models.intervention import attention_override


def tvd(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Total variation distance over the last axis."""
    return 0.5 * (p - q).abs().sum(-1)


def jsd(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon divergence (natural log, 0..ln 2) over the last axis; zeros contribute 0.
    Differentiable: the adversarial search climbs it, which scipy's ``jensenshannon`` (NumPy, no
    autograd) cannot do. Where nothing needs a gradient, ``js_divergence`` is scipy's; a test holds
    the two equal on recorded inputs."""
    m = 0.5 * (p + q)

    def kl(a):
        return torch.where(a > 0, a * (torch.log(a.clamp_min(1e-30)) - torch.log(m.clamp_min(1e-30))),
                           torch.zeros_like(a)).sum(-1)

    return (0.5 * kl(p) + 0.5 * kl(q)).clamp_min(0.0)


def js_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen-Shannon divergence (natural log, 0..ln 2) between matching distributions over the last
    axis: scipy's Jensen-Shannon distance, squared (it is the divergence's square root)."""
    from scipy.spatial.distance import jensenshannon

    return jensenshannon(np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64), axis=-1) ** 2


def kendall_tau(a: list[float], b: list[float]) -> float | None:
    """Kendall's tau-b (scipy's, which counts ties as tau-b does); None for fewer than two items or
    a constant side, where it is undefined."""
    from scipy.stats import kendalltau

    if len(a) != len(b):
        raise ValueError("kendall_tau needs two lists of the same length")
    if len(a) < 2:
        return None
    tau = kendalltau(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), variant="b").statistic
    return None if math.isnan(tau) else float(tau)


def level_sites(attentions: dict, level: str) -> list[str]:
    """The sites whose weights make the representation at ``level``: the pooling (target)
    attention where the model has one, else its self-attention at that level. Gates and coverage
    are not attention and have no site. A map aggregated from another (``AttentionMap.source``: a
    transformer's words from its tokens) stands for its source, where the model computes them."""
    maps = {n: a for n, a in attentions.items() if a.level == level and a.kind == ATTENTION}
    pooling = [n for n, a in maps.items() if not a.is_self_attention]
    names = pooling or [n for n, a in maps.items() if a.is_self_attention]
    return list(dict.fromkeys(maps[n].source or n for n in names))


def reachable(classifier: Classifier, document: Document, sites: list[str]) -> list[str]:
    """The sites among ``sites`` that the model passes through an override (models whose attention
    runs inside a recurrent cell, HA-LSTM's, take none)."""
    called = set()

    def record(site, weights, mask):
        called.add(site)
        return weights

    with attention_override(record):
        output_distributions(classifier, [document])
    return [s for s in sites if s in called]


def permute_real(weights: torch.Tensor, mask: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Each distribution's weights over its real keys, randomly permuted among those keys."""
    keys = torch.rand(weights.shape, generator=generator).masked_fill(~mask, 2.0)
    order = keys.argsort(-1)  # real keys first, in random order
    length = weights.shape[-1]
    positions = torch.arange(length).expand_as(weights)
    in_place = (positions + (~mask) * length).argsort(-1)  # real keys first, in order
    return torch.zeros_like(weights).scatter(-1, in_place, weights.gather(-1, order))


def even_spread(weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    m = mask.to(weights.dtype)
    return m / m.sum(-1, keepdim=True).clamp_min(1.0)


def _on(sites: list[str], change: Callable) -> Callable:
    return lambda site, weights, mask: change(weights, mask) if site in sites else weights


def permutation_changes(classifier: Classifier, document: Document, sites: list[str], reference: torch.Tensor,
                        draws: int = 100, seed: int = 0) -> list[float]:
    """TVD from ``reference`` of the output under ``draws`` random permutations of the sites'
    weights."""
    generator = torch.Generator().manual_seed(seed)
    with attention_override(_on(sites, lambda w, m: permute_real(w, m, generator)), in_order=False):
        outputs = output_distributions(classifier, [document] * draws)
    return tvd(outputs, reference).tolist()


def uniform_outputs(classifier: Classifier, documents: list[Document], sites: list[str]) -> torch.Tensor:
    """Output distributions with the sites' attention replaced by an even spread."""
    with attention_override(_on(sites, even_spread), in_order=False):
        return output_distributions(classifier, documents)


@dataclass
class Adversarial:
    site: str
    divergences: list[float | None]  # per candidate: its largest JSD within epsilon, None if never within
    output_changes: list[float]  # per candidate: TVD at that point (or at the end)
    epsilon: float

    @property
    def max_divergence(self) -> float | None:
        found = [d for d in self.divergences if d is not None]
        return max(found) if found else None


def adversarial_search(classifier: Classifier, document: Document, site: str, reference: torch.Tensor, k: int = 5,
                       epsilon: float = 0.01, steps: int = 100, lr: float = 0.5, penalty: float = 500.0,
                       seed: int = 0, progress: Callable[[int, int], None] | None = None) -> Adversarial:
    """Jain & Wallace's adversarial attention at one site (see the module doc)."""
    batch = encode_documents([document] * k, classifier.vocab).to(classifier.device)
    captured = {}

    def capture(s, weights, mask):
        if s == site:
            captured["weights"], captured["mask"] = weights.detach().float().cpu(), mask.cpu()
        return weights

    with attention_override(capture), torch.no_grad():  # not inference tensors: they enter the search graph
        classifier.model(batch, return_attentions=False)
    real, mask = captured["weights"], captured["mask"]
    rows = real.shape[0] // k  # the first axis holds the k copies one after another
    generator = torch.Generator().manual_seed(seed)
    logits0 = torch.log(real.clamp_min(1e-12)) + torch.randn(real.shape, generator=generator)
    z = logits0.clone().requires_grad_(True)
    optimiser = torch.optim.Adam([z], lr=lr)
    keys = mask.sum(-1) >= 2  # distributions that can differ at all
    best: list[float | None] = [None] * k
    at_best = [float("nan")] * k
    reference = reference.float()
    device = classifier.device
    for step in range(steps):
        with torch.enable_grad():
            candidate = torch.softmax(z.masked_fill(~mask, float("-inf")), -1).nan_to_num(0.0)
            with attention_override(lambda s, w, m, c=candidate: c.to(device, w.dtype) if s == site else w):
                logits = classifier.model(batch, return_attentions=False).logits.float().cpu()
            change = tvd(torch.softmax(logits, -1), reference)  # (k,)
            divergence = jsd(candidate, real).masked_fill(~keys, 0.0)
            per_copy = (divergence.reshape(k, rows, -1).sum((1, 2))
                        / keys.reshape(k, rows, -1).sum((1, 2)).clamp_min(1))
        for c in range(k):
            if change[c] <= epsilon and (best[c] is None or per_copy[c] > best[c]):
                best[c], at_best[c] = float(per_copy[c].detach()), float(change[c].detach())
        with torch.enable_grad():
            loss = (-per_copy + penalty * (change - epsilon).clamp_min(0.0)).sum()
            (grad,) = torch.autograd.grad(loss, z)  # no parameter's .grad is touched (the model may be shared)
        optimiser.zero_grad()
        z.grad = grad
        optimiser.step()
        if progress:
            progress(step + 1, steps)
    ends = change.detach().tolist()
    return Adversarial(site, best, [a if not math.isnan(a) else e for a, e in zip(at_best, ends)], epsilon)
