"""A transformer's config in hierattn's terms (``TransformerConfig``: what config.json records, the
Train page's knobs set, and the card and the budget read), and its translation to and from the
transformers library's config: ``hf_config`` is the library's config of a model built here,
``config_from_hf`` our summary of any library config (a folder's, whatever its model type)."""
from __future__ import annotations

from dataclasses import dataclass

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
