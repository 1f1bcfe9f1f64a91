"""What a trained model's accuracy must beat, on the same split: always answering the largest
class of the training split, and TF-IDF (1-2 grams) with multinomial Naive Bayes fitted on the
training split (the cheaper of the papers' two TF-IDF baselines: seconds on 30,000 tweets).

``baselines`` is recorded in a checkpoint's ``metrics.json`` when it is trained (the Train page
and the command line); the Train and Evaluation pages show each accuracy beside them."""
from __future__ import annotations

from collections import Counter

import torch

from hierattn.data.batches import bucketed_batches
from hierattn.data.text import Document

LARGEST, TFIDF = "always the largest class", "TF-IDF + Naive Bayes"


def baselines(train: tuple[list[Document], list[int]], parts: dict[str, tuple[list[Document], list[int]]],
              label_names: list[str], seed: int = 1234) -> dict:
    """{baseline: {"label"?, "<part>_accuracy": ...}} for each part (``validation``, ``test``)."""
    docs, labels = train
    largest = Counter(labels).most_common(1)[0][0]
    out = {LARGEST: {"label": label_names[largest],
                     **{f"{name}_accuracy": _share(y, largest) for name, (_, y) in parts.items()}}}
    try:
        from hierattn.models.tfidf import fit_tfidf

        model, vocab = fit_tfidf(docs, labels, len(label_names), "nb", seed)
    except ValueError:  # e.g. no term frequent enough to keep (a tiny data set): no TF-IDF baseline
        return out
    out[TFIDF] = {f"{name}_accuracy": _accuracy(model, vocab, d, y) for name, (d, y) in parts.items()}
    return out


def _share(labels: list[int], label: int) -> float:
    return sum(y == label for y in labels) / max(len(labels), 1)


@torch.no_grad()
def _accuracy(model, vocab, documents: list[Document], labels: list[int]) -> float:
    correct = 0
    for batch in bucketed_batches(documents, labels, vocab, 256, shuffle=False):
        correct += int((model(batch, return_attentions=False).logits.argmax(-1) == batch.labels).sum())
    return correct / max(len(labels), 1)


def beats(accuracy: float, recorded: dict, part: str = "test") -> bool | None:
    """Whether ``accuracy`` is above always answering the largest class on ``part`` (None when
    that was not recorded)."""
    largest = (recorded or {}).get(LARGEST, {}).get(f"{part}_accuracy")
    return None if largest is None else accuracy > largest + 1e-9


def sentence(accuracy: float, recorded: dict, part: str = "test") -> str:
    """``accuracy`` beside the recorded baselines, in words ('' when none were recorded)."""
    largest = (recorded or {}).get(LARGEST)
    if not largest or f"{part}_accuracy" not in largest:
        return ""
    text = f"always answering '{largest['label']}' scores {largest[f'{part}_accuracy']:.1%}"
    tfidf = (recorded or {}).get(TFIDF, {}).get(f"{part}_accuracy")
    if tfidf is not None:
        text += f", {TFIDF} {tfidf:.1%}"
    return text
