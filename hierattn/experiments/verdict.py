"""Is one row better than another, beyond the noise? A paired bootstrap on the same test documents.

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
