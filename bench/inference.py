"""Explain latency at 100 / 1,000 / 10,000 tokens and the tokenisation rate."""
from __future__ import annotations

import statistics
import time
from pathlib import Path

import torch

from hierattn.analysis.explain import explain
from hierattn.checkpoint.classifier import Classifier
from hierattn.checkpoint.reading import load_classifier
from hierattn.data.text import TextConfig, Vocab, tokenize_many
from hierattn.home import list_checkpoints
from hierattn.models import build_model, model_config_dict, sized_for_text, text_problem

LATENCY_TOKENS = (100, 1000, 10000)
# Explain latency is measured with the caps lifted, so a 5,000-token document is read whole.
UNCAPPED = TextConfig(max_sentences=2000, max_words=400)


def tokenisation_rate(texts: list[str]) -> float:
    """Tokens per second of ``tokenize_many`` over long documents, caps lifted."""
    tokenize_many(texts[:4], UNCAPPED)  # warm-up: builds the pipeline
    start = time.perf_counter()
    documents = tokenize_many(texts, UNCAPPED)
    return sum(d.num_tokens for d in documents) / (time.perf_counter() - start)


def document_of(tokens: int, texts: list[str]) -> str:
    out, count = [], 0
    for text in texts:
        for line in text.splitlines():
            n = len(line.split())
            if count + n > tokens * 1.02:
                continue
            out.append(line)
            count += n
            if count >= tokens * 0.98:
                return "\n".join(out)
    return "\n".join(out)


def explain_latency(classifier: Classifier, text: str, repeats: int) -> tuple[float, int]:
    """Median seconds of tokenise + forward + metrics, and the number of tokens read: the whole
    text (caps lifted) where the model can read it, else what its own caps let it read (a positional
    table sized from its caps ends there)."""
    lifted = text_problem(classifier.model_type, model_config_dict(classifier.model), UNCAPPED.max_sentences,
                          UNCAPPED.max_words) is None
    caps = UNCAPPED if lifted else classifier.text_config
    explain(classifier, text, caps)  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        ex = explain(classifier, text, caps)
        times.append(time.perf_counter() - start)
    return statistics.median(times), ex.document.num_tokens


def classifier_for(model_type: str, root: Path, vocab: Vocab, labels: list[str]) -> Classifier:
    shipped = [p for p in list_checkpoints(root) if p.name == f"bbc-news-{model_type}"]
    if shipped:
        return load_classifier(shipped[0])
    sized = sized_for_text(model_type, {}, UNCAPPED.max_sentences, UNCAPPED.max_words)  # reads the lifted caps
    model = build_model(model_type, {"vocab_size": len(vocab), "num_classes": len(labels), **sized}).eval()
    return Classifier(f"untrained-{model_type}", model, model_type, vocab, labels, TextConfig(), {}, None,
                      torch.device("cpu"))


def battery_seconds(classifier: Classifier, text: str, repeats: int, adversarial: bool = True) -> dict:
    """Median seconds of Explore's per-document faithfulness battery (explain included), without
    and (once, unless ``adversarial`` is off) with the adversarial search, and the tokens read."""
    from hierattn.analysis.battery import document_battery

    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        ex = explain(classifier, text)
        document_battery(classifier, ex)
        times.append(time.perf_counter() - start)
    start = time.perf_counter()
    if adversarial:
        document_battery(classifier, explain(classifier, text), adversarial=True)
    return {"seconds": statistics.median(times), "runs": times,
            "adversarial_seconds": time.perf_counter() - start if adversarial else None,
            "tokens": ex.document.num_tokens, "checkpoint": classifier.name}


def trust_two_tabs(classifier: Classifier, texts: list[str]) -> dict:
    """Explore's "Can I trust this shading?" for two ~250-token articles at once, as the app runs them:
    each in a background thread that holds one of ``cores()`` worker slots and its part of the server's
    threads (``tasks._Task``), against one alone. Two tabs on the same article share one computation
    (the app's results are keyed by checkpoint and document), so the concurrent case is two articles.
    One battery runs first, untimed: a served app has done its first (captum's import, the caches),
    and counting it made one tab alone look slower than two (14 s, against 7-8 s warm)."""
    import threading

    from hierattn.analysis.battery import document_battery
    from hierattn.threads import cores, serving

    def one(text: str, shared_by: int, out: list) -> None:
        with serving(shared_by=shared_by):
            start = time.perf_counter()
            document_battery(classifier, explain(classifier, text))
            out.append(time.perf_counter() - start)

    one(texts[1], cores(), [])  # warm-up, as a served app is warm: the first battery loads captum and fills caches
    alone: list[float] = []
    one(texts[0], cores(), alone)
    together: list[float] = []
    start = time.perf_counter()
    threads = [threading.Thread(target=one, args=(t, cores(), together)) for t in texts[:2]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    both = time.perf_counter() - start
    return {"alone_seconds": alone[0], "both_seconds": both, "ratio": both / alone[0], "cores": cores(),
            "tokens": explain(classifier, texts[0]).document.num_tokens, "checkpoint": classifier.name}
