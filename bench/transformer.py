"""A transformer beside HAN (issue 33): explain latency of the shipped transformers at about 100
and 500 words, and training throughput of the bbc-news-transformer preset's model beside HAN's on
the same bbc-news training documents (the transformer reading its own WordPiece pieces)."""
from __future__ import annotations

import statistics
from pathlib import Path

from bench.inference import document_of, explain_latency
from bench.training import training_throughput
from hierattn.checkpoint import best_device, list_checkpoints, load_classifier
from hierattn.data.builtin import load_builtin
from hierattn.data.split import stratified_split
from hierattn.data.text import tokenize_many
from hierattn.training.presets import PRESETS

WORDS = (100, 500)


def record_transformer(quick: bool = False, checkpoints: str | Path = "checkpoints") -> dict:
    device = best_device()
    ds = load_builtin("bbc-news")
    split = stratified_split(ds.labels)
    test_texts = [ds.texts[i] for i in split["test"]]
    out = {"explain_seconds": {}, "training_docs_per_s": {}}
    for path in list_checkpoints(checkpoints):
        if not path.name.endswith("-transformer"):
            continue
        classifier = load_classifier(path, device=device)
        for words in WORDS:
            runs = [explain_latency(classifier, document_of(words, test_texts), 1 if quick else 5)
                    for _ in range(1 if quick else 3)]
            text = document_of(words, test_texts)
            tokens = len(classifier.vocab.tokens(classifier.vocab.within_window(
                tokenize_many([text], classifier.text_config)[0])))
            out["explain_seconds"][f"{path.name}/{words}"] = {
                "seconds": statistics.median(r[0] for r in runs), "runs": [r[0] for r in runs],
                "words_read": runs[0][1], "subword_tokens_read": tokens, "window": classifier.window}
    train_idx = split["train"][: 64 if quick else 512]
    docs = tokenize_many([ds.texts[i] for i in train_idx], PRESETS["bbc-news-han"].text)
    labels = [ds.labels[i] for i in train_idx]
    steps = 2 if quick else 24
    for model_type in ("han", "transformer"):
        rate, flops = training_throughput(model_type, docs, labels, None, len(ds.label_names), steps, device)
        out["training_docs_per_s"][model_type] = {"docs_per_s": rate, "flops_per_doc": flops}
    out["device"] = device.type
    return out


def format_transformer(results: dict) -> list[str]:
    lines = ["explain latency (tokenise, forward, every map and metric), median of 5:"]
    for key, r in results["explain_seconds"].items():
        lines.append(f"  {key} words: {r['seconds'] * 1000:.0f} ms, {r['words_read']} words read as "
                     f"{r['subword_tokens_read']} tokens (window {r['window']})")
    lines.append(f"training on bbc-news ({results['device']}), documents per second:")
    for model_type, r in results["training_docs_per_s"].items():
        lines.append(f"  {model_type}: {r['docs_per_s']:.1f} docs/s, {r['flops_per_doc'] / 1e9:.2f} GFLOP per document")
    return lines
