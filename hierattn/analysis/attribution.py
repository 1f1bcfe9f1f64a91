"""Attribution methods beside attention, computed by captum (Kokhlikyan et al. 2020), the library
captum, inseq and LIT users compare attention with. Each gives one signed score per word or per
sentence of the document as the model reads it (reading order): above 0, the unit supports the
class; below 0, it argues against it.

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
- **Shapley values of the sentences** (Lundberg & Lee 2017's KernelSHAP at the sentence level):
  each sentence's Shapley value for P(class), the game's players the sentences, a coalition the
  document keeping a subset of them (one forward pass each). Up to ``EXACT_SENTENCES`` sentences
  every coalition is enumerated (2^7 = 128 passes) and the values are exact: KernelSHAP with every
  coalition is the Shapley value, so there is nothing to estimate. Beyond that, captum's KernelSHAP
  samples coalitions in complementary pairs (a coalition and the rest of the document: the paired
  sampling of Covert & Lee 2021, which cancels much of the estimator's variance), in independent
  draws of ``SHAP_DRAW`` coalitions, until the standard error of their mean, measured from the
  spread between draws, is below ``SHAP_ERROR`` or ``SHAP_MAX_PASSES`` are spent; the values carry
  that error. 128 coalitions, one draw, the old default, left the top sentence wrong on 2-3 of 12
  tweets of 3-4 sentences, where only 8-16 coalitions exist. Word-level SHAP would need thousands
  of passes on an article: not offered.

Nothing is attached to the model: the embedding is replaced per call through
``models.intervention.embedding_replaced`` (this thread's lookups only), gradients are taken of the
inputs alone (no parameter's ``.grad`` is touched), and captum's own text view (raw HTML
of the text) is never used: our escaped views draw the scores.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from hierattn.analysis.eraser import SENTENCE_UNITS, WORD_UNITS, keeping, output_distributions, unit_count
from hierattn.checkpoint.classifier import Classifier
from hierattn.data.batches import encode_documents
from hierattn.data.text import Document
from hierattn.models.intervention import ObservedEmbedding, embedding_lookups, embedding_replaced

INTEGRATED_GRADIENTS = "integrated gradients"
OCCLUSION = "occlusion"
SHAP = "KernelSHAP"
IG_STEPS = 32  # captum's Gauss-Legendre points; the delta says whether they were enough
IG_TOKENS_PER_PASS = 4096  # interpolated copies per forward pass: a long article runs a few at a time
EXACT_SENTENCES = 7  # up to 2^7 = 128 coalitions: enumerate them all, the Shapley values exactly
SHAP_DRAW = 128  # coalitions a sampled draw (one forward pass each), in complementary pairs
SHAP_MIN_DRAWS = 4  # independent draws at least: their spread measures the error (2 leave it one degree of freedom)
SHAP_ERROR = 0.005  # sample until the values' standard error is below this (half a probability point) ...
SHAP_MAX_PASSES = 512  # ... or this many coalitions are spent (4 draws: what Explore waits for)
SHAP_SAMPLES = SHAP_DRAW  # the cost of one draw, for the pages' descriptions
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
    """Integrated Gradients needs an embedding table looked up once per token (every built-in model
    but TF-IDF)."""
    return isinstance(getattr(classifier.model, "embedding", None), ObservedEmbedding)


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


def _removal_output(classifier: Classifier, document: Document, unit: str, positions: list[int],
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
    forward = _removal_output(classifier, document, unit, positions, output)
    scores = FeatureAblation(forward).attribute(keep, baselines=0.0, perturbations_per_eval=PER_PASS)
    removed = torch.stack([forward.alone[j] for j in range(len(positions))])
    return Attribution(OCCLUSION, unit, scores[0].tolist(), label, len(positions) + 1, time.perf_counter() - start,
                       removed=removed)


def exact_shapley(values: torch.Tensor, players: int) -> list[float]:
    """The Shapley value of each player from ``values``, the game's value of every coalition indexed
    by its bitmask (bit i set: player i in; 2^players entries): phi_i = sum over coalitions S without
    i of |S|! (n - |S| - 1)! / n! (v(S + i) - v(S))."""
    n = players
    masks = torch.arange(2 ** n)
    sizes = torch.tensor([bin(m).count("1") for m in range(2 ** n)])
    weights = torch.tensor([math.factorial(k) * math.factorial(n - k - 1) / math.factorial(n) if k < n else 0.0
                            for k in range(n + 1)], dtype=torch.float64)
    values = values.to(torch.float64)
    out = []
    for i in range(n):
        without = masks[(masks >> i) & 1 == 0]
        out.append(float((weights[sizes[without]] * (values[without | (1 << i)] - values[without])).sum()))
    return out


def sentence_shap(classifier: Classifier, document: Document, label: int, samples: int | None = None,
                  seed: int = 0, max_passes: int = SHAP_MAX_PASSES, target_error: float = SHAP_ERROR
                  ) -> Attribution | None:
    """The sentences' Shapley values for P(label) (see the module doc): exact up to
    ``EXACT_SENTENCES`` sentences, else KernelSHAP in draws of ``samples`` (default ``SHAP_DRAW``)
    coalitions until the standard error is below ``target_error`` or ``max_passes`` are spent (at
    least ``SHAP_MIN_DRAWS`` draws, to measure it). ``samples`` given forces sampling at any length. None for a
    document of one sentence (nothing to share out). Seeded: the same document gets the same values."""
    sentences = unit_count(document, SENTENCE_UNITS)
    if sentences < 2:
        return None
    start = time.perf_counter()
    forward = _removal_output(classifier, document, SENTENCE_UNITS, list(range(sentences)),
                              lambda distributions: distributions[:, label])
    if samples is None and sentences <= EXACT_SENTENCES:
        masks = torch.arange(2 ** sentences)
        keep = ((masks[:, None] >> torch.arange(sentences)[None, :]) & 1).float()  # (2^n, n), bit i: sentence i kept
        values = torch.cat([forward(keep[i: i + PER_PASS]) for i in range(0, len(keep), PER_PASS)])
        return Attribution(SHAP, SENTENCE_UNITS, exact_shapley(values, sentences), label, len(keep),
                           time.perf_counter() - start)
    per_draw = samples or SHAP_DRAW
    draws = []
    while len(draws) < SHAP_MIN_DRAWS or (len(draws) + 1) * per_draw <= max_passes:
        draws.append(_kernel_shap_draw(forward, sentences, per_draw, seed + len(draws)))
        if len(draws) >= SHAP_MIN_DRAWS and _standard_errors(draws).max() <= target_error:
            break
    stacked = torch.tensor(draws, dtype=torch.float64)
    return Attribution(SHAP, SENTENCE_UNITS, stacked.mean(0).tolist(), label, len(draws) * per_draw,
                       time.perf_counter() - start, errors=_standard_errors(draws).tolist(), draws=len(draws))


def _standard_errors(draws: list[list[float]]) -> torch.Tensor:
    """Each unit's standard error of the mean over independent draws: their standard deviation / sqrt(draws)."""
    stacked = torch.tensor(draws, dtype=torch.float64)
    return stacked.std(0, unbiased=True) / math.sqrt(len(draws))


def _kernel_shap_draw(forward, sentences: int, samples: int, seed: int) -> list[float]:
    """One KernelSHAP estimate from ``samples`` coalitions (captum's), drawn in complementary pairs."""
    from captum.attr import KernelShap

    class PairedKernelShap(KernelShap):
        """captum's KernelSHAP drawing its coalitions from a generator of its own (its default draws
        from torch's global one, which every thread of the server shares: another session's draws
        would change these values, and a reseed here would change theirs), each coalition followed
        by its complement."""

        generator = torch.Generator().manual_seed(seed)

        def kernel_shap_perturb_generator(self, original_inp, **kwargs):  # captum's sampling, seeded and paired
            features = int(kwargs["num_interp_features"])
            sizes = kwargs["num_select_distribution"].probs
            yield torch.ones(1, features, dtype=torch.long)
            yield torch.zeros(1, features, dtype=torch.long)
            while True:
                chosen = int(torch.multinomial(sizes, 1, generator=self.generator))
                values = torch.randn(1, features, generator=self.generator)
                threshold = torch.kthvalue(values, features - chosen).values.item()
                coalition = (values > threshold).long()
                yield coalition
                yield 1 - coalition

    scores = PairedKernelShap(forward).attribute(torch.ones(1, sentences), baselines=0.0, n_samples=samples,
                                                 perturbations_per_eval=PER_PASS)
    return scores[0].tolist()


def by_sentence(word_scores: list[float], document: Document) -> list[float]:
    """Per-word scores summed per sentence (an attribution's sentence importance)."""
    out, i = [], 0
    for sentence in document.sentences:
        out.append(sum(word_scores[i: i + len(sentence.tokens)]))
        i += len(sentence.tokens)
    return out


def sentence_table(classifier: Classifier, ex, progress=None) -> dict:
    """Explore's sentence attributions for an explained document: one row per sentence (its
    opening, its share of the attention, its occlusion and KernelSHAP for the predicted class, in
    probability points) and a caption with their agreement and cost. ``ex``: an ``Explanation``.
    ``progress(done, 2)`` after occlusion and after the Shapley values: where the app stops it."""
    from hierattn.analysis.compare import importance, spearman

    label = ex.labels.index(ex.label)
    occluded = occlusion(classifier, ex.document, label, SENTENCE_UNITS)
    if progress:
        progress(1, 2)
    shap = sentence_shap(classifier, ex.document, label)
    if progress:
        progress(2, 2)
    shares = importance(ex)
    attention = list(shares.sentences.values()) if shares is not None else None
    if attention is not None and len(attention) != len(ex.document.sentences):
        attention = None
    shap_column = "Shapley value (points)" if shap.exact else "KernelSHAP (points)"
    rows = []
    for i, sentence in enumerate(ex.document.sentences):
        opening = " ".join(t.text for t in sentence.tokens[:6]) + (" …" if len(sentence.tokens) > 6 else "")
        row = {"sentence": f"S{i + 1}: {opening}",
               "attention (%)": None if attention is None else round(100 * attention[i], 1),
               "occlusion (points)": round(100 * occluded.scores[i], 1),
               shap_column: round(100 * shap.scores[i], 1) if shap.resolved(i) else None}
        if not shap.exact:
            row["± (points, 95%)"] = round(100 * shap.margin(i), 1)
        rows.append(row)
    parts = []
    if attention is not None:
        for name, method in (("occlusion", occluded), ("the Shapley values", shap)):
            rho = spearman(attention, method.scores)
            parts.append(f"Spearman ρ of the attention with {name}: " + ("n/a" if rho is None else f"{rho:+.2f}"))
    source = f"Attention: {shares.source}." if shares is not None else "No attention over the sentences."
    if shap.exact:
        how = (f"the Shapley values are exact: all {shap.forward_passes} subsets of the {len(shap.scores)} sentences "
               f"were read ({shap.seconds:.1f} s)")
    else:
        hidden = sum(not shap.resolved(i) for i in range(len(shap.scores)))
        how = (f"KernelSHAP estimated the Shapley values from {shap.forward_passes} subsets of the "
               f"{len(shap.scores)} sentences ({shap.seconds:.1f} s); each carries its error, measured between "
               "independent draws" + (f", and the {hidden} whose error exceeds their distance to the nearest other "
                                      "value are left blank: their order is not known" if hidden else ""))
    cost = (f"Occlusion read {occluded.forward_passes} documents ({occluded.seconds:.1f} s); {how}. The values add up "
            f"to the probability's change from no sentence to all ({100 * sum(shap.scores):+.1f} points here).")
    probability = ex.probabilities[label]
    saturated = (f"P({ex.label}) is {probability:.4f}: taking out one sentence barely moves a prediction this "
                 "sure, so occlusion is near 0 for every sentence; the Shapley values, which take out many at once, "
                 "still tell them apart." if probability > 0.999 else "")
    return {"rows": rows, "caption": " ".join([source, *(p + "." for p in parts), cost, saturated]).strip()}
