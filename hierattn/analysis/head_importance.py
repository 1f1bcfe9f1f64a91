"""Which heads matter for the prediction (Michel et al. 2019, "Are sixteen heads really better than
one?"; Voita et al. 2019): per head, the drop in the predicted class's probability when that head's
attention alone is replaced by an even spread over its real keys, every other head as trained.

Readings, where the papers leave room:
- **The intervention.** Michel et al. mask a head's output (its context vector times 0). An even
  spread keeps the head's value path and takes away only where it looks, which is what an attention
  map shows; it is the Wiegreffe & Pinter "uniform at inference" test one head at a time, on the
  intervention machinery the faithfulness battery uses (``models.intervention``). A head whose
  value projection writes nothing (an idle head) moves nothing either way.
- **The figure.** The drop in P(predicted class) as the model sees the document, in probability
  points (positive: the prediction weakens); per document, and over a split as the mean drop with a
  95% bootstrap interval over documents (``ROUNDS`` resamples, seeded). A head "matters" over a
  split when its interval's lower end is above ``MATTERS`` (one point): a head whose removal moves
  a confident prediction by less than a point is not needed for it.
- **Which heads.** Every site whose weights carry a head axis (four dimensions, heads second): a
  transformer's token self-attention per layer (site ``subword.self``, called once per layer in
  order, so the call's count is the layer), HCAN's target and self-attention heads per branch. HAN's
  single attention has no heads, and is not listed.

All heads of a document are measured in batched passes: the document copied once per head, each copy
with its own head made even (``HeadSite``), in chunks whose attention fits one explanation's budget.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

import torch

from hierattn.checkpoint.classifier import Classifier
from hierattn.data.batches import encode_documents
from hierattn.data.text import Document
from hierattn.limits import EXPLANATION_CELLS
from hierattn.models.intervention import attention_override

ROUNDS = 2_000  # bootstrap resamples of the documents for a split's interval
MATTERS = 0.01  # a head matters over a split when its drop's interval lies above this (one point)


@dataclass(frozen=True)
class HeadSite:
    """One head: its attention site (``"subword.self"``, ``"word.self.a"``), the site's call within a
    forward pass (a transformer's layer; 0 where a site is called once) and its index."""

    site: str
    layer: int
    head: int

    @property
    def name(self) -> str:
        return f"{self.site} · layer {self.layer + 1} · head {self.head + 1}"


def _batch(classifier: Classifier, documents: list[Document]):
    return encode_documents(documents, classifier.vocab).to(classifier.device)


@torch.inference_mode()
def heads_of(classifier: Classifier, document: Document) -> list[HeadSite]:
    """Every head whose attention the model computes for ``document``, in the order of the pass."""
    found: list[HeadSite] = []
    calls: dict[str, int] = {}

    def record(site, weights, mask):
        layer = calls.get(site, 0)
        calls[site] = layer + 1
        if weights.dim() == 4:
            found.extend(HeadSite(site, layer, h) for h in range(weights.shape[1]))
        return weights

    with attention_override(record):
        classifier.model(_batch(classifier, [document]), return_attentions=False)
    return found


def _even_per_copy(heads: list[HeadSite | None]):
    """An override for ``len(heads)`` copies of one document: copy c has ``heads[c]`` made even
    (None: the model as trained). A site's first axis holds the copies one after another."""
    calls: dict[str, int] = {}

    def fn(site, weights, mask):
        layer = calls.get(site, 0)
        calls[site] = layer + 1
        hit = [(c, h.head) for c, h in enumerate(heads) if h is not None and h.site == site and h.layer == layer]
        if not hit or weights.dim() != 4:
            return weights
        rows = weights.shape[0] // len(heads)
        out = weights.clone()
        for c, head in hit:
            real = mask[c * rows:(c + 1) * rows, head].to(weights.dtype)
            out[c * rows:(c + 1) * rows, head] = real / real.sum(-1, keepdim=True).clamp_min(1)
        return out

    return fn


@torch.inference_mode()
def document_drops(classifier: Classifier, document: Document,
                   progress: Callable[[int, int], None] | None = None) -> dict[HeadSite, float]:
    """Per head, P(predicted) as trained less P(predicted) with that head's attention even."""
    heads = heads_of(classifier, document)
    if not heads:
        return {}
    with attention_override(_even_per_copy([None])):  # in order, as the interventions run
        probabilities = torch.softmax(classifier.model(_batch(classifier, [document]),
                                                       return_attentions=False).logits.float(), -1)[0]
    predicted = int(probabilities.argmax())
    tokens = max(1, document.num_tokens + 2)
    per_copy = len(heads) // max(1, len({(h.site, h.layer) for h in heads})) * tokens ** 2  # one site's cells
    chunk = max(1, min(len(heads), int(EXPLANATION_CELLS.value) // max(1, per_copy)))
    drops: dict[HeadSite, float] = {}
    for first in range(0, len(heads), chunk):
        part = heads[first:first + chunk]
        with attention_override(_even_per_copy(part)):
            logits = classifier.model(_batch(classifier, [document] * len(part)), return_attentions=False).logits
        changed = torch.softmax(logits.float(), -1)[:, predicted]
        drops.update({h: float(probabilities[predicted] - p) for h, p in zip(part, changed.tolist())})
        if progress:
            progress(first + len(part), len(heads))
    return drops


@dataclass
class SplitDrop:
    """One head over a split: its mean drop, the 95% bootstrap interval, and the documents."""

    head: HeadSite
    mean: float
    low: float
    high: float
    documents: int

    @property
    def matters(self) -> bool:
        return self.low > MATTERS


def split_drops(classifier: Classifier, documents: list[Document], seed: int = 0,
                progress: Callable[[int, int], None] | None = None) -> list[SplitDrop]:
    """Every head's drop over ``documents`` (each measured as ``document_drops``), with its interval."""
    per_document: list[dict[HeadSite, float]] = []
    for k, document in enumerate(documents):
        per_document.append(document_drops(classifier, document))
        if progress:
            progress(k + 1, len(documents))
    heads = list(dict.fromkeys(h for drops in per_document for h in drops))
    rng = random.Random(seed)
    out = []
    for head in heads:
        values = [drops[head] for drops in per_document if head in drops]
        means = sorted(sum(rng.choices(values, k=len(values))) / len(values) for _ in range(ROUNDS))
        out.append(SplitDrop(head, sum(values) / len(values), means[int(0.025 * ROUNDS)],
                             means[int(0.975 * ROUNDS) - 1], len(values)))
    return out
