"""Attribution methods beside attention, most computed by captum (Kokhlikyan et al. 2020), the
library captum, inseq and LIT users compare attention with. Each returns an ``Attribution``: one
score per word or per sentence of the document as the model reads it (reading order), signed where
the method is (above 0, the unit supports the class; below 0, it argues against it), and its cost in
forward passes. The sentences' Shapley values are in ``shapley``; every method, with what it needs
and costs, is one entry of ``attribution_methods.ATTRIBUTION_METHODS``.

- **Gradient × input** (Simonyan et al. 2014; Shrikumar et al. 2017): |(d logit / d embedding) .
  embedding| per word, one backward pass; unsigned. With ``jain_wallace``, the gradient Jain &
  Wallace (2019) rank attention against (the attention held constant, the probability differentiated).

- **Integrated Gradients** (Sundararajan et al. 2017) on the embedding layer: the model's logit of
  the class, integrated along the straight line from a baseline to the document's embeddings. The
  baseline is the document with every word's embedding replaced by that of a token that carries no
  word, special tokens and padding kept: "the words absent, the structure kept". For our word
  models that token is ``<unk>``, not the zero vector: a model that normalises its embeddings
  (HCAN, SANet, HA-LSTM) reads every nonzero multiple of a vector alike, so from zero the path
  jumps at its first step and no number of steps converges (measured on a bbc-news article:
  bbc-news-hcan's delta was 154% of the change from a zero baseline and 0.02% from ``<unk>``). For a
  transformer it is ``[PAD]``, as captum's BERT tutorial does. The scores sum to
  the logit's change from baseline to document up to the *convergence delta* (completeness); the
  delta is returned and shown, and it shrinks as ``steps`` grows. A word of several subword pieces
  gets its pieces' sum.
- **Occlusion** (feature ablation): each unit (a word, or a whole sentence) taken out of the input
  alone, the output's fall recorded. captum's ``FeatureAblation`` enumerates the units through a
  mask (one feature per word, or per sentence) over a keep-vector; taking a unit out closes its
  sentence up, as every removal in hierattn does (``eraser.keeping``), rather than putting a
  ``<pad>`` or ``<unk>`` where the model never saw one. Leave-one-out is word occlusion.

Nothing is attached to the model: the embedding is replaced per call through
``models.intervention.embedding_replaced`` (this thread's lookups only), gradients are taken of the
inputs alone (no parameter's ``.grad`` is touched), and captum's own text view (raw HTML
of the text) is never used: our escaped views draw the scores.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass

import torch

from hierattn.analysis.eraser import WORD_UNITS, keeping, output_distributions, unit_count
from hierattn.checkpoint.classifier import Classifier
from hierattn.data.batches import encode_documents
from hierattn.data.text import Document
from hierattn.models.intervention import (
    ObservedEmbedding,
    attention_override,
    embedding_lookups,
    embedding_replaced,
)

GRADIENT_X_INPUT = "gradient × input"
INTEGRATED_GRADIENTS = "integrated gradients"
OCCLUSION = "occlusion"
IG_STEPS = 32  # captum's Gauss-Legendre points; the delta says whether they were enough
IG_TOKENS_PER_PASS = 4096  # interpolated copies per forward pass: a long article runs a few at a time
PER_PASS = 64  # ablated documents per forward pass (``eraser.CHUNK``)


@dataclass
class Attribution:
    """One method's scores for one document and class."""

    method: str
    unit: str  # "word" or "sentence"
    scores: list[float]  # one per unit, reading order; > 0 supports the class
    label: int
    forward_passes: int  # documents the model read to compute them (the method's cost)
    seconds: float
    delta: float | None = None  # Integrated Gradients: sum(scores) - (F(document) - F(baseline)), logits
    change: float | None = None  # Integrated Gradients: F(document) - F(baseline), logits
    # occlusion: the softmax output with each unit taken out, (units, classes), from the same passes
    removed: torch.Tensor | None = None
    # sampled Shapley values: each unit's standard error (from the spread between independent draws);
    # None where the values are exact (every coalition enumerated)
    errors: list[float] | None = None
    draws: int = 0  # the independent draws the errors were measured between

    @property
    def exact(self) -> bool:
        return self.errors is None

    def margin(self, i: int) -> float:
        """Unit ``i``'s 95% margin of error: its standard error times Student's t quantile for the draws'
        degrees of freedom (with 4 draws, 3.18: the spread of a few draws is itself uncertain).
        0 for exact values."""
        if self.errors is None:
            return 0.0
        from scipy.stats import t

        return float(t.ppf(0.975, max(1, self.draws - 1))) * self.errors[i]

    def resolved(self, i: int) -> bool:
        """Whether unit ``i``'s value is known better than its distance to the nearest other value
        (its 95% margin): a value inside that margin of another says nothing of their order."""
        if self.errors is None or len(self.scores) < 2:
            return True
        gap = min(abs(self.scores[i] - v) for j, v in enumerate(self.scores) if j != i)
        return self.margin(i) <= gap

    @property
    def relative_delta(self) -> float | None:
        """|delta| / |change|: completeness holds to this share (under ~5%: enough steps)."""
        if self.delta is None or self.change is None:
            return None
        return abs(self.delta) / max(abs(self.change), 1e-6)


def supports_gradients(classifier: Classifier) -> bool:
    """The gradient methods (gradient × input, Integrated Gradients) need an embedding table looked
    up once per token (every built-in model but TF-IDF)."""
    return isinstance(getattr(classifier.model, "embedding", None), ObservedEmbedding)


def gradient_times_input(classifier: Classifier, document: Document, label: int,
                         jain_wallace: bool = False) -> Attribution | None:
    """|gradient . embedding| per word (reading order; one backward pass), or None for a model
    without an embedding table looked up once per word in reading order (TF-IDF). For a model of
    subword tokens, a word's is the absolute value of its pieces' summed gradient . embedding (the
    first-order change of the output when the whole word is taken away; special tokens get none).
    As an attribution beside attention (the ERASER curves), the gradient is of the label's logit
    and flows through everything, attention included. With ``jain_wallace``, as Jain & Wallace
    (2019, section 4.1) compute the gradient importance they rank attention against: the attention
    weights are held constant (detached at every attention site, so the gradient does not flow
    through the very weights it is compared with) and the label's probability (the softmax output)
    is differentiated."""
    if not supports_gradients(classifier):  # the loader makes every plain nn.Embedding an ObservedEmbedding
        return None
    start = time.perf_counter()
    batch = encode_documents([document], classifier.vocab).to(classifier.device)
    held = attention_override(lambda site, weights, mask: weights.detach(), in_order=False) if jain_wallace \
        else nullcontext()
    with embedding_lookups() as lookups, torch.enable_grad(), held:
        logits = classifier.model(batch, return_attentions=False).logits
        ids, vectors = lookups[0]
        target = torch.softmax(logits[0].float(), -1)[label] if jain_wallace else logits[0, label]
        # the gradient of the embedding lookups alone: no parameter's .grad is touched, so a
        # cached model shared by other sessions is left exactly as it was
        (grad,) = torch.autograd.grad(target, vectors)
    n = sum(len(s.tokens) for s in document.sentences)
    if batch.pieces is not None:  # subword tokens: a word's score is its pieces' summed gradient . embedding
        word = batch.pieces.word[0]
        signed = (grad * vectors).sum(-1)[0]
        scores = signed.new_zeros(n).index_add_(0, word[word >= 0], signed[word >= 0]).abs()
    else:
        scores = (grad * vectors).sum(-1).abs()[ids != 0]  # real words, row-major = reading order
        if len(scores) != n:
            return None
    return Attribution(GRADIENT_X_INPUT, WORD_UNITS, scores.detach().cpu().tolist(), label, 1,
                       time.perf_counter() - start)


def _attributed(lookup_ids: torch.Tensor, batch) -> torch.Tensor:
    """Which positions of an embedding lookup hold a word of the document (bool, the lookup's
    shape): a word model's non-padding ids; a transformer's pieces of words (not its specials)."""
    if batch.pieces is not None and batch.pieces.word.shape == lookup_ids.shape:
        return batch.pieces.word >= 0
    return lookup_ids != 0


def integrated_gradients(classifier: Classifier, document: Document, label: int,
                         steps: int = IG_STEPS) -> Attribution | None:
    """Integrated Gradients of the ``label`` logit per word (see the module doc); None for a model
    without an embedding table."""
    from captum.attr import IntegratedGradients

    if not supports_gradients(classifier):
        return None
    start = time.perf_counter()
    model, vocab, device = classifier.model, classifier.vocab, classifier.device
    batch = encode_documents([document], vocab).to(device)
    with embedding_lookups() as lookups, torch.no_grad():
        model(batch, return_attentions=False)
    ids, vectors = lookups[0]
    real = _attributed(ids, batch)
    inputs = vectors[real].unsqueeze(0).float()  # (1, tokens, d): the document's word tokens, reading order
    absent = vocab.pad_id if batch.pieces is not None else vocab.unk_id
    baseline = model.embedding.weight[absent].detach().float().expand_as(inputs)
    copies: dict[int, object] = {}

    def forward(x: torch.Tensor) -> torch.Tensor:  # (k, tokens, d) -> (k,) logits of the label
        k = x.shape[0]
        if k not in copies:
            copies[k] = encode_documents([document] * k, vocab).to(device)
        b = copies[k]

        def replace(lookup_ids, lookup_vectors):
            where = _attributed(lookup_ids, b)
            if int(where.sum()) * x.shape[-1] != x.numel():  # another lookup than the words'
                return lookup_vectors
            return lookup_vectors.masked_scatter(where.unsqueeze(-1), x.to(lookup_vectors.dtype))

        with embedding_replaced(replace):
            return model(b, return_attentions=False).logits[:, label].float()

    per_pass = max(1, min(steps, IG_TOKENS_PER_PASS // max(1, inputs.shape[1])))
    with torch.enable_grad():  # captum differentiates the inputs alone: no parameter's .grad is touched
        attributions, delta = IntegratedGradients(forward).attribute(
            inputs, baselines=baseline, n_steps=steps, internal_batch_size=per_pass, return_convergence_delta=True)
    with torch.no_grad():
        ends = forward(torch.cat([inputs, baseline]))
    per_token = attributions.sum(-1)[0].detach().cpu()
    words = unit_count(document, WORD_UNITS)
    if batch.pieces is not None:  # a word's pieces summed
        owner = batch.pieces.word[0][real[0]].cpu()
        scores = torch.zeros(words, dtype=per_token.dtype).index_add_(0, owner, per_token)
    elif len(per_token) == words:
        scores = per_token
    else:
        return None
    passes = steps + 2 + 1
    return Attribution(INTEGRATED_GRADIENTS, WORD_UNITS, scores.tolist(), label, passes,
                       time.perf_counter() - start, float(delta.sum()), float(ends[0] - ends[1]))


def removal_output(classifier: Classifier, document: Document, unit: str, positions: list[int],
                    output: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[torch.Tensor], torch.Tensor]:
    """captum's forward over a keep-vector: (k, len(positions)) of 1 (kept) and 0 (taken out) ->
    ``output`` of the softmax of each such document, (k,)."""
    everything = set(range(unit_count(document, unit)))

    def forward(keep: torch.Tensor) -> torch.Tensor:
        removed = [(row == 0).nonzero().flatten().tolist() for row in keep]
        documents = [keeping(document, unit, everything - {positions[j] for j in r}) for r in removed]
        distributions = output_distributions(classifier, documents)
        for r, distribution in zip(removed, distributions):
            if len(r) == 1:
                forward.alone[r[0]] = distribution
        return output(distributions)

    forward.alone = {}  # position index -> the output with that unit alone taken out
    return forward


def occlusion(classifier: Classifier, document: Document, label: int, unit: str = WORD_UNITS,
              positions: list[int] | None = None,
              output: Callable[[torch.Tensor], torch.Tensor] | None = None) -> Attribution:
    """Each unit at ``positions`` (default: every word, or every sentence) taken out alone:
    ``output`` (default P(label), from the softmax outputs) on the document minus on the document
    without it, through captum's ``FeatureAblation`` with one feature per unit."""
    from captum.attr import FeatureAblation

    start = time.perf_counter()
    positions = list(range(unit_count(document, unit))) if positions is None else list(positions)
    output = output or (lambda distributions: distributions[:, label])
    keep = torch.ones(1, len(positions))
    if not positions:
        return Attribution(OCCLUSION, unit, [], label, 0, 0.0)
    forward = removal_output(classifier, document, unit, positions, output)
    scores = FeatureAblation(forward).attribute(keep, baselines=0.0, perturbations_per_eval=PER_PASS)
    removed = torch.stack([forward.alone[j] for j in range(len(positions))])
    return Attribution(OCCLUSION, unit, scores[0].tolist(), label, len(positions) + 1, time.perf_counter() - start,
                       removed=removed)


def leave_one_out(classifier: Classifier, document: Document, label: int,
                  positions: list[int] | None = None) -> Attribution:
    """The fall in P(label) when each word at ``positions`` (default every one) alone is taken out:
    word occlusion, one forward pass per word and one on the whole document."""
    return occlusion(classifier, document, label, WORD_UNITS, positions)


def by_sentence(word_scores: list[float], document: Document) -> list[float]:
    """Per-word scores summed per sentence (an attribution's sentence importance)."""
    out, i = [], 0
    for sentence in document.sentences:
        out.append(sum(word_scores[i: i + len(sentence.tokens)]))
        i += len(sentence.tokens)
    return out
