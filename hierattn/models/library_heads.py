"""A library folder's classification head: in the file, missing (a base encoder: BertModel,
RobertaModel, ... the most common download), or in the file but never trained.

A base encoder opens with its pretrained weights and a head built at random, marked untrained,
so the app shows its attention and no prediction. A head saved without training
(``AutoModelForSequenceClassification.from_pretrained(encoder).save_pretrained(...)``) showed
"LABEL_0 50.5%" as if it were one; it is told apart by its biases: transformers initialises every
bias of a new head to exactly zero, and one step of training moves them, so a head whose biases
are all exactly zero was never trained."""
from __future__ import annotations

from pathlib import Path


def layout(directory: Path, model) -> tuple[str, frozenset[str]]:
    """(prefix of the file's keys in our model, keys the file may lack): a classifier's file holds
    ``<base>.…`` and its head; a base encoder's holds the base model's keys alone."""
    from safetensors import safe_open

    base = model.encoder.base_model_prefix  # "bert", "roberta", "distilbert", ...
    with safe_open(directory / "model.safetensors", "pt") as f:
        keys = list(f.keys())
    if any(k.startswith(base + ".") for k in keys) or not keys:
        return "encoder.", frozenset()
    return f"encoder.{base}.", frozenset(k for k in model.state_dict() if not k.startswith(f"encoder.{base}."))


def untrained_head(model, base_encoder: bool) -> str | None:
    """Why the model's prediction means nothing ("base encoder", "untrained head"), or None."""
    if base_encoder:
        return "base encoder"
    prefix = model.encoder.base_model_prefix + "."
    biases = [p for name, p in model.encoder.named_parameters()
              if not name.startswith(prefix) and name.endswith("bias")]
    return "untrained head" if biases and all(not bool(b.detach().any()) for b in biases) else None
