"""``python -m hierattn bench``: training throughput, explain latency and dataset-statistics time
on this machine."""
from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import torch

from .checkpoint import Classifier, best_device, list_checkpoints, load_classifier
from .data import bucketed_batches, load_builtin, stratified_split
from .explain import explain
from .models import build_model
from .text import TextConfig, Vocab, tokenize_many
from .training import PRESETS, hardware

LATENCY_TOKENS = (100, 1000, 5000)
# Explain latency is measured with the caps lifted, so a 5,000-token document is read whole.
UNCAPPED = TextConfig(max_sentences=2000, max_words=400)


def training_throughput(model_type: str, documents, labels, vocab, num_classes: int, batches: int, device) -> float:
    """Documents per second over ``batches`` training steps (forward, backward, Adam), after one warm-up."""
    preset = PRESETS[f"bbc-news-{model_type}"]
    torch.manual_seed(0)
    model = build_model(model_type, {"vocab_size": len(vocab), "num_classes": num_classes,
                                     **preset.model_config}).to(device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    all_batches = bucketed_batches(documents, labels, vocab, preset.train.batch_size, shuffle=True)
    timed, docs = 0.0, 0
    for i, batch in enumerate(all_batches[: batches + 1]):
        batch = batch.to(device)
        start = time.perf_counter()
        loss = model(batch, return_attentions=False).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        if i:  # the first batch warms up allocators and kernels
            timed += time.perf_counter() - start
            docs += len(batch)
    return docs / timed


def _document_of(tokens: int, texts: list[str]) -> str:
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
    """Median seconds of tokenise + forward + metrics, and the number of tokens read."""
    explain(classifier, text, UNCAPPED)  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        ex = explain(classifier, text, UNCAPPED)
        times.append(time.perf_counter() - start)
    return statistics.median(times), ex.document.num_tokens


def _classifier(model_type: str, root: Path, vocab: Vocab, labels: list[str]) -> Classifier:
    shipped = [p for p in list_checkpoints(root) if p.name == f"bbc-news-{model_type}"]
    if shipped:
        return load_classifier(shipped[0])
    model = build_model(model_type, {"vocab_size": len(vocab), "num_classes": len(labels)}).eval()
    return Classifier(f"untrained-{model_type}", model, model_type, vocab, labels, TextConfig(), {}, None,
                      torch.device("cpu"))


def run_bench(out: str | Path, quick: bool = False, checkpoints: str | Path = "checkpoints") -> dict:
    device = best_device()
    ds = load_builtin("bbc-news")
    split = stratified_split(ds.labels)
    n_train = 64 if quick else 512
    train_idx = split["train"][:n_train]
    docs = tokenize_many([ds.texts[i] for i in train_idx], PRESETS["bbc-news-han"].text)
    labels = [ds.labels[i] for i in train_idx]
    vocab = Vocab.build(docs, min_freq=2)
    results = {"hardware": hardware(), "device": device.type, "torch": torch.__version__,
               "threads": torch.get_num_threads(), "training_docs_per_s": {}, "explain_seconds": {}}
    for model_type in ("han", "hcan"):
        rate = training_throughput(model_type, docs, labels, vocab, len(ds.label_names), 2 if quick else 24, device)
        results["training_docs_per_s"][model_type] = rate
    test_texts = [ds.texts[i] for i in split["test"]]
    for model_type in ("han", "hcan"):
        classifier = _classifier(model_type, Path(checkpoints), vocab, ds.label_names)
        for tokens in LATENCY_TOKENS:
            seconds, read = explain_latency(classifier, _document_of(tokens, test_texts), 1 if quick else 5)
            results["explain_seconds"][f"{model_type}/{tokens}"] = {"seconds": seconds, "tokens_read": read,
                                                                   "checkpoint": classifier.name}
    # Dataset statistics page: every self-attention matrix of the bbc-news test split (issue 5: < 1 min).
    from .stats import split_statistics

    results["statistics_seconds"] = {}
    count = 16 if quick else len(test_texts)
    labels = [ds.label_names[ds.labels[i]] for i in split["test"]][:count]
    for model_type in ("hcan", "sanet"):
        classifier = _classifier(model_type, Path(checkpoints), vocab, ds.label_names)
        start = time.perf_counter()
        rows = split_statistics(classifier, test_texts[:count], labels)
        results["statistics_seconds"][model_type] = {"seconds": time.perf_counter() - start, "documents": count,
                                                     "matrices": len(rows), "checkpoint": classifier.name}
    Path(out).write_text(json.dumps(results, indent=2))
    print(format_table(results))
    return results


def format_table(results: dict) -> str:
    lines = [f"hardware: {results['hardware']} (torch {results['torch']})", "",
             "| measurement | HAN | HCAN |", "|---|---:|---:|"]
    r = results["training_docs_per_s"]
    lines.append(f"| training throughput, bbc-news (documents/s) | {r['han']:.1f} | {r['hcan']:.1f} |")
    for tokens in LATENCY_TOKENS:
        h, c = (results["explain_seconds"][f"{m}/{tokens}"] for m in ("han", "hcan"))
        lines.append(f"| explain latency, ~{tokens:,} tokens ({h['tokens_read']:,} read) | "
                     f"{1000 * h['seconds']:.0f} ms | {1000 * c['seconds']:.0f} ms |")
    if results.get("statistics_seconds"):
        lines += ["", "| dataset statistics, bbc-news test split | documents | matrices | time |", "|---|---:|---:|---:|"]
        for model_type, r in results["statistics_seconds"].items():
            lines.append(f"| {model_type} `{r['checkpoint']}` | {r['documents']} | {r['matrices']:,} | {r['seconds']:.1f} s |")
    return "\n".join(lines)
