"""What the steps' nulls share: their random draws come from a generator seeded by the document's
shape, so the same document gets the same verdict on every run and in every process."""
from __future__ import annotations

import numpy as np


def seeded_by_shape(*shape) -> np.random.Generator:
    """Null draws from a generator seeded by the shape: the same document gets the same verdict."""
    return np.random.default_rng([len(shape), *shape])
