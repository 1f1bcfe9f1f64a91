"""The Tour's steps in order, each declared once in its own module (``rates.Step``)."""
from __future__ import annotations

from hierattn.analysis.tour import (
    diagonal_or_columnar,
    han_and_hcan,
    pretrained_heads,
    target_attention,
    transformer_heads,
    two_self_attentions,
)
from hierattn.analysis.tour.rates import Step

STEPS: dict[int, Step] = {step.number: step for step in (
    target_attention.STEP, two_self_attentions.STEP, diagonal_or_columnar.STEP, han_and_hcan.STEP,
    transformer_heads.STEP, pretrained_heads.STEP)}
