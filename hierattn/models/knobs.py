"""What the Train page lets a user set for each model: variants and sizes, with defaults and help.

Read from the registry's config dataclasses, so a knob appears exactly when the model has that
field, with that field's default. The page renders the list; nothing here imports Streamlit.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from hierattn.models import REGISTRY


@dataclass(frozen=True)
class Knob:
    name: str  # the config field
    label: str
    help: str
    kind: str  # "int", "float", "bool" or "choice"
    options: tuple = ()
    low: float | None = None
    high: float | None = None


VARIANTS = {
    "han": [Knob("encoder", "Encoder", "Recurrent units of both levels: BiGRU (Yang et al.), BiLSTM, or Cached LSTM "
                 "(memory groups with different forgetting rates).", "choice", ("gru", "lstm", "cached_lstm"))],
    "hcan": [Knob("parallel", "Two parallel self-attentions", "HCAN eq. 4: an ELU and a tanh self-attention multiplied; "
                  "off: one self-attention.", "bool"),
             Knob("pooling", "Pooling", "Target attention (eq. 5) or max pooling.", "choice", ("target", "max")),
             Knob("hierarchical", "Hierarchical", "Words -> sentences -> document; off: one flat pass over the words.",
                  "bool")],
    "sanet": [Knob("attention", "Self-attention", "Off: the SANet paper's baseline, each self-attention replaced by a "
                   "feed-forward layer.", "bool")],
    "halstm": [Knob("cell", "Recurrent layer", "HA-LSTM (sliding attention over the last N states), or the plain LSTM "
                    "and BiLSTM baselines.", "choice", ("ha", "lstm", "bilstm")),
               Knob("window", "Window N", "How many past hidden states the HA-LSTM cell attends over.", "choice",
                    (4, 8, 12))],
    "mahnn": [Knob("channels", "Channels", "Syntactical-attention channels L (MahNN-1 ... MahNN-7).", "int", (), 1, 7),
              Knob("semantic", "Semantical attention", "Off: MahNN-rv.", "bool")],
    "tfidf": [Knob("classifier", "Classifier", "L1 logistic regression or multinomial Naive Bayes on TF-IDF 1-2 grams.",
                   "choice", ("logreg", "nb"))],
}
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
    fields = {f.name for f in dataclasses.fields(REGISTRY[model_type][1])}
    return [k for k in VARIANTS.get(model_type, []) + SIZES if k.name in fields]


def defaults(model_type: str) -> dict:
    """Each knob's default, from the model's config dataclass."""
    fields = {f.name: f.default for f in dataclasses.fields(REGISTRY[model_type][1])}
    return {k.name: fields[k.name] for k in knobs(model_type)}
