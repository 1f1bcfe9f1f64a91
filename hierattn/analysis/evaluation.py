"""The results table of checkpoints in the form of the HCAN paper's Table 2 (single runs: the papers'
orderings are judged on the experiments registry's seeds, ``hierattn.experiments``).

``evaluate_checkpoints`` re-measures test accuracy on the data set's test split (the same
stratified split training used) and takes the training cost from each checkpoint's
``metrics.json``, where training recorded it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from hierattn.card import recorded_hardware
from hierattn.checkpoint.classifier import WITHHELD, Classifier
from hierattn.checkpoint.reading import load_classifier
from hierattn.data.batches import streamed_batches
from hierattn.data.dataset import Dataset
from hierattn.data.split import SEED, stratified_split
from hierattn.home import list_checkpoints

SPLITS = ("train", "validation", "test")


class LabelMismatch(ValueError):
    """The checkpoint was trained on other classes than the data set has."""


@dataclass
class SplitEvaluation:
    """Predictions of one classifier on one split of a data set.

    ``labels``: the class names, in the classifier's order; ``true`` / ``predicted``: class ids
    in that order, one per document; ``probabilities``: (documents, classes); ``documents``: the
    documents' indices in the data set."""

    checkpoint: str
    dataset: str
    split: str
    labels: list[str]
    documents: list[int]
    true: list[int]
    predicted: list[int]
    probabilities: list[list[float]]

    @property
    def accuracy(self) -> float:
        return sum(t == p for t, p in zip(self.true, self.predicted)) / max(len(self.true), 1)

    def per_class(self):
        """precision, recall, F1 and support per class (scikit-learn), plus macro and weighted means."""
        import pandas as pd
        from sklearn.metrics import precision_recall_fscore_support

        ids = list(range(len(self.labels)))
        p, r, f, n = precision_recall_fscore_support(self.true, self.predicted, labels=ids, zero_division=0)
        table = pd.DataFrame({"class": self.labels, "precision": p, "recall": r, "F1": f, "support": n})
        for average in ("macro", "weighted"):
            ap, ar, af, _ = precision_recall_fscore_support(self.true, self.predicted, labels=ids, average=average,
                                                            zero_division=0)
            table.loc[len(table)] = [f"{average} mean", ap, ar, af, int(n.sum())]
        return table

    def confusion(self):
        """(true, predicted) counts, classes in ``labels`` order."""
        from sklearn.metrics import confusion_matrix

        return confusion_matrix(self.true, self.predicted, labels=list(range(len(self.labels))))

    def misclassified(self):
        """One row per wrong prediction, most confident mistakes first."""
        import pandas as pd

        rows = [{"document": d, "true": self.labels[t], "predicted": self.labels[p], "confidence": max(probs),
                 "P(true class)": probs[t]}
                for d, t, p, probs in zip(self.documents, self.true, self.predicted, self.probabilities) if t != p]
        frame = pd.DataFrame(rows, columns=["document", "true", "predicted", "confidence", "P(true class)"])
        return frame.sort_values("confidence", ascending=False, kind="stable").reset_index(drop=True)


def label_map(classifier: Classifier, dataset: Dataset) -> list[int]:
    """For each of the data set's class ids, the classifier's id of the same class name."""
    if sorted(classifier.labels) != sorted(dataset.label_names):
        raise LabelMismatch(f"{classifier.name} was trained on the classes {', '.join(classifier.labels)}, "
                            f"but {dataset.name} has {', '.join(dataset.label_names)}")
    return [classifier.labels.index(name) for name in dataset.label_names]


@torch.inference_mode()
def evaluate_split(classifier: Classifier, dataset: Dataset, split: str = "test", seed: int = SEED,
                   batch_size: int = 64, progress: Callable[[int, int], None] | None = None,
                   indices: list[int] | None = None) -> SplitEvaluation:
    """Predict every document of ``split`` (the stratified split training used, or ``indices`` into
    ``dataset``: the documents a checkpoint kept of its own data set), a chunk at a time."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    as_trained = label_map(classifier, dataset)
    indices = stratified_split(dataset.labels, seed)[split] if indices is None else indices
    texts = [dataset.texts[i] for i in indices]
    true, predicted, probabilities, documents = [], [], [], []
    for positions, _, batch in streamed_batches(texts, classifier.text_config, classifier.vocab, batch_size):
        out = classifier.model(batch.to(classifier.device), return_attentions=False)
        probs = torch.softmax(out.logits.float(), -1).cpu()
        for row, position in enumerate(positions):
            documents.append(indices[position])
            true.append(as_trained[dataset.labels[indices[position]]])
            predicted.append(int(probs[row].argmax()))
            probabilities.append(probs[row].tolist())
        if progress:
            progress(len(documents), len(texts))
    order = sorted(range(len(documents)), key=documents.__getitem__)  # back to data set order
    return SplitEvaluation(classifier.name, dataset.name, split, list(classifier.labels),
                           [documents[i] for i in order], [true[i] for i in order], [predicted[i] for i in order],
                           [probabilities[i] for i in order])


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


def expand(paths: list[str | Path]) -> list[Path]:
    """Each path is a checkpoint directory or a folder of them."""
    out = []
    for p in map(Path, paths):
        out += [p] if (p / "config.json").exists() else list_checkpoints(p)
    return out


def result_row(classifier: Classifier, accuracy: float) -> Row:
    """A results-table row: the measured accuracy and the training cost recorded in ``metrics.json``."""
    m = classifier.metrics
    return Row(classifier.name, classifier.display_name, accuracy,
               m.get("train_ms_per_document"), m.get("total_training_seconds"), classifier.num_parameters,
               recorded_hardware(m) or "?", m.get("epochs_run"), (m.get("train_config") or {}).get("epochs"))


def evaluate_checkpoints(dataset: Dataset, paths: list[Path], device=None, seed: int = SEED) -> list[Row]:
    """A row per checkpoint; a ValueError for one whose prediction is withheld (a base encoder's random
    head, an untrained one): its accuracy would be chance printed as a result."""
    rows = []
    for path in paths:
        classifier = load_classifier(path, device=device)
        if classifier.prediction_withheld:
            raise ValueError(f"{classifier.name} is {WITHHELD[classifier.prediction_withheld]}: there is nothing to "
                             "score (fine-tune it first: hierattn train --start-from)")
        rows.append(result_row(classifier, evaluate_split(classifier, dataset, "test", seed).accuracy))
    return rows


def _minutes(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def markdown(dataset: str, rows: list[Row]) -> str:
    lines = [f"Test accuracy on `{dataset}` (our stratified 80/10/10 split, seed {SEED}).", "",
             "| model | checkpoint | test accuracy | training ms / document | total training time | epochs (run / "
             "allowed) "
             "| parameters | hardware |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in sorted(rows, key=lambda r: -r.test_accuracy):
        ms = "?" if r.train_ms_per_document is None else f"{r.train_ms_per_document:.2f}"
        lines.append(f"| {r.model} | `{r.checkpoint}` | {r.test_accuracy:.2%} | {ms} | "
                     f"{_minutes(r.total_training_seconds)} "
                     f"| {r.epochs_run or '—'} / {r.budget or '—'} | {r.num_parameters:,} | {r.hardware} |")
    return "\n".join(lines) + "\n"


def results_frame(rows: list[Row]):
    """The results table (best first) as a DataFrame, the columns of ``markdown``."""
    import pandas as pd

    return pd.DataFrame([{"model": r.model, "checkpoint": r.checkpoint, "test accuracy": r.test_accuracy,
                          "training ms / document": r.train_ms_per_document,
                          "total training time": _minutes(r.total_training_seconds),
                          "epochs (run / allowed)": f"{r.epochs_run or '—'} / {r.budget or '—'}",
                          "parameters": r.num_parameters, "hardware": r.hardware}
                         for r in sorted(rows, key=lambda r: -r.test_accuracy)])
