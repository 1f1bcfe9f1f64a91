"""How checkpoints of the ``transformer`` model type are stored: the library's own folder, as
``save_pretrained`` writes it (``ModelSpec.folder``: recognised, checked, built, described and written
here; the checkpoint loader reads the weights).

Safety: nothing in the folder is imported or run. The model is the transformers library's own class
for the config's ``model_type`` (``AutoModelForSequenceClassification.from_config``), never a class a
config's ``auto_map`` names and never with ``trust_remote_code``: a folder whose model type only its
own code defines is refused, and a folder of a known type that also names code of its own is read
with the library's class (the code is never opened; the card says so). Weights come from
model.safetensors only (the checkpoint loader reads them); a folder with only a pickled
``pytorch_model.bin`` is refused with the command that converts it.

hierattn's own facts about a model trained here (its text caps, its data set) are kept in
``hierattn.json``; a folder without one reads text with the default caps.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from hierattn.data.subwords import TOKENIZER_FILE, SubwordVocab
from hierattn.data.text import TextConfig
from hierattn.data.tokenizer_rules import file_problem
from hierattn.models import library_heads
from hierattn.models.library_attention import IMPLEMENTATION, register
from hierattn.models.library_limits import config_number_problem
from hierattn.models.transformer_config import config_from_hf

WEIGHTS = "model.safetensors"
OURS = "hierattn.json"  # {"format_version": 1, "text": {...}, "dataset": ...}
PICKLES = ("pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack")
CONVERT = ("convert it once, where you trust the file: AutoModelForSequenceClassification.from_pretrained(folder)"
           ".save_pretrained(folder, safe_serialization=True)")
# Config keys that point transformers at code: never followed, and left out of the config we build.
CODE_KEYS = ("auto_map", "custom_pipelines")
# Model types whose position table starts after the padding id (the card's window; a loaded model measures it)
PADDED_POSITIONS = ("roberta", "xlm-roberta", "camembert", "longformer")


def own_attention_readable(model_type: str) -> bool:
    """Whether the family's attention runs through transformers' attention interface
    (``_supports_attention_backend``), where ``library_attention`` keeps every layer's map and the
    interventions act. DeBERTa-v2 (its disentangled attention) and MPNet (its relative position
    bias) compute theirs in their own modules: their folders opened and fine-tuned, then every
    explanation failed ("0 of 2 layers' attention passed through subword.self")."""
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES

    classifier = getattr(transformers, MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES[model_type], None)
    return bool(getattr(classifier, "_supports_attention_backend", False))


class HuggingFaceFolder:
    """A library folder, opened into ``classifier``: the model type's module, built as
    ``classifier(config, encoder)`` on the library's model (it declares this folder in its spec)."""

    files = ("config.json", WEIGHTS, TOKENIZER_FILE, OURS)
    layout = staticmethod(library_heads.layout)  # the file's keys in our module (the library's model is ``encoder``)
    untrained_head = staticmethod(library_heads.untrained_head)

    def __init__(self, classifier: type[nn.Module]):
        self.classifier = classifier

    @staticmethod
    def recognises(config: dict) -> bool:
        """A transformers config.json (ours have a ``format_version``)."""
        return ("format_version" not in config and isinstance(config.get("model_type"), str)
                and any(k in config for k in ("architectures", "id2label", "num_labels", "transformers_version")))

    @staticmethod
    def problem(directory: Path, config: dict) -> str | None:
        """Why this folder is not read (None: it is)."""
        from transformers import CONFIG_MAPPING
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
        from transformers.models.auto.modeling_auto import MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES

        model_type = config["model_type"]
        if (problem := config_number_problem(config)) is not None:
            return problem
        if model_type not in CONFIG_MAPPING:
            code = " and names code of its own (auto_map), which hierattn never runs" if "auto_map" in config else ""
            return f"model type {model_type!r} is not one the transformers library defines{code}"
        if model_type not in MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES:
            return f"transformers has no sequence classifier for model type {model_type!r}"
        if not own_attention_readable(model_type):
            family = CONFIG_MAPPING_NAMES[model_type].removesuffix("Config")
            return (f"model type {model_type!r} ({family}) computes its attention in code of its own, outside "
                    "transformers' attention interface, where hierattn reads every layer's attention and intervenes "
                    "on it: its maps and tests would be missing, so it is neither opened nor fine-tuned here (BERT, "
                    "DistilBERT, ALBERT, ELECTRA, RoBERTa, XLM-R and ModernBERT are)")
        if not (directory / WEIGHTS).is_file():
            pickled = [name for name in PICKLES if (directory / name).is_file()]
            if pickled:
                return (f"its weights are in {pickled[0]}, a pickle, which could run code when read; hierattn reads "
                        f"{WEIGHTS} only: {CONVERT}")
            return f"{WEIGHTS} is missing"
        if not (directory / TOKENIZER_FILE).is_file():
            return (f"{TOKENIZER_FILE} is missing: hierattn reads a fast tokenizer's file (save it with "
                    "AutoTokenizer.from_pretrained(folder).save_pretrained(folder))")
        vocab_size = config.get("vocab_size")  # the embedding rows every token id must be within
        return file_problem(directory / TOKENIZER_FILE, vocab_size if type(vocab_size) is int else None)

    @staticmethod
    def named_code(config: dict) -> bool:
        """The config names code of its own (read with the library's class all the same)."""
        return any(k in config for k in CODE_KEYS)

    @staticmethod
    def library_config(config: dict):
        from transformers import CONFIG_MAPPING

        if (problem := config_number_problem(config)) is not None:  # before the library builds anything
            raise ValueError(problem)
        clean = {k: v for k, v in config.items() if k not in CODE_KEYS}
        return CONFIG_MAPPING[config["model_type"]].from_dict(clean)

    def build(self, config: dict, ours: dict | None = None) -> tuple[nn.Module, list[str]]:
        """The library's classifier for ``config`` (weights not yet read) and its labels in id order;
        frozen to even attention where hierattn.json (``ours``) says it was trained so."""
        from transformers import AutoModelForSequenceClassification

        register()
        library = self.library_config(config)
        encoder = AutoModelForSequenceClassification.from_config(library, attn_implementation=IMPLEMENTATION)
        labels = [str(library.id2label.get(i, f"LABEL_{i}")) for i in range(library.num_labels)]
        model = self.classifier(config_from_hf(library), encoder)
        if (ours or {}).get("attention_weights") == "uniform":
            from hierattn.models.intervention import freeze_to_uniform

            model = freeze_to_uniform(model)
        return model, labels

    @staticmethod
    def vocab(directory: Path, model: nn.Module) -> SubwordVocab:
        pad = getattr(model.encoder.config, "pad_token_id", None)
        return SubwordVocab.load(directory, model.window, pad if isinstance(pad, int) else 0)

    @staticmethod
    def ours(directory: Path, read_json) -> dict:
        return read_json(directory / OURS) if (directory / OURS).is_file() else {}

    @classmethod
    def describe(cls, directory: Path, config: dict, read_json) -> dict:
        """The folder in the terms of our config.json (what the card reads), nothing built."""
        from dataclasses import asdict

        ours = cls.ours(directory, read_json)
        ours = ours if isinstance(ours, dict) else {}
        library = cls.library_config(config)
        summary = {k: v for k, v in asdict(config_from_hf(library)).items() if k != "subwords"}  # a from-scratch knob
        summary["library_model_type"] = config["model_type"]
        if ours.get("attention_weights") == "uniform":
            summary["attention_weights"] = "uniform"
        if cls.named_code(config):
            summary["named_code"] = "its config names code of its own (auto_map); it was never run"
        text = ours.get("text") if isinstance(ours.get("text"), dict) else {}
        positions = summary["max_positions"] - (summary["pad_id"] + 1 if config["model_type"] in PADDED_POSITIONS
                                                else 0)
        return {"model_type": "transformer", "model_config": summary, "dataset": ours.get("dataset"),
                "labels": [str(library.id2label.get(i, f"LABEL_{i}")) for i in range(library.num_labels)],
                "text": {**asdict(TextConfig()), **text}, "vocabulary": "subword", "window": positions,
                "origin": "hierattn" if ours else "elsewhere"}

    @staticmethod
    def write(directory: Path, model: nn.Module, vocab: SubwordVocab, labels: list[str], text: dict,
              dataset: str | None, dtype: torch.dtype) -> None:
        """The library's folder (its config.json with our labels, the weights as ``dtype``, the
        tokenizer) and hierattn.json, into ``directory`` (a fresh temporary one)."""
        from safetensors.torch import save_file

        encoder = model.encoder
        encoder.config.architectures = [type(encoder).__name__]  # a base encoder's start said "BertModel"
        encoder.config.id2label = dict(enumerate(labels))
        encoder.config.label2id = {label: i for i, label in enumerate(labels)}
        encoder.config.save_pretrained(directory)
        tensors = {k: v.detach().to("cpu", dtype if v.is_floating_point() else v.dtype).contiguous()
                   for k, v in encoder.state_dict().items()}
        save_file(tensors, directory / WEIGHTS, metadata={"format": "pt"})
        vocab.save(directory)
        ours = {"format_version": 1, "text": text, "dataset": dataset}
        if getattr(model, "frozen_uniform", False):  # Wiegreffe & Pinter's twin: every attention an even spread
            ours["attention_weights"] = "uniform"
        (directory / OURS).write_text(json.dumps(ours, indent=2))
