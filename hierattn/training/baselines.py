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


def judge(accuracy: float, recorded: dict, part: str, documents: int | None) -> tuple[str, str]:
    """("beats" | "within noise" | "below" | "unknown", a sentence) for ``accuracy`` on ``documents``
    documents of ``part`` against the best recorded baseline there.

    A split of 98 documents measures an accuracy to about +-9 points, so "67.3% against 65.3%" is no
    win. The model's accuracy gets its 95% Wilson interval (the baseline's figure is taken as fixed:
    their predictions are not recorded, so the comparison cannot be paired): above the interval's
    upper end the model is below the baseline, under its lower end it beats it, else within noise."""
    scores = {name: (recorded or {}).get(name, {}).get(f"{part}_accuracy") for name in (LARGEST, TFIDF)}
    scores = {name: v for name, v in scores.items() if v is not None}
    if not scores:
        return "unknown", ""
    name = max(scores, key=scores.get)
    best = scores[name]
    label = f"always answering '{recorded[LARGEST]['label']}'" if name == LARGEST else name
    if not documents:
        kind = "beats" if accuracy > best + 1e-9 else "below"
        return kind, f"{accuracy:.1%} against {label}'s {best:.1%} on {part}"
    low, high = wilson(accuracy, documents)
    kind = "beats" if low > best else "below" if high < best else "within noise"
    words = {"beats": "beats", "below": "is below", "within noise": "is within noise of"}[kind]
    return kind, (f"on {documents:,} {part} documents it {words} {label} ({accuracy:.1%}, 95% interval "
                  f"{low:.1%}-{high:.1%}, against {best:.1%})")


def wilson(accuracy: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion measured on ``n`` documents."""
    centre = (accuracy + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((accuracy * (1 - accuracy) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


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
