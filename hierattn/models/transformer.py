"""Hugging Face transformer classifiers (BERT, RoBERTa, DistilBERT: any
``AutoModelForSequenceClassification`` whose attention runs through transformers' attention
interface), read into the contract: subword tokens in (``Batch.pieces``), logits and named-axis maps
out, the same maps at the levels every other model has.

Maps, for a document of T tokens (special tokens included), W words, S sentences, L layers, H heads:
- ``subword.self`` (batch, layer, head, query, key), level ``subword``: every layer's attention as the
  model computes it, over its own tokens. The interventions act here (site ``subword.self``, every
  layer), through an attention function registered with transformers' ``AttentionInterface``: eager
  attention (SDPA and flash attention return no weights) that passes its probabilities through
  ``intervention.intervene`` before using them.
- ``word.self`` and ``sentence.self`` (batch, layer, head, query, key): the same attention between
  our words (reading order) and sentences. The rule (Clark et al. 2019, "What does BERT look at?",
  section 4.1): attention *to* a word is the sum over its pieces (a word split in three receives what
  its three pieces receive, neither thrice nor a third), attention *from* a word is the mean over
  its pieces (each piece's row is a distribution, so their mean is one). Attention to special
  tokens is left out and each row renormalised to sum to 1; what left is reported apart by the
  analyses (``analysis.heads``), since it is most of many heads' mass (Clark et al., section 3).
- ``word.first_token`` and ``sentence.first_token`` (batch, head, key): the last layer's row of the
  first token (``[CLS]``, ``<s>``), whose final state is what the classification head reads, over
  words and sentences by the same rule: what the app paints on the text, as it paints target
  attention.
The word and sentence maps name ``subword.self`` as their ``source``: an intervention on either level
acts on the token attention they aggregate (the model computes no other).

Built here (the Train page, ``train --model transformer``): a small encoder from scratch, ``family``
its transformers ``model_type``. Opened from a folder ``save_pretrained`` wrote (``HuggingFaceFolder``):
any model type transformers knows, built with the library's own class (transformers imported then).

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
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from hierattn.contract import Batch, Pieces
from hierattn.data.subwords import TOKENIZER_FILE, SubwordVocab
from hierattn.data.text import TextConfig
from hierattn.data.tokenizer_rules import file_problem
from hierattn.models import library_heads
from hierattn.models.common import classification_output
from hierattn.models.intervention import intervene
from hierattn.models.library_limits import config_number_problem, fitting_window, held_cells
from hierattn.models.spec import Knob, ModelSpec
from hierattn.models.subword_maps import SITE, keep_layer, layer_stack, maps

IMPLEMENTATION = "hierattn_eager"
FAMILIES = {"bert": "BERT", "roberta": "RoBERTa", "distilbert": "DistilBERT"}


@dataclass
class TransformerConfig:
    vocab_size: int
    num_classes: int
    family: str = "bert"  # the transformers model_type of a model built here: bert, roberta or distilbert
    layers: int = 2
    heads: int = 4
    d: int = 128  # hidden size (BERT-base: 768)
    ffn: int = 512  # feed-forward width (BERT-base: 3072)
    max_positions: int = 512  # tokens one sequence holds, special tokens included
    dropout: float = 0.1
    pad_id: int = 0
    init_std: float = 0.02  # the weights' initial spread (transformers' initializer_range)
    subwords: int = 8000  # the tokenizer a model built here trains on its training split: at most this many tokens


def _registered() -> None:
    """Our eager attention, and transformers' eager mask for it, under ``IMPLEMENTATION`` (once)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    if IMPLEMENTATION not in AttentionInterface._global_mapping:
        AttentionInterface.register(IMPLEMENTATION, _attention)
        AttentionMaskInterface.register(IMPLEMENTATION, eager_mask)


def _attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Eager scaled dot-product attention whose probabilities pass through ``intervene``.
    query, key, value: (B, H, T, d_head); attention_mask: (B, 1, T, T), additive (0 where a key is
    real) or bool (True there), or None. Returns (B, T, H, d_head) and the weights (B, H, T, T)."""
    scores = torch.matmul(query, key.transpose(2, 3)) * (query.shape[-1] ** -0.5 if scaling is None else scaling)
    if attention_mask is None:
        real = torch.ones_like(scores, dtype=torch.bool)
    elif attention_mask.dtype == torch.bool:
        real = attention_mask.expand_as(scores)
        scores = scores.masked_fill(~real, torch.finfo(scores.dtype).min)
    else:
        real = (attention_mask == 0).expand_as(scores)
        scores = scores + attention_mask
    weights = torch.softmax(scores.float(), dim=-1).to(query.dtype)
    weights = intervene(SITE, weights, real)
    keep_layer(weights)
    used = nn.functional.dropout(weights, p=dropout, training=module.training)
    return torch.matmul(used, value).transpose(1, 2).contiguous(), weights  # the map: before dropout


def hf_config(c: TransformerConfig):
    """The transformers config of a model built here."""
    from transformers import BertConfig, DistilBertConfig, RobertaConfig

    common = {"vocab_size": c.vocab_size, "num_labels": c.num_classes, "pad_token_id": c.pad_id,
              "initializer_range": c.init_std}
    if c.family == "distilbert":
        return DistilBertConfig(dim=c.d, n_layers=c.layers, n_heads=c.heads, hidden_dim=c.ffn, dropout=c.dropout,
                                attention_dropout=c.dropout, max_position_embeddings=c.max_positions, **common)
    sizes = {"hidden_size": c.d, "num_hidden_layers": c.layers, "num_attention_heads": c.heads,
             "intermediate_size": c.ffn, "hidden_dropout_prob": c.dropout, "attention_probs_dropout_prob": c.dropout}
    if c.family == "roberta":  # positions count from pad_id + 1
        return RobertaConfig(max_position_embeddings=c.max_positions + c.pad_id + 1, type_vocab_size=1, **sizes,
                             **common)
    if c.family == "bert":
        return BertConfig(max_position_embeddings=c.max_positions, **sizes, **common)
    raise ValueError(f"family must be one of {', '.join(FAMILIES)}, not {c.family!r}")


def config_from_hf(config) -> TransformerConfig:
    """Our summary of a transformers config (what the card, the display name and the budget read)."""
    def first(*names, default=0):
        return next((getattr(config, n) for n in names if isinstance(getattr(config, n, None), int)), default)

    return TransformerConfig(first("vocab_size"), int(config.num_labels), str(config.model_type),
                             first("num_hidden_layers", "n_layers", "num_layers"),
                             first("num_attention_heads", "n_heads", "num_heads"),
                             first("hidden_size", "dim", "d_model"), first("intermediate_size", "hidden_dim"),
                             first("max_position_embeddings", default=512),
                             float(next((getattr(config, n) for n in ("hidden_dropout_prob", "dropout")
                                         if isinstance(getattr(config, n, None), (int, float))), 0.0)),
                             first("pad_token_id"), float(getattr(config, "initializer_range", 0.02)))


class TransformerClassifier(nn.Module):
    """A transformers sequence classifier (``self.encoder``) reading ``Batch.pieces``."""

    def __init__(self, config: TransformerConfig, encoder: nn.Module | None = None):
        super().__init__()
        from transformers import AutoModelForSequenceClassification

        _registered()
        self.config = config
        self.encoder = encoder if encoder is not None else AutoModelForSequenceClassification.from_config(
            hf_config(config), attn_implementation=IMPLEMENTATION)
        embeddings = getattr(getattr(self.encoder, self.encoder.base_model_prefix, self.encoder), "embeddings", None)
        # RoBERTa's positions start after its padding id: its table holds that many fewer tokens.
        offset = getattr(embeddings, "padding_idx", None)
        positions = getattr(self.encoder.config, "max_position_embeddings", None) or config.max_positions
        self.model_window = positions - (offset + 1 if isinstance(offset, int) else 0)  # what its positions hold
        summary = config_from_hf(self.encoder.config)
        # the tokens read at once: the model's window, or fewer where one explanation of a full window
        # would hold more attention than the server's limit (a 4,096-token model cost 49 s and 4 GB
        # before the limit refused its maps); the sidebar says so
        self.window = min(self.model_window, fitting_window(summary.layers, summary.heads))

    @property
    def embedding(self) -> nn.Module:
        """The token embedding table (gradient x input reads its lookups)."""
        return self.encoder.get_input_embeddings()

    def attention_cells(self, sentences: int, words: int) -> int:
        """The attention cells one explanation holds at a full window (``library_limits.held_cells``;
        ``budget`` reads this)."""
        summary = config_from_hf(self.encoder.config)
        return held_cells(summary.layers, summary.heads, self.window, sentences)

    def forward_cells(self, sentences: int, words: int) -> int:
        """A full window's pass at its peak: the float32 stack of every layer's map, then what is held."""
        summary = config_from_hf(self.encoder.config)
        return summary.layers * summary.heads * self.window ** 2 + self.attention_cells(sentences, words)

    def pieces_from_words(self, batch: Batch) -> Pieces:
        """A batch without pieces (the budget's and the loader's probes): each real word read as one
        token, its word id, no special tokens, cut at the window."""
        b, s, w = batch.word_ids.shape
        flat = batch.word_mask.view(b, s * w)
        order = torch.sort((~flat).to(torch.int8), dim=1, stable=True).indices
        length = max(1, min(int(flat.sum(1).max()), self.window))
        ids = batch.word_ids.view(b, s * w).gather(1, order[:, :length]).clamp(max=self.config.vocab_size - 1)
        mask = flat.gather(1, order[:, :length])
        word = torch.where(mask, torch.arange(length, device=ids.device).expand(b, length), -1)
        return Pieces(ids, mask, word)

    def forward(self, batch: Batch, return_attentions: bool = True):
        pieces, word_mask = batch.pieces, batch.word_mask
        if pieces is None:
            pieces = self.pieces_from_words(batch)
            flat = word_mask.flatten(1)
            word_mask = (flat & (flat.cumsum(1) <= pieces.ids.shape[1])).view_as(word_mask)  # words in the window
        ids, mask, attentions = pieces.ids, pieces.mask.long(), {}
        if return_attentions and not torch.is_grad_enabled():  # each layer written into one stack
            with layer_stack(self.encoder.config.num_hidden_layers) as stack:
                out = self.encoder(input_ids=ids, attention_mask=mask)
            attentions = maps(stack.full(), pieces, word_mask)
        else:  # a gradient through the maps: transformers' own list, stacked
            out = self.encoder(input_ids=ids, attention_mask=mask, output_attentions=return_attentions)
            if return_attentions:
                layers, out.attentions = out.attentions, None
                attentions = maps(torch.stack(layers, 1), pieces, word_mask)
        return classification_output(out.logits, batch, attentions)


# A Hugging Face classifier folder, as save_pretrained writes it.
WEIGHTS = "model.safetensors"
OURS = "hierattn.json"  # {"format_version": 1, "text": {...}, "dataset": ...}
PICKLES = ("pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack")
CONVERT = ("convert it once, where you trust the file: AutoModelForSequenceClassification.from_pretrained(folder)"
           ".save_pretrained(folder, safe_serialization=True)")
# Config keys that point transformers at code: never followed, and left out of the config we build.
CODE_KEYS = ("auto_map", "custom_pipelines")
# Model types whose position table starts after the padding id (the card's window; a loaded model measures it)
PADDED_POSITIONS = ("roberta", "xlm-roberta", "camembert", "longformer")


class HuggingFaceFolder:
    """How checkpoints of the ``transformer`` model type are stored: the library's own folder."""

    files = ("config.json", WEIGHTS, TOKENIZER_FILE, OURS)
    layout = staticmethod(library_heads.layout)  # the file's keys in our module (the library's model is ``encoder``)
    untrained_head = staticmethod(library_heads.untrained_head)

    @staticmethod
    def recognises(config: dict) -> bool:
        """A transformers config.json (ours have a ``format_version``)."""
        return ("format_version" not in config and isinstance(config.get("model_type"), str)
                and any(k in config for k in ("architectures", "id2label", "num_labels", "transformers_version")))

    @staticmethod
    def problem(directory: Path, config: dict) -> str | None:
        """Why this folder is not read (None: it is)."""
        from transformers import CONFIG_MAPPING
        from transformers.models.auto.modeling_auto import MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES

        model_type = config["model_type"]
        if (problem := config_number_problem(config)) is not None:
            return problem
        if model_type not in CONFIG_MAPPING:
            code = " and names code of its own (auto_map), which hierattn never runs" if "auto_map" in config else ""
            return f"model type {model_type!r} is not one the transformers library defines{code}"
        if model_type not in MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES:
            return f"transformers has no sequence classifier for model type {model_type!r}"
        if not (directory / WEIGHTS).is_file():
            pickled = [name for name in PICKLES if (directory / name).is_file()]
            if pickled:
                return (f"its weights are in {pickled[0]}, a pickle, which could run code when read; hierattn reads "
                        f"{WEIGHTS} only: {CONVERT}")
            return f"{WEIGHTS} is missing"
        if not (directory / TOKENIZER_FILE).is_file():
            return (f"{TOKENIZER_FILE} is missing: hierattn reads a fast tokenizer's file (save it with "
                    "AutoTokenizer.from_pretrained(folder).save_pretrained(folder))")
        return file_problem(directory / TOKENIZER_FILE)  # before the model is built (data.tokenizer_rules)

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

    @classmethod
    def build(cls, config: dict, ours: dict | None = None) -> tuple[TransformerClassifier, list[str]]:
        """The library's classifier for ``config`` (weights not yet read) and its labels in id order;
        frozen to even attention where hierattn.json (``ours``) says it was trained so."""
        from transformers import AutoModelForSequenceClassification

        _registered()
        library = cls.library_config(config)
        encoder = AutoModelForSequenceClassification.from_config(library, attn_implementation=IMPLEMENTATION)
        labels = [str(library.id2label.get(i, f"LABEL_{i}")) for i in range(library.num_labels)]
        model = TransformerClassifier(config_from_hf(library), encoder)
        if (ours or {}).get("attention_weights") == "uniform":
            from hierattn.models.intervention import freeze_to_uniform

            model = freeze_to_uniform(model)
        return model, labels

    @staticmethod
    def vocab(directory: Path, model: TransformerClassifier) -> SubwordVocab:
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
    def write(directory: Path, model: TransformerClassifier, vocab: SubwordVocab, labels: list[str], text: dict,
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


def vocabulary(documents, config: dict, train_config) -> tuple[SubwordVocab, dict]:
    """A model built here reads the pieces of a tokenizer trained on its training split, as its
    family's is (WordPiece for BERT and DistilBERT, byte-level BPE for RoBERTa); returns it and the
    config it implies (the pad id)."""
    from hierattn.data.subwords import pad_id, train_tokenizer

    kind = "byte_bpe" if config.get("family") == "roberta" else "wordpiece"
    tokenizer = train_tokenizer(documents, kind, int(config.get("subwords", 8000)), train_config.min_freq)
    pad = pad_id(tokenizer, kind)
    return SubwordVocab(tokenizer, int(config.get("max_positions", 512)), pad), {"pad_id": pad}


def relabel(model: TransformerClassifier, labels: list[str]) -> TransformerClassifier:
    """``model`` with a classification head for ``labels``: its own where they are its labels, in
    their order; else a new head (the library's initialisation) on the same encoder, as transformers'
    ``ignore_mismatched_sizes`` gives. The encoder's weights are kept either way."""
    from transformers import AutoModelForSequenceClassification

    config = model.encoder.config
    if [config.id2label.get(i) for i in range(config.num_labels)] == list(labels):
        return model
    fresh_config = type(config).from_dict({**config.to_dict(), "num_labels": len(labels),
                                           "id2label": dict(enumerate(labels)),
                                           "label2id": {x: i for i, x in enumerate(labels)}})
    encoder = AutoModelForSequenceClassification.from_config(fresh_config, attn_implementation=IMPLEMENTATION)
    base = encoder.base_model_prefix + "."
    kept = {k: v for k, v in model.encoder.state_dict().items() if k.startswith(base)}
    missing = [k for k in encoder.load_state_dict(kept, strict=False).missing_keys if k.startswith(base)]
    if missing:
        raise ValueError(f"the encoder's weights do not fit a new head: {missing[:3]}")
    fresh = TransformerClassifier(config_from_hf(fresh_config), encoder)
    return fresh


def display_name(config: dict) -> str:
    family = FAMILIES.get(config.get("family"), str(config.get("family", "transformer")))
    return f"{family} ({config.get('layers', '?')} layers × {config.get('heads', '?')} heads)"


SPEC = ModelSpec(
    "transformer", TransformerClassifier, TransformerConfig, "Transformer encoder (Hugging Face: BERT, RoBERTa, "
    "DistilBERT)", display_name, listed=8,
    knobs=(Knob("family", "Family", "Which transformers architecture to build from scratch: BERT ([CLS], token type "
                "ids), RoBERTa (<s>, byte-level BPE) or DistilBERT (no token type ids).", "choice",
                tuple(FAMILIES)),
           Knob("layers", "Layers", "Transformer layers stacked.", "int", (), 1, 12),
           Knob("max_positions", "Window (tokens)", "The most subword tokens one document is read in, special tokens "
                "included; the rest is cut and reported.", "int", (), 16, 512),
           Knob("subwords", "Tokenizer size", "Tokens in the tokenizer trained on the training split.", "int", (), 500,
                50000)),
    maps="every layer's self-attention per head over its subword tokens, the same between words and between "
         "sentences, and the last layer's first-token ([CLS]) row over words and sentences",
    folder=HuggingFaceFolder(), vocabulary=vocabulary, relabel=relabel, reads="text")
