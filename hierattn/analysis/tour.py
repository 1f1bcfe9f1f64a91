"""The teaching tour: each step's claim from the papers, and the check of that claim on one
explained document, computed (the Tour page shows the numbers and says plainly where our models
do not show what the paper's did). Works on ``Explanation`` objects only.

Steps:
1. Target attention (HCAN Figure 4): a few words and sentences carry most of the weight.
2. Two parallel self-attentions (HCAN section 3.4, Figure 5, Supplementary A): the branches
   relate a word to different words, which is how negation and scaling can be captured.
3. Sentiment attention is band-diagonal, topic attention columnar (SANet Figures 3-5, Table 2).
4. HAN against HCAN (HCAN Figures 6-8): HAN's target attention is more focused on keywords;
   HCAN's self-attention first spreads keyword content over other words.

Every claim is judged against the baseline that would make it fail, on maps of the same shape as
the document's: an even spread (every weight equal), and random attention, each distribution drawn
uniformly from the simplex (Dirichlet(1): attention with no preference at all). A step says
"holds" only when the measured figure is beyond the 95th percentile of ``DRAWS`` random maps
(and, for a comparison, beyond what two random maps differ by); uniform or random attention
therefore never holds (tests/analysis/test_tour.py feeds both through every check). Each verdict
is (holds, the figures in a sentence); the page says which, in a sentence of its own.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from hierattn.analysis.compare import importance, word_self_attention
from hierattn.analysis.explain import Explanation, head_axis
from hierattn.analysis.metrics import diagonality, even_spread, gini, gini_of_values

DRAWS = 200  # random maps per check
QUANTILE = 95  # a figure is "beyond random" above this percentile of the random maps'

# HCAN Supplementary A: Amazon/Yelp reviews that one self-attention misclassified and two parallel
# self-attentions got right ("one section of the review negates or scales the meaning in another").
SUPPLEMENTARY_A = [
    "i got this at a grocery store thinking it would be great since i only drink a little bit of wine or sake at "
    "a time . i ended up giving it away to goodwill after a few months because it doesnt really help the wine or "
    "sake at least not for weeks like im prone to need between glasses and it is annoying to use the plastic "
    "thingy trying to get it tight and worrying that youre going to break the bottle . i think a nice reusable "
    "cork kind of gadget would do just as good a job take up less drawer space and look prettier in the bottle .",
    "for those of you who criticized this book for lack of a plot i can only assume that you are much more suited "
    "to books in the mystery thriller genre . i loved it and found the characters very real and compelling . if "
    "you are a reader who likes books about relationships you are going to love it too .",
    "a feel good read . dean koontz does this type of book very very well . no horrid monsters except for the "
    "unscrupulous government people so dont expect nightmares from this one . it does have its suspense however .",
    "its fun in the begining . but the levels get harder and game play is not as fun . it got so hard it was not "
    "much fun to play . and has not much varity in it .",
]


def _rng(*shape) -> np.random.Generator:
    """Random maps drawn from a generator seeded by the shape: the same document gets the same verdict."""
    return np.random.default_rng([len(shape), *shape])


def _gini_rows(values: np.ndarray) -> np.ndarray:
    """``gini_of_values`` of each row of a (draws, n) array."""
    x = np.sort(values, axis=1)
    n = x.shape[1]
    i = np.arange(1, n + 1)
    return ((2 * i - n - 1) * x).sum(1) / (n * x.sum(1))


def _top_share(values: np.ndarray, k: int) -> np.ndarray:
    """Share of each row's total held by its k largest values."""
    return np.sort(values, axis=1)[:, -k:].sum(1) / values.sum(1)


@dataclass
class Concentration:
    """Steps 1 and 4: how concentrated a document's word importance is, beside what an even
    spread and random attention of the same structure (per-sentence word weights x sentence
    weights for a hierarchical model) give."""

    words: int
    top_share: float  # share of the importance held by the top 10% of words
    gini: float  # Gini coefficient of the word importances (0 even .. 1 on one word)
    top_words: list[str]
    even_top_share: float = 0.0  # the top 10% of an even spread: k / n
    random_top_share: float = 1.0  # 95th percentile over random maps
    random_gini: float = 1.0  # 95th percentile over random maps
    random_ginis: tuple[float, ...] = ()  # every random map's Gini (step 4 compares two models' noise)

    @property
    def focused(self) -> bool:
        """Beyond random attention on both figures: a few words really do carry the weight."""
        return self.top_share > self.random_top_share and self.gini > self.random_gini


def _random_importance(lengths: list[int], hierarchical: bool, draws: int, rng: np.random.Generator) -> np.ndarray:
    """(draws, words): importance from random attention: Dirichlet(1) word weights in each sentence
    times Dirichlet(1) sentence weights (hierarchical), or Dirichlet(1) over the document's words."""
    if not hierarchical:
        return rng.dirichlet(np.ones(sum(lengths)), size=draws)
    sentences = rng.dirichlet(np.ones(len(lengths)), size=draws)
    return np.concatenate([rng.dirichlet(np.ones(n), size=draws) * sentences[:, [s]] for s, n in enumerate(lengths)], 1)


def concentration(ex: Explanation, top: float = 0.1) -> Concentration | None:
    imp = importance(ex)
    if imp is None:
        return None
    tokens = [t for s in ex.document.sentences for t in s.tokens]
    values = list(imp.words.values())
    order = sorted(range(len(values)), key=lambda i: -values[i])
    k = max(1, round(top * len(values)))
    word_map = ex.target_name("word")
    hierarchical = (ex.target_name("sentence") is not None and word_map is not None
                    and "sentence" in ex.attentions[word_map].axes)
    lengths = ex.sentence_lengths
    random = _random_importance(lengths, hierarchical, DRAWS, _rng(hierarchical, *lengths))
    random_ginis = _gini_rows(random)
    return Concentration(len(values), sum(values[i] for i in order[:k]),
                         gini_of_values(torch.tensor(values, dtype=torch.float64)),  # of the word weights, as a vector
                         [tokens[i].text for i in order[:5]], k / len(values),
                         float(np.percentile(_top_share(random, k), QUANTILE)),
                         float(np.percentile(random_ginis, QUANTILE)), tuple(random_ginis.tolist()))


def concentration_verdict(c: Concentration) -> tuple[bool, str]:
    """Step 1: (shown, sentence) for "a few words carry most of the weight"."""
    return c.focused, (
        f"Here the top 10% of words hold {100 * c.top_share:.0f}% of the document's weight; an even spread gives "
        f"{100 * c.even_top_share:.0f}%, and random attention up to {100 * c.random_top_share:.0f}% (Gini "
        f"{c.gini:.2f} against up to {c.random_gini:.2f}).")


def _jsd_rows(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen-Shannon divergence (natural log, 0 .. ln 2) between matching rows over the last axis."""
    m = (p + q) / 2

    def kl(a, b):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(a > 0, a * np.log(a / b), 0.0).sum(-1)

    return (kl(p, m) + kl(q, m)) / 2


@dataclass
class BranchContrast:
    """Step 2: do the two parallel self-attentions relate words to different words?"""

    words: int
    different_top: float  # share of words whose most-attended other word differs between branch a and b
    examples: list[tuple[str, str, str]]  # (word, branch a's top, branch b's top), first few that differ
    divergence: float = 0.0  # mean Jensen-Shannon divergence between a word's rows in branch a and b
    random_divergence: float = math.log(2)  # 95th percentile for two independent random maps of the same shape

    @property
    def different(self) -> bool:
        return self.divergence > self.random_divergence


def branch_contrast(ex: Explanation) -> BranchContrast | None:
    """Per-sentence word-level maps with branches a and b (hierarchical HCAN), heads averaged; a
    word's own position is left out of its top, since attending to itself says nothing of relations.
    The divergence between the branches is judged against two independent random maps of the same
    shape (Dirichlet(1) rows per head, heads averaged as the page shows them): identical branches
    give 0, unrelated random ones the baseline."""
    if not {"word.self.a", "word.self.b"} <= set(ex.attentions):
        return None
    a_map = ex.attentions["word.self.a"]
    heads = a_map.weights.shape[a_map.axis(head_axis(a_map))] if head_axis(a_map) else 1
    differ, total, examples, divergences, lengths = 0, 0, [], [], []
    for s, sentence in enumerate(ex.document.sentences):
        n = len(sentence.tokens)
        if n < 3:
            continue
        lengths.append(n)
        a = ex.self_attention("word.self.a", s, None).to(torch.float64)
        b = ex.self_attention("word.self.b", s, None).to(torch.float64)
        divergences += _jsd_rows(a.numpy(), b.numpy()).tolist()
        top_a = a.clone().fill_diagonal_(-1.0).argmax(-1).tolist()
        top_b = b.clone().fill_diagonal_(-1.0).argmax(-1).tolist()
        for i in range(n):
            total += 1
            if top_a[i] != top_b[i]:
                differ += 1
                if len(examples) < 5:
                    examples.append((sentence.tokens[i].text, sentence.tokens[top_a[i]].text,
                                     sentence.tokens[top_b[i]].text))
    if not total:
        return None
    rng = _rng(heads, *lengths)
    random = np.zeros(DRAWS)
    for n in lengths:  # the mean over the document's words, per draw
        pair = [rng.dirichlet(np.ones(n), size=(DRAWS, heads, n)).mean(1) for _ in range(2)]
        random += _jsd_rows(*pair).sum(1)
    random /= total
    return BranchContrast(total, differ / total, examples, float(np.mean(divergences)),
                          float(np.percentile(random, QUANTILE)))


def branch_verdict(c: BranchContrast) -> tuple[bool, str]:
    """Step 2: (shown, sentence) for "the branches relate a word to different words"."""
    return c.different, (
        f"In this review the two branches' attention differs by a Jensen–Shannon divergence of {c.divergence:.3f} "
        f"per word (0 for identical branches, or an even spread in both; {math.log(2):.3f} at most), against up to "
        f"{c.random_divergence:.3f} for "
        f"two unrelated random maps of the same shape; for {100 * c.different_top:.0f}% of the {c.words} words the "
        "most-attended other word differs.")


@dataclass
class MatrixShape:
    """Step 3: how local (band-diagonal) and how columnar a word-level self-attention matrix is,
    beside an even spread and random attention (Dirichlet(1) rows) of the same size."""

    size: int
    diagonality_b3: float  # share of attention within 3 positions of the diagonal
    columnar: float  # share of attention that goes to the top 10% of keys by total received
    gini: float
    # the same two shares for attention spread evenly over the n x n matrix: a short tweet has
    # nearly half its cells within 3 of the diagonal, so shares are judged against these
    even_diagonality_b3: float = 0.0
    even_columnar: float = 0.0
    random_diagonality_b3: float = 1.0  # 95th percentiles over random maps
    random_columnar: float = 1.0

    @property
    def band(self) -> float:
        """How far from an even spread towards a pure band: (d - even) / (1 - even); 0 for an even
        spread and 1 for all weight within the band at any size, so shapes of different lengths
        compare (a raw share or a ratio to the even spread favours the longer matrix)."""
        return _toward_one(self.diagonality_b3, self.even_diagonality_b3)

    @property
    def columns(self) -> float:
        """The same for the columnar share."""
        return _toward_one(self.columnar, self.even_columnar)

    @property
    def diagonal_beyond_random(self) -> bool:
        return self.diagonality_b3 > self.random_diagonality_b3

    @property
    def columnar_beyond_random(self) -> bool:
        return self.columnar > self.random_columnar


def _toward_one(value: float, baseline: float) -> float:
    return (value - baseline) / (1 - baseline) if baseline < 1 else 0.0


def _columnar_share(matrices: np.ndarray, k: int) -> np.ndarray:
    """(draws, n, n) -> the share of each matrix's weight received by its k most-attended keys."""
    received = matrices.sum(1)
    return np.sort(received, axis=1)[:, -k:].sum(1) / matrices.sum((1, 2))


def matrix_shape(ex: Explanation, name: str, head: int | None = None) -> MatrixShape | None:
    """The document-wide (flat, SANet) or first-sentence (hierarchical) matrix of ``name``."""
    a = ex.attentions.get(name)
    if a is None or not a.is_self_attention:
        return None
    matrix = ex.self_attention(name, 0 if "sentence" in a.axes else None, head).to(torch.float64)
    n = matrix.shape[0]
    k = max(1, -(-n // 10))
    columns = float(_columnar_share(matrix.numpy()[None], k)[0])
    draws = max(4, min(DRAWS, 4_000_000 // (n * n)))  # a 1,000-word matrix: a few draws (n^2 cells each) suffice
    random = _rng(n).dirichlet(np.ones(n), size=(draws, n))  # (draws, n, n), every row a random distribution
    band = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :]) <= 3
    random_diagonality = (random * band).sum((1, 2)) / n
    return MatrixShape(n, diagonality(matrix, 3), columns, gini(matrix), float(even_spread(n)["diagonality_b3"]),
                       k / n, float(np.percentile(random_diagonality, QUANTILE)),
                       float(np.percentile(_columnar_share(random, k), QUANTILE)))


def sanet_verdict(sentiment: MatrixShape, topic: MatrixShape) -> list[tuple[bool, str]]:
    """SANet's two findings (its Table 2 and Figures 3-5), checked on these two documents: the
    sentiment matrix must be more diagonal than random attention of its size, and further from an
    even spread towards a band than the topic matrix; likewise for the topic matrix's columns."""
    more_diagonal = sentiment.diagonal_beyond_random and sentiment.band > topic.band
    more_columnar = topic.columnar_beyond_random and topic.columns > sentiment.columns
    return [
        (more_diagonal,
         f"Is the tweet's attention band-diagonal? {100 * sentiment.diagonality_b3:.0f}% of it lies within 3 "
         f"positions of the diagonal, against {100 * sentiment.even_diagonality_b3:.0f}% for an even spread and up to "
         f"{100 * sentiment.random_diagonality_b3:.0f}% for random attention ({100 * sentiment.band:.0f}% of the way "
         f"from an even spread to a pure band; topic: {100 * topic.diagonality_b3:.0f}% against "
         f"{100 * topic.even_diagonality_b3:.0f}%, {100 * topic.band:.0f}% of the way)."),
        (more_columnar,
         f"Is the article's attention columnar? Its most-attended 10% of words take {100 * topic.columnar:.0f}% of the "
         f"attention, against {100 * topic.even_columnar:.0f}% for an even spread and up to "
         f"{100 * topic.random_columnar:.0f}% for random attention ({100 * topic.columns:.0f}% of the way to all "
         f"of it; sentiment: {100 * sentiment.columnar:.0f}%, {100 * sentiment.columns:.0f}% of the way)."),
    ]


def han_hcan_verdict(han: Concentration, hcan: Concentration) -> tuple[bool, str]:
    """HCAN Supplementary B: HAN's weights are more focused on keywords than HCAN's. Shown only
    when HAN's weights are focused beyond random attention and their Gini exceeds HCAN's by more
    than the Gini of two random maps of these shapes differs (95th percentile)."""
    han_draws, hcan_draws = np.asarray(han.random_ginis), np.asarray(hcan.random_ginis)
    # Pairs of independent draws: the two models read the same text, so their random maps may be the
    # same draws; offsetting one list by half pairs each draw with another one.
    noise = float(np.percentile(han_draws - np.roll(hcan_draws, len(hcan_draws) // 2), QUANTILE)) \
        if len(han_draws) and len(hcan_draws) else 0.0
    holds = han.focused and han.gini - hcan.gini > noise
    return holds, (
        f"HAN's word weights have Gini {han.gini:.2f} (top 10% of words: {100 * han.top_share:.0f}% of the weight), "
        f"HCAN's {hcan.gini:.2f} ({100 * hcan.top_share:.0f}%); an even spread has Gini 0, random attention reaches "
        f"{han.random_gini:.2f} "
        f"on this document, and two random maps differ by up to {noise:.2f}.")


def branch_lines(ex: Explanation, sentence_start: int, word: tuple[int, int]) -> list[tuple[str, list[float]]]:
    """What one word gives the words of its sentence in each self-attention branch, heads averaged:
    (label, weights) lines for ``viz.word_attention_html`` (HCAN Figures 5 and 8)."""
    per_map: dict[str, list[list[float]]] = {}
    for line in word_self_attention(ex, sentence_start, word):
        per_map.setdefault(line["map"], []).append(line["weights"])
    return [(f"branch {name[-1]} (mean of heads)", [sum(c) / len(c) for c in zip(*ws)]) for name, ws in per_map.items()]


def heaviest_word(ex: Explanation):
    """(sentence, word index in it) of the word with the largest importance (Figure 8's word)."""
    weights = importance(ex).words  # span -> weight
    span = max(weights, key=weights.get)
    sentence = next(s for s in ex.document.sentences if s.start <= span[0] < s.end)
    return sentence, [(t.start, t.end) for t in sentence.tokens].index(span)
