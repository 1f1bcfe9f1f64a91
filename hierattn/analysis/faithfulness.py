"""Is the attention faithful? Erasure curves and agreement with the attribution methods.

For one document and one model: rank the words several ways, remove the top k (k = 1..K) and watch
the probability of the class the model predicted on the whole document fall.

- ``attention``: the word importance of ``compare.importance`` (word x sentence target attention
  for HAN and HCAN; the attention a word receives for models with only self-attention, a proxy);
- every attribution method over words of ``attribution_methods.ATTRIBUTION_METHODS``: ``gradient ×
  input`` (|(d logit / d embedding) . embedding| per word, the logit of the predicted class, one
  backward pass), ``integrated gradients`` (of the label's logit on the embedding layer, per word,
  signed: captum, with its convergence delta) and ``leave-one-out`` (the drop in that probability
  when the word alone is removed: word occlusion, captum's ``FeatureAblation``);
- ``sentence attention × even words``: each word scored alpha_s / n_s, its sentence's attention
  spread evenly over the sentence's words, ties broken at random: the null of a hierarchical
  model's word attention, which keeps the model's own sentence weights (1 / sentence length, the
  product when both levels are even, keeps neither level and so cannot show that the word weights
  add anything beyond the sentence weights). Hierarchical models with sentence attention, on
  documents of two or more sentences; a flat model has no such structure and gets no such curve;
- ``random``: the mean over several random orders, the baseline every method should beat.

Removing a word takes its token out of the model's input (its sentence closes up; a sentence
left empty disappears), rather than replacing it with ``<unk>``: the model never saw ``<unk>`` in
that place, and a removal is what the reader of a heatmap imagines. The area under the curve is
the mean drop over k = 1..K, in probability points; larger means the ranking found the words the
prediction depends on. Agreement is the Spearman correlation between the attention ranking and
each attribution ranking over the document's words.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from hierattn.analysis.attribution import supports_gradients
from hierattn.analysis.attribution_methods import methods_of
from hierattn.analysis.compare import importance, spearman
from hierattn.analysis.eraser import WORD_UNITS, output_distributions
from hierattn.analysis.explain import Explanation
from hierattn.checkpoint.classifier import Classifier
from hierattn.data.text import Document, Sentence

STRUCTURAL = "sentence attention × even words"  # the two-level ranking with the word level spread evenly
WORD_METHODS = methods_of(WORD_UNITS)  # the attribution methods the attention's word ranking is compared with
ATTRIBUTIONS = tuple(m.name for m in WORD_METHODS)
METHODS = ("attention", *ATTRIBUTIONS, STRUCTURAL, "random")
MAX_K = 20
RANDOM_DRAWS = 5
MIN_WORDS = 4  # a split's documents shorter than this are left out of its mean curves


def interactive_methods(words: int) -> tuple[str, ...]:
    """The methods worth waiting for on a document of ``words`` words: every one but the attribution
    methods a page waits for only up to a shorter length (``AttributionMethod.most_units``)."""
    slow = {m.name for m in WORD_METHODS if m.most_units is not None and words > m.most_units}
    return tuple(m for m in METHODS if m not in slow)


@dataclass
class ErasureCurves:
    """Drops in the predicted class's probability after removing the top k words of each ranking."""

    label: str
    probability: float  # of ``label`` on the whole document
    ks: list[int]  # 1..K
    drops: dict[str, list[float]]  # method -> drop at each k (probability points, 0..1)
    scores: dict[str, list[float]] = field(default_factory=dict)  # method -> per-word score, reading order
    agreement: dict[str, float | None] = field(default_factory=dict)  # attribution method -> Spearman with attention
    convergence: float | None = None  # Integrated Gradients' |delta| / |change| (completeness, under ~5%: converged)

    @property
    def auc(self) -> dict[str, float]:
        """Mean drop over k = 1..K for each method."""
        return {m: sum(d) / len(d) if d else 0.0 for m, d in self.drops.items()}

    def verdicts(self) -> list[str]:
        """One line per method, from the numbers: its area and how it compares with random."""
        auc, base = self.auc, self.auc.get("random", 0.0)
        lines = []
        for method in (m for m in METHODS if m in auc):
            which = "random words" if method == "random" else "its top words"
            line = (f"{method}: removing {which} ({self.ks[0]} to {self.ks[-1]}) lowers P({self.label}) by "
                    f"{100 * auc[method]:.1f} points on average")
            if method != "random":
                gap = auc[method] - base
                line += (f", {100 * gap:.1f} points more than random" if gap > 0.005 else
                         f", no more than random ({100 * gap:+.1f} points)")
            if method == "attention" and STRUCTURAL in auc:
                gap = auc[method] - auc[STRUCTURAL]
                line += (f", {100 * gap:.1f} more than {STRUCTURAL}" if gap > 0.005 else
                         f", no more than {STRUCTURAL} ({100 * gap:+.1f})")
            lines.append(line + ".")
        return lines


def sentence_even_weights(ex) -> list[float] | None:
    """Each word's alpha_s / n_s: the model's own sentence attention times an even spread over the
    sentence's n_s words. The null of a hierarchical model's word attention: it keeps everything the
    word level is not (the sentence weights, which 1 / sentence length throws away), so a word
    ranking that beats it shows what the word weights add. None for a model without sentence
    attention over a hierarchical word attention (a flat model: no structure to keep), or a
    document of one sentence (where it is a constant)."""
    word_map, sentence_map = ex.target_name("word"), ex.target_name("sentence")
    if word_map is None or sentence_map is None or "sentence" not in ex.attentions[word_map].axes:
        return None
    if len(ex.document.sentences) < 2:
        return None
    alpha = list(ex.target_attention("sentence"))
    return [float(alpha[i]) / len(s.tokens) for i, s in enumerate(ex.document.sentences) for _ in s.tokens]


def sentence_even_scores(ex, seed: int = 0) -> list[float] | None:
    """``sentence_even_weights`` with ties within a sentence broken at random (a jitter far below
    any gap between sentences), for rankings that need an order."""
    weights = sentence_even_weights(ex)
    if weights is None:
        return None
    rng = random.Random(seed)
    scale = 1e-7 * min(w for w in weights if w > 0) if any(w > 0 for w in weights) else 1e-12
    return [w + scale * rng.random() for w in weights]


def _words(document: Document) -> list[tuple[int, int]]:
    """(sentence, token) of every word the model reads, in reading order."""
    return [(s, t) for s, sentence in enumerate(document.sentences) for t in range(len(sentence.tokens))]


def without(document: Document, removed: set[int]) -> Document:
    """``document`` with the words at these reading-order positions taken out."""
    sentences, i, gone = [], 0, []
    for s in document.sentences:
        kept = tuple(t for j, t in enumerate(s.tokens) if i + j not in removed)
        gone += [(t.start, t.end) for j, t in enumerate(s.tokens) if i + j in removed] if kept else [(s.start, s.end)]
        i += len(s.tokens)
        if kept:
            sentences.append(Sentence(kept, s.start, s.end))
    return Document(document.text, sentences, document.truncation, document.skipped).skipping(gone)


def probabilities(classifier: Classifier, documents: list[Document], label: int) -> list[float]:
    """P(label) for each document, batched as ``eraser.output_distributions`` batches them. A
    document with no word left gives the model nothing to read: its output is the bias's."""
    return output_distributions(classifier, documents)[:, label].tolist()


def by_sentence(scores: list[float], document: Document) -> list[list[float]]:
    """Per-word scores (reading order) regrouped by sentence, for shading the document view.
    Negative scores (a leave-one-out removal that raised the probability: the word argued
    against the predicted class) shade as zero, since the view shows what supports it."""
    grouped, i = [], 0
    for sentence in document.sentences:
        grouped.append([max(0.0, v) for v in scores[i: i + len(sentence.tokens)]])
        i += len(sentence.tokens)
    return grouped


def _top(scores: list[float], k: int) -> set[int]:
    return set(sorted(range(len(scores)), key=lambda i: -scores[i])[:k])


def removal_steps(n: int, steps: int = MAX_K, fractions: bool | None = None) -> list[int]:
    """How many words to remove at each point of the curve, for a document of ``n`` words: 1, 2,
    ..., ``steps`` for a short document; for a long one (more than 4 x ``steps`` words, or when
    ``fractions``), 1/40, 2/40, ..., 20/40 of its words, because 20 words of a 1,000-word article
    tell little. ``fractions=False`` forces single words."""
    if fractions is None:
        fractions = n > 4 * steps
    if not fractions:
        return list(range(1, min(steps, n) + 1))
    return [max(1, round(n * j / (2 * steps))) for j in range(1, steps + 1)]


def erasure_curves(classifier: Classifier, ex: Explanation, max_k: int = MAX_K, draws: int = RANDOM_DRAWS,
                   seed: int = 0, fractions: bool | None = None, methods=METHODS,
                   progress=None) -> ErasureCurves:
    """The erasure curves of one explained document (``explain(classifier, text)``). ``max_k``: the
    number of points; ``fractions``: see ``removal_steps``; ``methods``: leave out
    ``"leave-one-out"`` to save its one forward pass per word on long documents
    (``interactive_methods``). ``progress(done, total)`` is called after each step (each ranking,
    each curve): the app stops there when no tab waits any more."""
    steps = [0, 2 * len(methods) + 1]  # at most: each method's ranking and its curve, and the random one

    def step() -> None:
        steps[0] = min(steps[0] + 1, steps[1])
        if progress:
            progress(*steps)

    document = ex.document
    n = len(_words(document))
    label = max(range(len(ex.probabilities)), key=ex.probabilities.__getitem__)
    base = ex.probabilities[label]
    ks = removal_steps(n, max_k, fractions)
    scores: dict[str, list[float]] = {}
    imp = importance(ex) if "attention" in methods else None
    if imp is not None:
        scores["attention"] = list(imp.words.values())
    step()
    convergence = None
    for method in WORD_METHODS:
        if method.name not in methods:
            continue
        found = None if method.gradients and not supports_gradients(classifier) else \
            method.attribute(classifier, document, label)
        if found is not None:
            scores[method.name] = found.scores
            if found.relative_delta is not None:  # Integrated Gradients' completeness
                convergence = found.relative_delta
        step()
    structural = sentence_even_scores(ex, seed) if STRUCTURAL in methods else None
    if structural is not None:
        scores[STRUCTURAL] = structural
    drops = {}
    for method, s in scores.items():
        ranked = sorted(range(n), key=lambda i: -s[i])
        probs = probabilities(classifier, [without(document, set(ranked[:k])) for k in ks], label)
        drops[method] = [base - p for p in probs]
        step()
    rng = random.Random(seed)
    random_docs = []
    for _ in range(draws):
        order = rng.sample(range(n), n)
        random_docs += [without(document, set(order[:k])) for k in ks]
    probs = probabilities(classifier, random_docs, label)
    drops["random"] = [base - sum(probs[d * len(ks) + j] for d in range(draws)) / draws for j in range(len(ks))]
    agreement = {}
    if "attention" in scores:
        for method in ATTRIBUTIONS:
            if method in scores:
                agreement[method] = spearman(scores["attention"], scores[method])
    return ErasureCurves(ex.labels[label], base, ks, drops, scores, agreement, convergence)


@dataclass
class SplitErasure:
    """Erasure curves averaged over documents (each document's own predicted class), against the
    share of its words removed."""

    shares: list[float]  # 1/40 .. 1/2 of each document's words
    drops: dict[str, list[float]]  # method -> mean drop at each share
    documents: int
    agreement: dict[str, float]  # method -> mean Spearman with attention
    # method -> its area over only the documents that have the structural curve (two or more
    # sentences, a hierarchical model): the figures to put beside that curve's, on the same documents
    paired: dict[str, float] = field(default_factory=dict)
    paired_documents: int = 0

    @property
    def auc(self) -> dict[str, float]:
        return {m: sum(d) / len(d) if d else 0.0 for m, d in self.drops.items()}


def split_erasure(classifier: Classifier, texts: list[str], steps: int = MAX_K, methods=METHODS,
                  progress=None) -> SplitErasure:
    """Mean erasure curves over ``texts``, each document's x axis the share of its words removed
    (1/40 .. 1/2, so documents of any length average point by point; in a short document several
    shares round to the same count). Documents with fewer than ``MIN_WORDS`` words are skipped.
    ``progress(done, total)`` is called per document."""
    from hierattn.analysis.explain import explained

    sums: dict[str, list[float]] = {}
    counts: dict[str, int] = {}  # documents of one sentence (and flat models) have no structural curve
    agreement: dict[str, list[float]] = {}
    paired: dict[str, list[float]] = {}  # method -> its area on each document that has the structural curve
    used = 0
    for i, ex in explained(classifier, texts):
        if ex is not None and ex.document.num_tokens >= MIN_WORDS:
            curves = erasure_curves(classifier, ex, steps, seed=i, fractions=True, methods=methods)
            for method, d in curves.drops.items():
                sums[method] = [a + b for a, b in zip(sums.get(method, [0.0] * len(d)), d)]
                counts[method] = counts.get(method, 0) + 1
                if STRUCTURAL in curves.drops:
                    paired.setdefault(method, []).append(sum(d) / len(d))
            for method, rho in curves.agreement.items():
                if rho is not None:
                    agreement.setdefault(method, []).append(rho)
            used += 1
        if progress:
            progress(i + 1, len(texts))
    shares = [j / (2 * steps) for j in range(1, steps + 1)]
    return SplitErasure(shares, {m: [v / counts[m] for v in s] for m, s in sums.items()}, used,
                        {m: sum(v) / len(v) for m, v in agreement.items()},
                        {m: sum(v) / len(v) for m, v in paired.items()}, len(paired.get(STRUCTURAL, [])))
