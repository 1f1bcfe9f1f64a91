"""Tiny Hugging Face classifiers of three families, saved with ``save_pretrained`` as a user's would
be: BERT (WordPiece, ``[CLS] ... [SEP]``, token type ids), RoBERTa (byte-level BPE, ``<s> ... </s>``,
positions after the padding id) and DistilBERT (WordPiece, no token type ids). Random weights,
spread wider than transformers' default so that their attention is far from even."""
from __future__ import annotations

from pathlib import Path

import torch

FAMILIES = ("bert", "roberta", "distilbert")
LABELS = ["negative", "positive", "neutral"]
WORDS = ("the a an movie film was is it not and but of to great good bad terrible plot actor acting story "
         "this that i very really loved hated boring fun un ##believ ##able . ! ?").split()
TEXTS = ["The movie was unbelievable! I loved the plot.", "A terrible film. The acting was bad and boring.",
         "It is a film. It is not great, but the story is fun."]
# what our words leave out and a tokenizer reads: capitals, commas, apostrophes, HTML entities, symbols
RAW_TEXTS = ["I DON'T like it, &amp; the plot was BAD!!", "The Movie: \"great\" &lt;3 -- isn't it?",
             "Fun , fun ,, FUN; the acting (really) was good...", "#loved @actor the film 😂 :)"]


def wordpiece():
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(WORDS))}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                                       special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tok.decoder = decoders.WordPiece()
    return tok, {"unk_token": "[UNK]", "pad_token": "[PAD]", "cls_token": "[CLS]", "sep_token": "[SEP]",
                 "mask_token": "[MASK]"}


def byte_level_bpe():
    from tokenizers import ByteLevelBPETokenizer, processors

    tok = ByteLevelBPETokenizer(add_prefix_space=False)
    tok.train_from_iterator(TEXTS * 20 + [" ".join(w for w in WORDS if not w.startswith("#"))] * 20, vocab_size=300,
                            min_frequency=1, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
                            show_progress=False)
    tok = tok._tokenizer
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True,
                                                      add_prefix_space=False)
    return tok, {"unk_token": "<unk>", "pad_token": "<pad>", "cls_token": "<s>", "sep_token": "</s>",
                 "bos_token": "<s>", "eos_token": "</s>", "mask_token": "<mask>"}


def save_tiny(family: str, directory: Path, seed: int = 0, layers: int = 2, heads: int = 2) -> Path:
    """A random ``family`` classifier of 3 labels and its tokenizer, written by ``save_pretrained``."""
    from transformers import (
        AutoModelForSequenceClassification,
        BertConfig,
        DistilBertConfig,
        PreTrainedTokenizerFast,
        RobertaConfig,
    )

    tok, special = byte_level_bpe() if family == "roberta" else wordpiece()
    labels = {"id2label": dict(enumerate(LABELS)), "label2id": {x: i for i, x in enumerate(LABELS)}}
    size = tok.get_vocab_size()
    if family == "bert":
        config = BertConfig(vocab_size=size, hidden_size=16, num_hidden_layers=layers, num_attention_heads=heads,
                            intermediate_size=32, max_position_embeddings=64, initializer_range=0.3, **labels)
    elif family == "roberta":
        config = RobertaConfig(vocab_size=size, hidden_size=16, num_hidden_layers=layers, num_attention_heads=heads,
                               intermediate_size=32, max_position_embeddings=66, pad_token_id=1, type_vocab_size=1,
                               initializer_range=0.3, **labels)
    else:
        config = DistilBertConfig(vocab_size=size, dim=16, n_layers=layers, n_heads=heads, hidden_dim=32,
                                  max_position_embeddings=64, initializer_range=0.3, **labels)
    torch.manual_seed(seed)
    model = AutoModelForSequenceClassification.from_config(config)
    with torch.no_grad():  # a head as training leaves it: transformers starts every bias at exactly zero,
        for name, p in model.named_parameters():  # which the app reads as a head never trained
            if not name.startswith(model.base_model_prefix + ".") and name.endswith("bias"):
                p.normal_(0, 0.1)
    directory = Path(directory)
    model.save_pretrained(directory)
    PreTrainedTokenizerFast(tokenizer_object=tok, **special).save_pretrained(directory)
    return directory


def reference_probabilities(directory: Path, text: str) -> torch.Tensor:
    """What transformers itself predicts for this text, as a practitioner runs it (its own tokenizer
    on the raw text, its model classes, eager attention): the number hierattn must reproduce."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(directory)
    model = AutoModelForSequenceClassification.from_pretrained(directory, attn_implementation="eager").eval()
    with torch.no_grad():
        return model(**tokenizer(text, return_tensors="pt", truncation=True)).logits.softmax(-1)[0]
