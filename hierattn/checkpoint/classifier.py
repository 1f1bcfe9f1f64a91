"""A loaded checkpoint: its model in eval mode with everything needed to read raw text, and the
device a checkpoint is loaded on (or a run trained on) when none is named."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from hierattn.data.text import TextConfig, Vocab
from hierattn.models import REGISTRY, display_name, model_config_dict, plugins
from hierattn.models.intervention import observe_embedding


def best_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


WITHHELD = {
    "base encoder": "a base encoder: its folder holds the pretrained model without a classification head, so its "
                    "output is a head drawn at random as it loads, not a prediction",
    "untrained head": "its classification head was never trained (every bias in it is exactly zero, as transformers "
                      "initialises a new head), so its output is chance, not a prediction",
}


@dataclass
class Classifier:
    """A loaded model in eval mode with everything needed to read raw text."""

    name: str
    model: torch.nn.Module
    model_type: str
    vocab: Vocab
    labels: list[str]
    text_config: TextConfig
    metrics: dict
    dataset: str | None
    device: torch.device

    def __post_init__(self):  # before it is shared: gradient × input reads its lookups per call
        observe_embedding(self.model)

    @property
    def spec(self):
        """The model type's ``ModelSpec`` (its paper name, knobs, what its maps mean)."""
        return REGISTRY[self.model_type]

    @property
    def prediction_withheld(self) -> str | None:
        """Why no surface shows this model's output as a prediction (``WITHHELD``'s keys: "base
        encoder", "untrained head"), or None for a model whose prediction means something. A base
        encoder's head is drawn anew at every load (a RobertaModel folder said 0.498/0.502, a
        ModernBERT's 96.6%), an untrained one is chance: shown as a label, either reads as a finding."""
        return getattr(self.model, "untrained_head", None)

    @property
    def display_name(self) -> str:
        """The papers' name for this model and config ("HCAN (flat)", "MahNN-rv")."""
        return display_name(self.model_type, model_config_dict(self.model))

    @property
    def plugin(self) -> str | None:
        """Where a plug-in's model type comes from ("plug-in file x.py"); None for a built-in one."""
        return plugins.describe(self.spec) if self.spec.plugin is not None else None

    @property
    def memory_bytes(self) -> int:
        """What holding it costs, roughly: its parameters and buffers, and its vocabulary as a Python
        list and dict (about 150 bytes a word)."""
        tensors = list(self.model.parameters()) + list(self.model.buffers())
        return sum(t.numel() * t.element_size() for t in tensors) + 150 * len(self.vocab)

    @property
    def window(self) -> int | None:  # the most subword tokens a model of its own tokenizer reads at once
        return getattr(self.vocab, "window", None)

    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())
