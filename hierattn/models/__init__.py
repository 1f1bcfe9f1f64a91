"""The model registry: every architecture is reachable by name, with its config dataclass."""
from __future__ import annotations

import dataclasses

from torch import nn

from .han import HAN, HANConfig
from .hcan import HCAN, HCANConfig

REGISTRY: dict[str, tuple[type[nn.Module], type]] = {
    "han": (HAN, HANConfig),
    "hcan": (HCAN, HCANConfig),
}


def build_model(model_type: str, config: dict) -> nn.Module:
    if model_type not in REGISTRY:
        raise ValueError(f"unknown model type '{model_type}'; known: {', '.join(REGISTRY)}")
    model_cls, config_cls = REGISTRY[model_type]
    known = {f.name for f in dataclasses.fields(config_cls)}
    unknown = set(config) - known
    if unknown:
        raise ValueError(f"unknown {model_type} config keys: {', '.join(sorted(unknown))}")
    return model_cls(config_cls(**config))


def model_config_dict(model: nn.Module) -> dict:
    return dataclasses.asdict(model.config)
