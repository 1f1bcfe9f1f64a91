"""The Tour page's steps in order: (title, the shipped checkpoints each needs: those its claim is
checked on, the function that draws it)."""
from __future__ import annotations

from hierattn.analysis.tour.steps import STEPS as CHECKED
from hierattn.app.panels.tour import (
    attention_forming,
    diagonal_or_columnar,
    han_and_hcan,
    pretrained_heads,
    target_attention,
    transformer_heads,
    two_self_attentions,
)

# A step without a rate over a split (7: recorded training runs) needs no shipped checkpoint.
STEPS = {number: (title, list(CHECKED[number].checkpoints) if number in CHECKED else [], draw)
         for number, title, draw in (
    (1, "1 · Target attention", target_attention.draw),
    (2, "2 · Two self-attentions", two_self_attentions.draw),
    (3, "3 · Diagonal or columnar", diagonal_or_columnar.draw),
    (4, "4 · HAN and HCAN", han_and_hcan.draw),
    (5, "5 · Inside a transformer", transformer_heads.draw),
    (6, "6 · A pre-trained transformer", pretrained_heads.draw),
    (7, "7 · Attention forming", attention_forming.draw))}
