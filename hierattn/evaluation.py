"""The results table in the form of the HCAN paper's Table 2, and the papers' orderings checked on it.

``evaluate_checkpoints`` re-measures test accuracy on the data set's test split (the same
stratified split training used) and takes the training cost from each checkpoint's
``metrics.json``, where training recorded it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from .checkpoint import load_classifier, list_checkpoints
from .data import SEED, Dataset, bucketed_batches, stratified_split
from .models import display_name, model_config_dict
from .text import tokenize_many
from .training import evaluate


@dataclass
class Row:
    checkpoint: str
    model: str
    test_accuracy: float
    train_ms_per_document: float | None
    total_training_seconds: float | None
    num_parameters: int
    hardware: str
    epochs_run: int | None
    budget: int | None = None  # the epochs it was allowed (train_config.epochs); 1 for fitted models

    def as_dict(self) -> dict:
        return dict(self.__dict__)


# (better, worse, claim, source): the orderings the papers report, checked where both models are present.
ORDERINGS = [
    ("HCAN", "HAN", "HCAN >= HAN", "HCAN Table 2"),
    ("HCAN", "HCAN (one self-attention)", "two parallel self-attentions >= one", "HCAN Table 2"),
    ("HCAN", "HCAN (max pool)", "target attention >= max pooling", "HCAN Table 2"),
    ("HCAN", "HCAN (flat)", "hierarchical >= flat", "HCAN Table 2"),
    ("HAN", "Kim CNN", "HAN >= CNN", "HCAN Table 2"),
    ("SANet base", "SANet baseline (base, no attention)", "SANet >= its no-attention baseline", "SANet Table 1"),
    ("HAN (Cached LSTM)", "HAN (BiLSTM)", "Cached LSTM >= LSTM encoder", "HAN report 5.2"),
    ("HA-LSTM-4", "LSTM", "HA-LSTM >= LSTM", "HA-LSTM Table 2"),
    ("MahNN-3", "MahNN-1", "three channels >= one", "MahNN Table 2"),
    ("MahNN-3", "MahNN-rv", "semantical attention helps (MahNN-3 >= MahNN-rv)", "MahNN Table 2"),
]


def expand(paths: list[str | Path]) -> list[Path]:
    """Each path is a checkpoint directory or a folder of them."""
    out = []
    for p in map(Path, paths):
        out += [p] if (p / "config.json").exists() else list_checkpoints(p)
    return out


def evaluate_checkpoints(dataset: Dataset, paths: list[Path], device=None, seed: int = SEED) -> list[Row]:
    test = stratified_split(dataset.labels, seed)["test"]
    texts, labels = [dataset.texts[i] for i in test], [dataset.labels[i] for i in test]
    tokenised = {}
    rows = []
    for path in paths:
        classifier = load_classifier(path, device=device)
        if sorted(classifier.labels) != sorted(dataset.label_names):
            raise ValueError(f"{path.name} was trained on labels {classifier.labels}, "
                             f"but {dataset.name} has {dataset.label_names}")
        as_trained = [classifier.labels.index(dataset.label_names[y]) for y in labels]  # ids by label name
        key = (classifier.text_config.max_sentences, classifier.text_config.max_words)
        if key not in tokenised:
            tokenised[key] = tokenize_many(texts, classifier.text_config)
        batches = bucketed_batches(tokenised[key], as_trained, classifier.vocab, 64, shuffle=False)
        with torch.inference_mode():
            accuracy, _, _ = evaluate(classifier.model, batches, classifier.device)
        m = classifier.metrics
        rows.append(Row(path.name, display_name(classifier.model_type, model_config_dict(classifier.model)), accuracy,
                        m.get("train_ms_per_document"), m.get("total_training_seconds"), classifier.num_parameters,
                        m.get("hardware", "?"), m.get("epochs_run"), (m.get("train_config") or {}).get("epochs")))
    return rows


def orderings(rows: list[Row]) -> list[dict]:
    """Each paper ordering whose two models are both in ``rows``: measured accuracies and whether it holds.

    Where both models were trained with the same epoch budget, that comparison is used (the
    largest budget they share; the best run of each at it); otherwise the best of each, and the
    row says the budgets differ, since a longer-trained model has an unfair edge.
    """
    by_model: dict[str, dict] = {}
    for r in rows:
        runs = by_model.setdefault(r.model, {})
        runs[r.budget] = max(runs.get(r.budget, 0.0), r.test_accuracy)
    out = []
    for better, worse, claim, source in ORDERINGS:
        if better not in by_model or worse not in by_model:
            continue
        shared = set(by_model[better]) & set(by_model[worse]) - {None}
        if shared:
            budget = max(shared)
            a, b, note = by_model[better][budget], by_model[worse][budget], f"{budget} epochs each"
        else:
            (ba, a), (bb, b) = (max(by_model[m].items(), key=lambda kv: kv[1]) for m in (better, worse))
            note = f"unequal: {ba} vs {bb} epochs"
        out.append({"claim": claim, "source": source, "better": better, "worse": worse,
                    "better_accuracy": a, "worse_accuracy": b, "budget": note, "holds": a >= b})
    return out


def _minutes(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def markdown(dataset: str, rows: list[Row]) -> str:
    lines = [f"Test accuracy on `{dataset}` (our stratified 80/10/10 split, seed {SEED}).", "",
             "| model | checkpoint | test accuracy | training ms / document | total training time | epochs (run / allowed) "
             "| parameters | hardware |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in sorted(rows, key=lambda r: -r.test_accuracy):
        ms = "?" if r.train_ms_per_document is None else f"{r.train_ms_per_document:.2f}"
        lines.append(f"| {r.model} | `{r.checkpoint}` | {r.test_accuracy:.2%} | {ms} | {_minutes(r.total_training_seconds)} "
                     f"| {r.epochs_run or '—'} / {r.budget or '—'} | {r.num_parameters:,} | {r.hardware} |")
    checks = orderings(rows)
    if checks:
        lines += ["", "| paper's ordering | source | measured here | budget | holds? |", "|---|---|---|---|---|"]
        for c in checks:
            lines.append(f"| {c['claim']} | {c['source']} | {c['better']} {c['better_accuracy']:.2%} vs "
                         f"{c['worse']} {c['worse_accuracy']:.2%} | {c['budget']} | {'yes' if c['holds'] else '**no**'} |")
    return "\n".join(lines) + "\n"
