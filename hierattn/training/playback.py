"""Attention forming as a model trains: after each epoch, the run's own explanation of a few fixed
validation documents, kept so that the Train page (and the Tour) can play them back epoch by epoch.

What is recorded is what the app would show for that document had the run stopped there: the
model at that epoch explains the document exactly as ``analysis.explain`` explains a pasted one
(the same tokenisation, the same forward pass in eval mode), and the record keeps its prediction,
its target attention (word weights per sentence and sentence weights, heads averaged), how far the
word attention is from an even spread (the start sweep's JSD, each head on its own) and the first
self-attention matrix (heads averaged). The torch random state is put back after each
recording, so a run that records trains exactly as one that does not.

The documents are chosen before training from the validation split, which is in class order: one
document per class in turn, so a sample of four spans the classes, each of at least ``MIN_WORDS``
words (a two-word tweet shows nothing forming) and at most ``MAX_WORDS`` (the record stays small),
readable ones first.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import torch

from hierattn.checkpoint.format import PLAYBACK, PLAYBACK_MB

WATCHED = 4  # validation documents a run records
MIN_WORDS, MAX_WORDS = 8, 400
MAX_MATRIX = 60  # positions of the self-attention matrix kept a side
DIGITS = 5  # decimals kept of each weight


def watched_documents(texts: list[str], labels: list[int], count: int = WATCHED) -> list[int]:
    """Indices into ``texts`` of up to ``count`` documents: a class at a time in turn (the first
    suitable document of each class, then the second of each, ...), so the sample spans the classes
    whatever the split's order; within a class, readable ones first (``tour.rates.readable``: no web
    address or @handle, nothing garbled), as a class will see them."""
    from hierattn.analysis.tour.rates import readable

    by_class: dict[int, list[int]] = {}
    for i, (text, label) in enumerate(zip(texts, labels)):
        if MIN_WORDS <= len(text.split()) <= MAX_WORDS:
            by_class.setdefault(label, []).append(i)
    for label, found in by_class.items():  # documents to put before a class first (no web address, no @handle)
        by_class[label] = sorted(found, key=lambda i: not readable(texts[i]))
    out, depth = [], 0
    while len(out) < count and any(depth < len(v) for v in by_class.values()):
        for label in sorted(by_class):
            if depth < len(by_class[label]) and len(out) < count:
                out.append(by_class[label][depth])
        depth += 1
    return out


def _rounded(values):
    if isinstance(values, list):
        return [_rounded(v) for v in values]
    return round(float(values), DIGITS)


def snapshot(ex) -> dict:
    """What the playback shows of one explained document at one epoch (see the module doc)."""
    out = {"label": ex.label, "probabilities": _rounded(list(ex.probabilities))}
    from hierattn.analysis.battery import divergence_from_even

    words, sentences = ex.target_attention("word"), ex.target_attention("sentence")
    if words is not None:
        out["words"] = _rounded(words)
        # the sweep's sharpness, for this one document: each head's and sentence's word weights
        # against an even spread over the same words, averaged
        name = ex.target_name("word")
        if (ex.attentions[name].mask[0].sum(-1) >= 2).any():
            out["word_jsd"] = round(float(divergence_from_even(ex, name)), DIGITS)
    if sentences is not None:
        out["sentences"] = _rounded(sentences)
    if ex.self_attention_names:
        name = ex.self_attention_names[0]
        axes = ex.attentions[name].axes
        try:
            matrix = ex.self_attention(name, 0 if ("sentence" in axes or "layer" in axes) else None)
        except KeyError:
            matrix = None
        if matrix is not None:
            n = min(matrix.shape[0], MAX_MATRIX)
            out["self_attention"] = {"name": name, "matrix": _rounded(matrix[:n, :n].tolist())}
    return out


@dataclass
class Recorder:
    """Records the run's explanation of ``texts`` after each epoch (``__call__`` from the loop's
    ``measure``): ``documents`` (each one's text, true label and how the app draws it) and
    ``epochs`` (per epoch its validation accuracy, filled in by ``finish``, and a snapshot per document)."""

    texts: list[str]
    truths: list[str]
    classifier_of: object  # model -> a Classifier over it (the run's vocabulary, labels, text caps)
    documents: list[dict] = field(default_factory=list)
    epochs: list[dict] = field(default_factory=list)

    def __call__(self, model: torch.nn.Module) -> dict:
        """Record the model as it is now: the first call is the start (epoch 0), each later one an
        epoch's end. Returns nothing for the history row: the record is kept here."""
        from hierattn.analysis.explain import ExplainError, explain

        rng = torch.get_rng_state()
        was_training = model.training
        model.eval()
        try:
            classifier = self.classifier_of(model)
            shots = []
            for i, text in enumerate(self.texts):
                try:
                    ex = explain(classifier, text)
                except ExplainError:
                    shots.append(None)
                    continue
                if len(self.documents) <= i:
                    view = ex.text_view()
                    self.documents.append({"text": text, "truth": self.truths[i], "spans": view["spans"],
                                           "unknown": view["unknown"], "unread": view["unread"],
                                           "sentence_words": ex.sentence_words})
                shots.append(snapshot(ex))
            self.epochs.append({"epoch": len(self.epochs), "documents": shots})
        finally:
            model.train(was_training)
            torch.set_rng_state(rng)
        return {}

    def finish(self, history: list[dict], best_epoch: int | None = None) -> dict:
        """The record to write: the start, then each epoch's snapshots beside its row of the run's
        history (its validation accuracy), and which epoch's weights the checkpoint kept."""
        for row, epoch in zip(history, self.epochs[1:]):
            epoch.update({"epoch": row.get("epoch", epoch["epoch"]), "val_accuracy": row.get("val_accuracy")})
        return {"documents": self.documents, "epochs": self.epochs, "best_epoch": best_epoch}


def read(folder: str | Path) -> dict | None:
    """A checkpoint's (or a recorded run's) playback, or None where it has none, it is larger than
    ``PLAYBACK_MB`` or it is not a playback. Plain JSON, read as data, never run."""
    path = Path(folder)
    path = path / PLAYBACK if path.is_dir() else path
    try:
        if path.stat().st_size > PLAYBACK_MB * 2**20:
            return None
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or not record.get("epochs") or not record.get("documents"):
        return None
    return record
