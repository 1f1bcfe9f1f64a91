"""Is one row better than another, beyond the noise of seeds and documents?

``seeds_and_documents`` decides docs/RESULTS.md's orderings. The difference of the two rows'
mean accuracies (means over seeds) gets a standard error with two parts: the seeds' (each row's
variance of per-seed accuracy over its seeds, divided by its seed count: a seed shifts accuracy as
a whole) and the documents' (the variance of the per-document difference of the two rows' mean
correctness, divided by the document count: the rows are paired on documents). The 95% interval
is the difference plus or minus a t quantile at the Welch-Satterthwaite degrees of freedom of the
two parts together. Why not the paired bootstrap below, which decided them before: with three
seeds a side, resampling seeds gives at most ten distinct means and its percentiles ignore that
the seeds' variance is itself estimated from three values; under a null in which a seed shifts
accuracy as a whole (seed sd 1.4-2.8 points), far more than 5% of its verdicts read "holds" or
"reversed". The t interval keeps that rate at 5% or below (``null_rates`` simulates both, 2,000
draws a scenario, and records the rates with their Monte Carlo error).

The paired bootstrap, kept for comparison and for its tests:

Both rows were tested on the same documents, with several seeds each. One replicate resamples the
test documents (with replacement, the same draw for both rows) and, for each row independently,
its seeds (with replacement); the statistic is the difference of the two rows' mean accuracies
over the drawn seeds and documents. The 95% interval is the 2.5th to 97.5th percentile of 4,000
replicates.

Why this test: it pairs the rows on documents (a hard document is hard for both), it carries both
sources of noise a reader cares about (which test documents, which training seed; McNemar's test
on pooled seeds would treat each seed as more documents and ignore how far seeds disagree), and
it reports the difference in points with an interval, which says how large a gap is and not only
whether there is one. With one seed on a side, seed noise is not measured there and the verdict
says so.

Verdicts: "holds" when the whole interval is above 0 (the paper's better row is better here),
"reversed" when it is below 0, "within noise" otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

REPLICATES = 4000
HOLDS, REVERSED, WITHIN_NOISE = "holds", "reversed", "within noise"


@dataclass
class Comparison:
    better_mean: float  # accuracy, mean over seeds
    better_sd: float  # standard deviation over seeds (0 with one seed)
    worse_mean: float
    worse_sd: float
    difference: float  # better_mean - worse_mean
    low: float  # 95% interval of the difference
    high: float
    better_seeds: int
    worse_seeds: int

    @property
    def verdict(self) -> str:
        if self.low > 0:
            return HOLDS
        if self.high < 0:
            return REVERSED
        return WITHIN_NOISE


def seeds_and_documents(better: np.ndarray, worse: np.ndarray) -> Comparison:
    """``better``, ``worse``: (seeds, documents) bool, whether each seed got each test document
    right, documents in the same order for both. With one seed on a side, that side's seed variance
    cannot be estimated and counts as 0 (the report says seed noise was not measured)."""
    from scipy.stats import t as student_t

    better, worse = np.asarray(better, dtype=float), np.asarray(worse, dtype=float)
    if better.shape[1] != worse.shape[1]:
        raise ValueError(f"the rows were tested on {better.shape[1]} and {worse.shape[1]} documents")
    n = better.shape[1]
    accuracy_better, accuracy_worse = better.mean(1), worse.mean(1)  # (seeds,)
    difference = float(accuracy_better.mean() - accuracy_worse.mean())
    # (variance of the difference from this source, its degrees of freedom)
    parts = [(_sd(a) ** 2 / len(a), len(a) - 1) for a in (accuracy_better, accuracy_worse) if len(a) > 1]
    per_document = better.mean(0) - worse.mean(0)  # (documents,): the paired difference
    parts.append((float(per_document.var(ddof=1)) / n if n > 1 else 0.0, max(n - 1, 1)))
    variance = sum(v for v, _ in parts)
    if variance <= 0:
        low = high = difference
    else:
        freedom = variance ** 2 / sum(v ** 2 / df for v, df in parts if v > 0)
        half = float(student_t.ppf(0.975, freedom)) * variance ** 0.5
        low, high = difference - half, difference + half
    return Comparison(float(accuracy_better.mean()), _sd(accuracy_better), float(accuracy_worse.mean()),
                      _sd(accuracy_worse), difference, float(low), float(high), better.shape[0], worse.shape[0])


def _sd(values: np.ndarray) -> float:
    return float(values.std(ddof=1)) if len(values) > 1 else 0.0


def paired_bootstrap(better: np.ndarray, worse: np.ndarray, replicates: int = REPLICATES,
                     seed: int = 0) -> Comparison:
    """``better``, ``worse``: (seeds, documents) bool, whether each seed got each test document
    right, documents in the same order for both."""
    better, worse = np.asarray(better, dtype=float), np.asarray(worse, dtype=float)
    if better.shape[1] != worse.shape[1]:
        raise ValueError(f"the rows were tested on {better.shape[1]} and {worse.shape[1]} documents")
    n, seeds_better = better.shape[1], better.shape[0]
    rng = np.random.default_rng(seed)
    # A document enters the statistic only through its pattern of right and wrong across all the
    # seeds of both rows, so resampling documents is drawing pattern counts from a multinomial over
    # the patterns that occur: the same distribution as resampling indices, and fast.
    patterns, counts = np.unique(np.concatenate([better, worse]).T, axis=0, return_counts=True)  # (U, seeds)
    drawn = rng.multinomial(n, counts / n, size=replicates) / n  # (R, U)
    per_seed = drawn @ patterns  # (R, all seeds): each seed's accuracy on the drawn documents
    per_seed_better, per_seed_worse = per_seed[:, :seeds_better], per_seed[:, seeds_better:]
    pick_better = rng.integers(0, seeds_better, size=(replicates, seeds_better))
    pick_worse = rng.integers(0, worse.shape[0], size=(replicates, worse.shape[0]))
    rows = np.arange(replicates)[:, None]
    differences = per_seed_better[rows, pick_better].mean(1) - per_seed_worse[rows, pick_worse].mean(1)
    low, high = np.percentile(differences, [2.5, 97.5])
    accuracy_better, accuracy_worse = better.mean(1), worse.mean(1)
    return Comparison(float(accuracy_better.mean()), _sd(accuracy_better), float(accuracy_worse.mean()),
                      _sd(accuracy_worse), float(accuracy_better.mean() - accuracy_worse.mean()), float(low),
                      float(high), better.shape[0], worse.shape[0])
