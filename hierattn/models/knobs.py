"""What the Train page lets a user set for each model: its spec's variant knobs, then the size
knobs its config has, each with that field's default. The page renders the list; nothing here
imports Streamlit.
"""
from __future__ import annotations

import dataclasses

from hierattn.models.spec import Knob

SIZES = [
    Knob("embed_dim", "Embedding size", "Width of the word embeddings.", "int", (), 8, 1024),
    Knob("d", "Model width d", "Width of the attention layers (HCAN: embeddings too); divisible by the heads.",
         "int", (), 8, 1024),
    Knob("heads", "Heads", "Attention heads; d must be divisible by it.", "int", (), 1, 16),
    Knob("blocks", "Layers", "Self-attention blocks stacked.", "int", (), 1, 6),
    Knob("hidden", "Hidden units", "Recurrent units (per direction where bidirectional).", "int", (), 4, 512),
    Knob("dropout", "Dropout", "Share of activations dropped while training.", "float", (), 0.0, 0.9),
]


def knobs(model_type: str) -> list[Knob]:
    """Variant knobs first, then the size knobs this model has."""
    from hierattn.models import REGISTRY  # the registry imports this package's modules, this one too

    spec = REGISTRY[model_type]
    fields = {f.name for f in dataclasses.fields(spec.config)}
    return [k for k in list(spec.knobs) + SIZES if k.name in fields]


def defaults(model_type: str) -> dict:
    """Each knob's default, from the model's config dataclass."""
    from hierattn.models import REGISTRY

    fields = {f.name: f.default for f in dataclasses.fields(REGISTRY[model_type].config)}
    return {k.name: fields[k.name] for k in knobs(model_type)}
