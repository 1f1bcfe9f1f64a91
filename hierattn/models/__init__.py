"""The model registry: every model file of this package that declares a ``SPEC`` (a
``hierattn.models.spec.ModelSpec``) is a model type, reachable by its name. Adding a model is one
file with its ``SPEC``; nothing here names a model. Plug-ins (``hierattn.models.plugins``: installed
entry points of the group ``hierattn.models``, and the files of ``HIERATTN_PLUGINS``) register
theirs when this package is imported; ``load_plugins`` adds more files later (the CLI's ``--plugin``)."""
from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import typing

from torch import nn

from hierattn.models.spec import ModelSpec


def _collect() -> dict[str, ModelSpec]:
    specs = {}
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        spec = getattr(importlib.import_module(f"{__name__}.{module.name}"), "SPEC", None)
        if isinstance(spec, ModelSpec):
            if spec.name in specs:
                raise ValueError(f"two models are named {spec.name!r}")
            specs[spec.name] = spec
    return specs


REGISTRY: dict[str, ModelSpec] = dict(sorted(_collect().items(), key=lambda kv: (kv[1].listed, kv[0])))
BUILT_IN: tuple[str, ...] = tuple(REGISTRY)


def load_plugins(files=()) -> list[str]:
    """Register the plug-ins not yet tried in this process (entry points, ``HIERATTN_PLUGINS``,
    ``files``); returns the messages of those that could not be loaded."""
    from hierattn.models import plugins

    return plugins.load(REGISTRY, files)


def plugin_problems() -> list[str]:
    """One message per plug-in that was named or installed but could not be loaded."""
    from hierattn.models import plugins

    return list(plugins.PROBLEMS.values())


def unknown_model(model_type: str) -> str:
    """Why ``model_type`` is not here, and where a plug-in's model type comes from."""
    problems = plugin_problems()
    return (f"unknown model type '{model_type}'; known: {', '.join(REGISTRY)}. A plug-in's model type needs its "
            "plug-in: an installed package, HIERATTN_PLUGINS=FILE.py or --plugin FILE.py"
            + (f" (not loaded: {'; '.join(problems)})" if problems else ""))


def build_model(model_type: str, config: dict) -> nn.Module:
    if model_type not in REGISTRY:
        raise ValueError(unknown_model(model_type))
    return build_from_spec(REGISTRY[model_type], config)


# A key every model's config dict may carry: "uniform" trains and runs the model with every
# attention site frozen to an even spread (Wiegreffe & Pinter's test; ``intervention.FrozenUniform``),
# "target-uniform" only its target (pooling) attention (``intervention.FrozenUniformTarget``).
ATTENTION = "attention_weights"
ATTENTION_KINDS = ("learned", "uniform", "target-uniform")


def build_from_spec(spec: ModelSpec, config: dict) -> nn.Module:
    """The spec's model from a config dict (as config.json stores it), unknown keys refused."""
    from hierattn.models.intervention import freeze_to_uniform

    config = dict(config)
    attention = config.pop(ATTENTION, "learned")
    if attention not in ATTENTION_KINDS:
        raise ValueError(f"{ATTENTION} must be one of {', '.join(ATTENTION_KINDS)}, not {attention!r}")
    model = _build(spec, config)
    if attention == "learned":
        return model
    return freeze_to_uniform(model, "target" if attention == "target-uniform" else "every")


def _build(spec: ModelSpec, config: dict) -> nn.Module:
    model_type, model_cls, config_cls = spec.name, spec.model, spec.config
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
    return dict(getattr(entry.config, "LEGACY", {})) if entry else {}


def sized_for_text(model_type: str, config: dict, max_sentences: int, max_words: int) -> dict:
    """``config`` with the sizes that follow from the text caps (a config class's
    ``sized_for_text``: HCAN's positional tables) filled in where ``config`` does not set them."""
    entry = REGISTRY.get(model_type)
    sizing = getattr(entry.config, "sized_for_text", None) if entry else None
    return {**sizing(config, max_sentences, max_words), **config} if sizing else dict(config)


def query_start_variance(model_type: str, config: dict) -> float | None:
    """The variance its word-level pooling query started at, N(0, v), for a model with such a query
    (a config class's ``query_start_variance``: HCAN's T, HAN's u_w), read from a config dict as
    the model reads it; None for any other model."""
    entry = REGISTRY.get(model_type)
    start = getattr(entry.config, "query_start_variance", None) if entry else None
    return start(config) if start else None


def text_problem(model_type: str, config: dict, max_sentences: int, max_words: int) -> str | None:
    """Why a model with ``config`` cannot read every text its caps let through (a config class's
    ``text_problem``: HCAN's positional tables), or None."""
    entry = REGISTRY.get(model_type)
    check = getattr(entry.config, "text_problem", None) if entry else None
    return check(config, max_sentences, max_words) if check else None


def model_config_dict(model: nn.Module) -> dict:
    out = dataclasses.asdict(model.config)
    if not getattr(model, "frozen_uniform", False):
        return out
    return {**out, ATTENTION: "target-uniform" if model.frozen_sites == "target" else "uniform"}


def is_attention_free(model: nn.Module) -> bool:
    """True for the baselines that expose no attention map (LSTM, SANet's baseline, TF-IDF models)."""
    return bool(getattr(model, "attention_free", False))


def display_name(model_type: str, config: dict) -> str:
    """The name the papers use for a model type and config, e.g. "HA-LSTM-4", "MahNN-rv", "SANet big"."""
    spec = REGISTRY.get(model_type)
    name = spec.display_name(config) if spec else model_type
    frozen = {"uniform": " (attention frozen uniform)", "target-uniform": " (target attention frozen uniform)"}
    return name + frozen.get(config.get(ATTENTION), "")


load_plugins()  # the installed entry points and HIERATTN_PLUGINS: what the person running hierattn named
