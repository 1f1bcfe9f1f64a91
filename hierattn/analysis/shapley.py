"""The sentences' Shapley values beside attention (captum's KernelSHAP), and Explore's table that
sets them beside sentence occlusion and the sentence attention.

Lundberg & Lee 2017's KernelSHAP at the sentence level: each sentence's Shapley value for
P(class), the game's players the sentences, a coalition the document keeping a subset of them (one
forward pass each). Wherever every coalition fits the pass budget (2^n <= ``SHAP_MAX_PASSES``: up to
``EXACT_SENTENCES`` = 9 sentences at 512) every coalition is enumerated and the values are exact:
KernelSHAP with every coalition is the Shapley value, so there is nothing to estimate, and sampling
512 coalitions of a 9-sentence article left its values up to 7.3 points off for the same cost.
Beyond that, captum's KernelSHAP samples coalitions in complementary pairs
(a coalition and the rest of the document: the paired sampling of Covert & Lee 2021, which cancels
much of the estimator's variance), in independent draws of ``SHAP_DRAW`` coalitions, until the
standard error of their mean, measured from the spread between draws, is below ``SHAP_ERROR`` or
``SHAP_MAX_PASSES`` are spent; the values carry that error. 128 coalitions, one draw, the old
default, left the top sentence wrong on 2-3 of 12 tweets of 3-4 sentences, where only 8-16
coalitions exist. Word-level SHAP would need thousands of passes on an article: not offered.

A coalition's document is read through the same removal as occlusion (``attribution.removal_output``:
a sentence taken out closes the document up), with nothing attached to the model.
"""
from __future__ import annotations

import math
import time

import torch

from hierattn.analysis.attribution import PER_PASS, Attribution, occlusion, removal_output
from hierattn.analysis.eraser import SENTENCE_UNITS, unit_count
from hierattn.checkpoint.classifier import Classifier
from hierattn.data.text import Document

SHAP = "KernelSHAP"
SHAP_DRAW = 128  # coalitions a sampled draw (one forward pass each), in complementary pairs
SHAP_MIN_DRAWS = 4  # independent draws at least: their spread measures the error (2 leave it one degree of freedom)
SHAP_ERROR = 0.005  # sample until the values' standard error is below this (half a probability point) ...
SHAP_MAX_PASSES = 512  # ... or this many coalitions are spent (4 draws: what Explore waits for)
# every coalition within the pass budget: enumerate them all, the Shapley values exactly (2^9 = 512)
EXACT_SENTENCES = SHAP_MAX_PASSES.bit_length() - 1
SHAP_SAMPLES = SHAP_DRAW  # the cost of one draw, for the pages' descriptions


def exact_shapley(values: torch.Tensor, players: int) -> list[float]:
    """The Shapley value of each player from ``values``, the game's value of every coalition indexed
    by its bitmask (bit i set: player i in; 2^players entries): phi_i = sum over coalitions S without
    i of |S|! (n - |S| - 1)! / n! (v(S + i) - v(S))."""
    n = players
    masks = torch.arange(2 ** n)
    sizes = torch.tensor([bin(m).count("1") for m in range(2 ** n)])
    weights = torch.tensor([math.factorial(k) * math.factorial(n - k - 1) / math.factorial(n) if k < n else 0.0
                            for k in range(n + 1)], dtype=torch.float64)
    values = values.to(torch.float64)
    out = []
    for i in range(n):
        without = masks[(masks >> i) & 1 == 0]
        out.append(float((weights[sizes[without]] * (values[without | (1 << i)] - values[without])).sum()))
    return out


def sentence_shap(classifier: Classifier, document: Document, label: int, samples: int | None = None,
                  seed: int = 0, max_passes: int = SHAP_MAX_PASSES, target_error: float = SHAP_ERROR
                  ) -> Attribution | None:
    """The sentences' Shapley values for P(label) (see the module doc): exact where every coalition
    fits ``max_passes`` (2^n of them), else KernelSHAP in draws of ``samples`` (default ``SHAP_DRAW``)
    coalitions until the standard error is below ``target_error`` or ``max_passes`` are spent (at
    least ``SHAP_MIN_DRAWS`` draws, to measure it). ``samples`` given forces sampling at any length. None for a
    document of one sentence (nothing to share out). Seeded: the same document gets the same values."""
    sentences = unit_count(document, SENTENCE_UNITS)
    if sentences < 2:
        return None
    start = time.perf_counter()
    forward = removal_output(classifier, document, SENTENCE_UNITS, list(range(sentences)),
                              lambda distributions: distributions[:, label])
    if samples is None and 2 ** sentences <= max_passes:
        masks = torch.arange(2 ** sentences)
        keep = ((masks[:, None] >> torch.arange(sentences)[None, :]) & 1).float()  # (2^n, n), bit i: sentence i kept
        values = torch.cat([forward(keep[i: i + PER_PASS]) for i in range(0, len(keep), PER_PASS)])
        return Attribution(SHAP, SENTENCE_UNITS, exact_shapley(values, sentences), label, len(keep),
                           time.perf_counter() - start)
    per_draw = samples or SHAP_DRAW
    draws = []
    while len(draws) < SHAP_MIN_DRAWS or (len(draws) + 1) * per_draw <= max_passes:
        draws.append(_kernel_shap_draw(forward, sentences, per_draw, seed + len(draws)))
        if len(draws) >= SHAP_MIN_DRAWS and _standard_errors(draws).max() <= target_error:
            break
    stacked = torch.tensor(draws, dtype=torch.float64)
    return Attribution(SHAP, SENTENCE_UNITS, stacked.mean(0).tolist(), label, len(draws) * per_draw,
                       time.perf_counter() - start, errors=_standard_errors(draws).tolist(), draws=len(draws))


def _standard_errors(draws: list[list[float]]) -> torch.Tensor:
    """Each unit's standard error of the mean over independent draws: their standard deviation / sqrt(draws)."""
    stacked = torch.tensor(draws, dtype=torch.float64)
    return stacked.std(0, unbiased=True) / math.sqrt(len(draws))


def _kernel_shap_draw(forward, sentences: int, samples: int, seed: int) -> list[float]:
    """One KernelSHAP estimate from ``samples`` coalitions (captum's), drawn in complementary pairs."""
    from captum.attr import KernelShap

    class PairedKernelShap(KernelShap):
        """captum's KernelSHAP drawing its coalitions from a generator of its own (its default draws
        from torch's global one, which every thread of the server shares: another session's draws
        would change these values, and a reseed here would change theirs), each coalition followed
        by its complement."""

        generator = torch.Generator().manual_seed(seed)

        def kernel_shap_perturb_generator(self, original_inp, **kwargs):  # captum's sampling, seeded and paired
            features = int(kwargs["num_interp_features"])
            sizes = kwargs["num_select_distribution"].probs
            yield torch.ones(1, features, dtype=torch.long)
            yield torch.zeros(1, features, dtype=torch.long)
            while True:
                chosen = int(torch.multinomial(sizes, 1, generator=self.generator))
                values = torch.randn(1, features, generator=self.generator)
                threshold = torch.kthvalue(values, features - chosen).values.item()
                coalition = (values > threshold).long()
                yield coalition
                yield 1 - coalition

    scores = PairedKernelShap(forward).attribute(torch.ones(1, sentences), baselines=0.0, n_samples=samples,
                                                 perturbations_per_eval=PER_PASS)
    return scores[0].tolist()


def sentence_table(classifier: Classifier, ex, progress=None) -> dict:
    """Explore's sentence attributions for an explained document: one row per sentence (its
    opening, its share of the attention, its occlusion and KernelSHAP for the predicted class, in
    probability points) and a caption with their agreement and cost. ``ex``: an ``Explanation``.
    ``progress(done, 2)`` after occlusion and after the Shapley values: where the app stops it."""
    from hierattn.analysis.compare import importance, spearman

    label = ex.labels.index(ex.label)
    occluded = occlusion(classifier, ex.document, label, SENTENCE_UNITS)
    if progress:
        progress(1, 2)
    shap = sentence_shap(classifier, ex.document, label)
    if progress:
        progress(2, 2)
    shares = importance(ex)
    attention = list(shares.sentences.values()) if shares is not None else None
    if attention is not None and len(attention) != len(ex.document.sentences):
        attention = None
    shap_column = "Shapley value (points)" if shap.exact else "KernelSHAP (points)"
    rows = []
    for i, sentence in enumerate(ex.document.sentences):
        opening = " ".join(t.text for t in sentence.tokens[:6]) + (" …" if len(sentence.tokens) > 6 else "")
        row = {"sentence": f"S{i + 1}: {opening}",
               "attention (%)": None if attention is None else round(100 * attention[i], 1),
               "occlusion (points)": round(100 * occluded.scores[i], 1),
               shap_column: round(100 * shap.scores[i], 1) if shap.resolved(i) else None}
        if not shap.exact:
            row["± (points, 95%)"] = round(100 * shap.margin(i), 1)
        rows.append(row)
    parts = []
    if attention is not None:
        for name, method in (("occlusion", occluded), ("the Shapley values", shap)):
            rho = spearman(attention, method.scores)
            parts.append(f"Spearman ρ of the attention with {name}: " + ("n/a" if rho is None else f"{rho:+.2f}"))
    source = f"Attention: {shares.source}." if shares is not None else "No attention over the sentences."
    if shap.exact:
        how = (f"the Shapley values are exact: all {shap.forward_passes} subsets of the {len(shap.scores)} sentences "
               f"were read ({shap.seconds:.1f} s)")
    else:
        hidden = sum(not shap.resolved(i) for i in range(len(shap.scores)))
        how = (f"KernelSHAP estimated the Shapley values from {shap.forward_passes} subsets of the "
               f"{len(shap.scores)} sentences ({shap.seconds:.1f} s); each carries its error, measured between "
               "independent draws" + (f", and the {hidden} whose error exceeds their distance to the nearest other "
                                      "value are left blank: their order is not known" if hidden else ""))
    cost = (f"Occlusion read {occluded.forward_passes} documents ({occluded.seconds:.1f} s); {how}. The values add up "
            f"to the probability's change from no sentence to all ({100 * sum(shap.scores):+.1f} points here).")
    probability = ex.probabilities[label]
    saturated = (f"P({ex.label}) is {probability:.4f}: taking out one sentence barely moves a prediction this "
                 "sure, so occlusion is near 0 for every sentence; the Shapley values, which take out many at once, "
                 "still tell them apart." if probability > 0.999 else "")
    return {"rows": rows, "caption": " ".join([source, *(p + "." for p in parts), cost, saturated]).strip()}
