"""The paired bootstrap decides an ordering only when the gap beats the noise of documents and seeds."""
import numpy as np

from hierattn.experiments.verdict import HOLDS, REVERSED, WITHIN_NOISE, paired_bootstrap


def _seeds(rng, accuracy: float, seeds: int = 3, documents: int = 2000) -> np.ndarray:
    return rng.random((seeds, documents)) < accuracy


def test_the_same_model_is_within_noise_and_a_clear_gap_holds_or_reverses():
    rng = np.random.default_rng(0)
    a, b = _seeds(rng, 0.75), _seeds(rng, 0.75)
    assert paired_bootstrap(a, b).verdict == WITHIN_NOISE
    strong, weak = _seeds(rng, 0.80), _seeds(rng, 0.70)
    assert paired_bootstrap(strong, weak).verdict == HOLDS
    assert paired_bootstrap(weak, strong).verdict == REVERSED


def test_the_interval_contains_the_difference_and_shrinks_with_more_documents():
    rng = np.random.default_rng(1)
    small = paired_bootstrap(_seeds(rng, 0.78, documents=300), _seeds(rng, 0.72, documents=300))
    large = paired_bootstrap(_seeds(rng, 0.78, documents=5000), _seeds(rng, 0.72, documents=5000))
    for c in (small, large):
        assert c.low <= c.difference <= c.high
    assert (large.high - large.low) < 0.5 * (small.high - small.low)


def test_pairing_on_documents_narrows_the_interval():
    """Two models that fail on the same hard documents differ by a few points with a tight interval:
    the pairing removes the documents' own difficulty from the noise."""
    rng = np.random.default_rng(2)
    hard = rng.random(3000) < 0.3
    better = np.stack([~hard | (rng.random(3000) < 0.05) for _ in range(3)])
    worse = np.stack([~hard & (rng.random(3000) > 0.02) for _ in range(3)])
    c = paired_bootstrap(better, worse)
    assert c.verdict == HOLDS and c.high - c.low < 0.02


def test_seed_noise_widens_the_interval():
    """When seeds disagree (one seed far off), the interval is wider than with consistent seeds."""
    rng = np.random.default_rng(3)
    steady = np.stack([rng.random(3000) < 0.75 for _ in range(3)])
    scattered = np.stack([rng.random(3000) < p for p in (0.70, 0.75, 0.80)])
    other = np.stack([rng.random(3000) < 0.75 for _ in range(3)])
    narrow, wide = paired_bootstrap(steady, other), paired_bootstrap(scattered, other)
    assert (wide.high - wide.low) > 1.5 * (narrow.high - narrow.low)
    assert wide.better_sd > 0.03 > narrow.better_sd


def test_drawing_patterns_matches_resampling_documents():
    """The bootstrap draws counts of right/wrong patterns rather than document indices; against the
    direct reference (resample indices, then seeds) the interval agrees to Monte Carlo noise."""
    rng = np.random.default_rng(4)
    better, worse = _seeds(rng, 0.72, documents=1500), _seeds(rng, 0.70, documents=1500)
    replicates = 4000
    idx = rng.integers(0, 1500, (replicates, 1500))
    per_better, per_worse = better[:, idx].mean(-1).T, worse[:, idx].mean(-1).T  # (R, seeds)
    rows = np.arange(replicates)[:, None]
    reference = (per_better[rows, rng.integers(0, 3, (replicates, 3))].mean(1)
                 - per_worse[rows, rng.integers(0, 3, (replicates, 3))].mean(1))
    low, high = np.percentile(reference, [2.5, 97.5])
    c = paired_bootstrap(better, worse)
    assert abs(c.low - low) < 0.004 and abs(c.high - high) < 0.004
