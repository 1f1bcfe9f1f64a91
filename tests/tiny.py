"""Tiny untrained checkpoints, one of every model type, for the suite: what a page, a panel or the
served app does depends on a model's type and its maps' axes, which a model of 16 dimensions has as
a trained one does, at a thousandth of the cost. What the shipped checkpoints themselves do (their
accuracy, their recorded predictions) is tests/test_shipped_checkpoints.py's to check.

``write_stand_ins`` writes a tiny model under each name the Tour asks for (and a HAN, an HCAN and a
SANet of each data set), of the same type, data set, labels and structure (heads, branches, levels)
as the shipped one, so the Tour's pages, Evaluation and Dataset statistics run on them."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch

from hierattn.checkpoint.writing import save_checkpoint
from hierattn.data.text import TextConfig, Vocab
from hierattn.models import build_model, sized_for_text
from tests.models.tiny_transformers import save_tiny

REPO = Path(__file__).resolve().parent.parent
LABELS = ["business", "sport", "positive", "negative"]
TEXT = TextConfig(max_sentences=6, max_words=12)
# name, model type, its tiny configuration
TINY = (
    ("tiny-han", "han", {"embed_dim": 16, "hidden": 8, "attention_dim": 16}),
    ("tiny-hcan", "hcan", {"d": 16, "heads": 2}),
    ("tiny-hcan-flat-max", "hcan", {"d": 16, "heads": 2, "hierarchical": False, "pooling": "max"}),
    ("tiny-han-cached", "han", {"embed_dim": 16, "hidden": 8, "attention_dim": 16, "encoder": "cached_lstm",
                                "cache_groups": 2}),
    ("tiny-sanet", "sanet", {"embed_dim": 16, "d": 16}),
    ("tiny-halstm", "halstm", {"embed_dim": 16, "hidden": 8, "dense": 8}),
    ("tiny-onlstm", "halstm", {"embed_dim": 16, "hidden": 8, "dense": 8, "cell": "onlstm"}),
    ("tiny-mahnn", "mahnn", {"embed_dim": 16, "hidden": 8, "attention_dim": 8, "maps": 4}),
    ("tiny-kimcnn", "kimcnn", {"embed_dim": 16, "maps": 4}),
    ("tiny-tfidf", "tfidf", {"num_bigrams": 2}),
)
TINY_TRANSFORMER = "tiny-transformer"  # a Hugging Face folder (BERT, WordPiece), as a fine-tuned model is saved
# the knobs a tiny stand-in keeps from the shipped model it stands in for: what the pages draw by
TOUR_KNOBS = ("heads", "parallel", "pooling", "hierarchical", "blocks", "attention", "scaled", "encoder")
TOUR_SIZES = {"han": {"embed_dim": 16, "hidden": 8, "attention_dim": 16}, "hcan": {"d": 16},
              "sanet": {"embed_dim": 16, "d": 16}}


def write_tiny_checkpoints(root: Path, vocab: Vocab) -> Path:
    """Every entry of ``TINY`` and the tiny transformer under ``root``."""
    torch.manual_seed(0)
    for name, model_type, config in TINY:
        model = build_model(model_type, {"vocab_size": len(vocab), "num_classes": len(LABELS), **config})
        save_checkpoint(root / name, model, model_type, vocab, LABELS, TEXT, {"test_accuracy": 0.5}, dataset="tweets")
    transformer = save_tiny("bert", root / TINY_TRANSFORMER)
    (transformer / "hierattn.json").write_text(json.dumps({"format_version": 1, "dataset": "tweets"}))
    return root


HOSTILE_LABELS = ["<script>alert(1)</script> **bold** _it_", "<img src=x onerror=alert(2)> $\\frac{1}{2}$",
                  "![x](http://127.0.0.1:9/t.png) **TRAINED** [Log in again](http://127.0.0.1:9/phish)",
                  "see http://127.0.0.1:9/x or www.evil.example"]


def hostile_checkpoint(root: Path, vocab: Vocab) -> Path:
    """An HCAN named ``hostile`` whose labels and data set name are HTML, markdown, LaTeX and links
    (another visitor's model, a Hub download): every page must show them as text."""
    labels = HOSTILE_LABELS
    torch.manual_seed(0)
    model = build_model("hcan", {"vocab_size": len(vocab), "num_classes": 4, "d": 16, "heads": 2})
    return save_checkpoint(root / "hostile", model, "hcan", vocab, labels, TextConfig(6, 12), {"test_accuracy": 0.5},
                           dataset="[click](javascript:alert(3)) **ds**")


def stand_in_names() -> list[str]:
    """The shipped checkpoints the tiny stand-ins stand in for: those the Tour's steps are checked on,
    and a HAN, an HCAN and a SANet of each built-in data set (what Evaluation and Dataset statistics
    compare)."""
    from hierattn.analysis.tour.steps import STEPS

    toured = {name for step in STEPS.values() for name in step.checkpoints}
    return sorted(toured | {f"{data}-{model}" for data in ("bbc-news", "tweets") for model in ("han", "hcan", "sanet")})


def write_stand_ins(root: Path, vocab: Vocab, names) -> Path:
    """A tiny model under each shipped checkpoint name in ``names``, of its type, data set, labels,
    caps and structure; a Hugging Face folder stands in for a Hugging Face folder."""
    torch.manual_seed(0)
    for name in names:
        shipped = REPO / "checkpoints" / name
        if (shipped / "hierattn.json").exists():  # a Hugging Face folder: a tiny BERT with the shipped labels
            labels = json.loads((shipped / "config.json").read_text())["id2label"]
            folder = save_tiny("bert", root / name)
            config = json.loads((folder / "config.json").read_text())
            config.update(id2label=labels, label2id={v: int(k) for k, v in labels.items()})
            (folder / "config.json").write_text(json.dumps(config))
            shutil.copy(shipped / "hierattn.json", folder / "hierattn.json")
            continue
        config = json.loads((shipped / "config.json").read_text())
        model_type, labels = config["model_type"], config["labels"]
        knobs = {k: v for k, v in config["model_config"].items() if k in TOUR_KNOBS}
        if model_type == "hcan":
            knobs["d"] = 16 if knobs.get("heads", 1) <= 4 else 32  # d must split evenly among the heads
        text = TextConfig(**{k: v for k, v in config["text"].items() if k in ("max_sentences", "max_words")})
        model = build_model(model_type, sized_for_text(model_type, {
            "vocab_size": len(vocab), "num_classes": len(labels), **TOUR_SIZES.get(model_type, {}), **knobs},
            text.max_sentences, text.max_words))
        save_checkpoint(root / name, model, model_type, vocab, labels, text, {"test_accuracy": 0.5},
                        dataset=config["dataset"])
    return root
