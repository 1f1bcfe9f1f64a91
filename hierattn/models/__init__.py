"""The model registry: every architecture is reachable by name, with its config dataclass."""
from __future__ import annotations

import dataclasses
import typing

from torch import nn

from hierattn.models.halstm import HALSTM, HALSTMConfig
from hierattn.models.han import HAN, HANConfig
from hierattn.models.hcan import HCAN, HCANConfig
from hierattn.models.kimcnn import KimCNN, KimCNNConfig
from hierattn.models.mahnn import MahNN, MahNNConfig
from hierattn.models.sanet import SANet, SANetConfig
from hierattn.models.tfidf import TFIDFConfig, TFIDFLinear

REGISTRY: dict[str, tuple[type[nn.Module], type]] = {
    "han": (HAN, HANConfig),
    "hcan": (HCAN, HCANConfig),
    "sanet": (SANet, SANetConfig),
    "halstm": (HALSTM, HALSTMConfig),
    "mahnn": (MahNN, MahNNConfig),
    "kimcnn": (KimCNN, KimCNNConfig),
    "tfidf": (TFIDFLinear, TFIDFConfig),
}
# Trained by scikit-learn rather than by gradient descent (see models/tfidf.py).
FITTED = {"tfidf"}


def build_model(model_type: str, config: dict) -> nn.Module:
    if model_type not in REGISTRY:
        raise ValueError(f"unknown model type '{model_type}'; known: {', '.join(REGISTRY)}")
    model_cls, config_cls = REGISTRY[model_type]
    fields = {f.name: f for f in dataclasses.fields(config_cls)}
    unknown = set(config) - set(fields)
    if unknown:
        raise ValueError(f"unknown {model_type} config keys: {', '.join(sorted(unknown))}")
    hints = typing.get_type_hints(config_cls)
    # JSON has no tuples: a config read back from config.json gives lists where tuples were saved.
    config = {k: tuple(v) if isinstance(v, list) and "tuple" in str(hints.get(k)) else v for k, v in config.items()}
    return model_cls(config_cls(**config))


def legacy_config(model_type: str) -> dict:
    """Config values that a saved config.json implies by lacking a key: the behaviour of the code
    that wrote it (a config class's ``LEGACY``). Loading fills them in before the saved values, so a
    checkpoint written before a model fix loads and predicts as it did."""
    entry = REGISTRY.get(model_type)
    return dict(getattr(entry[1], "LEGACY", {})) if entry else {}


def sized_for_text(model_type: str, config: dict, max_sentences: int, max_words: int) -> dict:
    """``config`` with the sizes that follow from the text caps (a config class's
    ``sized_for_text``: HCAN's positional tables) filled in where ``config`` does not set them."""
    entry = REGISTRY.get(model_type)
    sizing = getattr(entry[1], "sized_for_text", None) if entry else None
    return {**sizing(config, max_sentences, max_words), **config} if sizing else dict(config)


def text_problem(model_type: str, config: dict, max_sentences: int, max_words: int) -> str | None:
    """Why a model with ``config`` cannot read every text its caps let through (a config class's
    ``text_problem``: HCAN's positional tables), or None."""
    entry = REGISTRY.get(model_type)
    check = getattr(entry[1], "text_problem", None) if entry else None
    return check(config, max_sentences, max_words) if check else None


def model_config_dict(model: nn.Module) -> dict:
    return dataclasses.asdict(model.config)


def is_attention_free(model: nn.Module) -> bool:
    """True for the baselines that expose no attention map (LSTM, SANet's baseline, TF-IDF models)."""
    return bool(getattr(model, "attention_free", False))


def display_name(model_type: str, config: dict) -> str:
    """The name the papers use for a model type and config, e.g. "HA-LSTM-4", "MahNN-rv", "SANet big"."""
    c = config
    if model_type == "han":
        return {"gru": "HAN", "lstm": "HAN (BiLSTM)", "cached_lstm": "HAN (Cached LSTM)"}.get(c.get("encoder", "gru"), "HAN")
    if model_type == "hcan":
        parts = [] if c.get("parallel", True) else ["one self-attention"]
        parts += [] if c.get("pooling", "target") == "target" else ["max pool"]
        parts += [] if c.get("hierarchical", True) else ["flat"]
        return "HCAN" + (f" ({', '.join(parts)})" if parts else "")
    if model_type == "sanet":
        size = "big" if c.get("blocks", 1) >= 2 and c.get("d", 128) >= 256 else "base"
        return f"SANet {size}" if c.get("attention", True) else f"SANet baseline ({size}, no attention)"
    if model_type == "halstm":
        cell = c.get("cell", "ha")
        return f"HA-LSTM-{c.get('window', 4)}" if cell == "ha" else {"lstm": "LSTM", "bilstm": "BiLSTM"}[cell]
    if model_type == "mahnn":
        return "MahNN-rv" if not c.get("semantic", True) else f"MahNN-{c.get('channels', 3)}"
    if model_type == "kimcnn":
        return "Kim CNN"
    if model_type == "tfidf":
        return "TF-IDF + Naive Bayes" if c.get("classifier") == "nb" else "TF-IDF + L1 logistic regression"
    return model_type
