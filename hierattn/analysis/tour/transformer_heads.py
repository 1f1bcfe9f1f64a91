"""The Tour's step 5, inside a transformer (Clark et al. 2019): some head of the transformer trained
here attends by position or to special tokens. Each head's share of a pattern stands beside an even
spread over the same tokens, and counts at ``heads.MARGIN`` above it (``analysis.heads`` says why
that margin is far beyond what a random map reaches)."""
from __future__ import annotations

from hierattn.analysis import heads
from hierattn.analysis.tour.rates import Step


def _patterned(ex):
    rows = heads.overview(ex)
    if not rows:
        return None
    best = max((heads.excess(r, p) for r in rows for p in heads.PATTERNS if heads.excess(r, p) is not None),
               default=0.0)
    return any(r["finding"] for r in rows), best - heads.MARGIN


STEP = Step(5, "some head of the transformer attends by position or to special tokens (a share 30 points above an "
               "even spread, as Clark et al. 2019 found in BERT)",
            ("tweets-transformer",), ("tweets",), check=_patterned)
