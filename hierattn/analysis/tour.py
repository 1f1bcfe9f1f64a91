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

Every claim is judged against a baseline that keeps what the claim is not about:

1. "most of the weight": the top 10% of words hold more than half of it (the claim's own words),
   and at least ``MIN_SHARE`` more than an even spread of the same structure gives (a hierarchical
   model's even spread weighs each sentence equally, so a short sentence's words weigh more).
   Judged per head, each head's word weight times its own sentence weight: averaging heads
   flattens them (a mean of two one-hot heads on different words is two half-weights), so the
   averaged weights would hide a focused head. The verdict names the heads where it holds. The
   claim is about sharpness alone, which no permutation of the weights changes, so its null is the
   even spread; beside it the verdict gives how often random attention of the same structure
   (Dirichlet(1) sentence weights times Dirichlet(1) word weights) passes the same check: products
   of two random levels are heavy-tailed, and on articles of 10 or more sentences such random heads
   pass about a third of the time. Concentration is therefore a description of the map, never
   evidence that the model chose the right words (that is the battery's Kendall tau with
   leave-one-out, against the sentence weights times even words);
2. the branches differ more than the heads of one branch differ among themselves. Under the null
   the branch labels are exchangeable among the heads, and a head keeps its character across the
   words of a document, so the exchangeable unit is one split of the 2h heads into two groups of h
   for the whole document (35 splits for 4 + 4 heads; re-splitting per word, then averaging over
   words, passed 25% of documents whose null was true). The real split must have the largest
   between-minus-within gap of all splits, a p-value of 1 / splits (with 35 splits no p-value can
   go below 1/35 = 0.029); and for most words the most-attended other word differs (a sharper copy
   of one branch, same top words, is not shown);
3. band-diagonal or columnar beyond the same matrix with each row's weights permuted among its
   keys, which keeps each row's sharpness (``tour_shapes``);
4. HAN's Gini above HCAN's by at least ``MIN_GINI_GAP``, on the same document.

Uniform and random attention therefore never hold (tests/analysis/test_tour.py feeds both through
every check). Each verdict is (holds, the figures in a sentence); the page says which, in a sentence
of its own.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from hierattn.analysis.attention_tests import js_divergence
from hierattn.analysis.compare import importance, word_self_attention
from hierattn.analysis.explain import Explanation, head_axis
from hierattn.analysis.metrics import gini_of_values
from hierattn.analysis.tour_shapes import (  # noqa: F401 (step 3 lives there; the Tour reads it from here)
    DRAWS,
    QUANTILE,
    MatrixShape,
    matrix_shape,
    row_permutations,
    sanet_verdict,
    shape_of,
)

MOST = 0.5  # step 1: "most of the weight" on the top 10% of words
MIN_SHARE = 0.2  # step 1: and this much more of it than an even spread of the same structure gives
# Step 4: HAN's Gini above HCAN's by this much on one document: two random maps of the shipped
# models' shapes differ by up to 0.19 (95th percentile, 200 draws on 40 tweets).
MIN_GINI_GAP = 0.2
ALPHA = 0.05  # step 2: the real split of the heads must reach this p-value among all splits
TOP_WORDS_DIFFER = 0.5  # step 2: the most-attended other word differs for most words

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
    """Null draws from a generator seeded by the shape: the same document gets the same verdict."""
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
    """Steps 1 and 4: how concentrated a document's word importance is, beside an even spread of the
    same structure (every sentence weighed equally, every word within its sentence, for a
    hierarchical model; every word for a flat one), heads averaged and per head."""

    words: int
    top_share: float  # share of the importance held by the top 10% of words, heads averaged
    gini: float  # Gini coefficient of the word importances (0 even .. 1 on one word), heads averaged
    top_words: list[str]
    even_top_share: float = 0.0  # the top 10% of words' share under an even spread of the same structure
    even_gini: float = 0.0  # that even spread's Gini (0 for a flat model or sentences of one length)
    head_gini: float = 0.0  # the mean over heads of each head's own Gini (the Gini, for one head)
    head_top_shares: list[float] | None = None  # per head: the top 10% of words' share of its own weight
    head_top_words: list[list[str]] | None = None  # per head: its heaviest words
    random_focused: float | None = None  # share of random heads of this structure that pass the same check

    def __post_init__(self):
        if self.head_top_shares is None:
            self.head_top_shares = [self.top_share]

    @property
    def focused_heads(self) -> list[int]:
        """The heads that put most of their weight on a tenth of the words, well beyond an even spread."""
        return [h for h, share in enumerate(self.head_top_shares)
                if share > MOST and share - self.even_top_share >= MIN_SHARE]

    @property
    def focused(self) -> bool:
        """Some head puts most of its weight on a tenth of the words (judged per head: see the module doc)."""
        return bool(self.focused_heads)

    @property
    def averaged_focused(self) -> bool:
        """The same judged on the heads' averaged weights (flatter than any one head): for comparison."""
        return self.top_share > MOST and self.top_share - self.even_top_share >= MIN_SHARE

    @property
    def effect(self) -> float:
        """The largest head's top share minus the even spread's: how far the best head is from even."""
        return max(self.head_top_shares) - self.even_top_share


def _even_importance(lengths: list[int], hierarchical: bool) -> np.ndarray:
    """The word importance an even spread gives: 1 / (sentences x length) a word (hierarchical),
    1 / words (flat)."""
    if not hierarchical:
        total = sum(lengths)
        return np.full(total, 1.0 / total)
    return np.concatenate([np.full(n, 1.0 / (len(lengths) * n)) for n in lengths])


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
    even = _even_importance(ex.sentence_lengths, hierarchical)
    gini = gini_of_values(torch.tensor(values, dtype=torch.float64))  # of the word weights, as a vector
    heads = _head_importances(ex, hierarchical) if word_map is not None else [np.asarray(values)]
    shares = [float(_top_share(h[None], k)[0]) for h in heads]
    ginis = [gini_of_values(torch.tensor(h, dtype=torch.float64)) for h in heads]
    heaviest = [[tokens[i].text for i in np.argsort(-h, kind="stable")[:5]] for h in heads]
    even_share = float(_top_share(even[None], k)[0])
    return Concentration(len(values), sum(values[i] for i in order[:k]), gini, [tokens[i].text for i in order[:5]],
                         even_share, float(_gini_rows(even[None])[0]), float(np.mean(ginis)), shares, heaviest,
                         random_concentration(ex.sentence_lengths, hierarchical, k, even_share))


RANDOM_HEADS = 200  # random heads per document for step 1's comparison


def random_concentration(lengths: list[int], hierarchical: bool, k: int, even_share: float,
                         draws: int = RANDOM_HEADS) -> float:
    """The share of random heads of this structure (Dirichlet(1) over the sentences, times
    Dirichlet(1) over each sentence's words; Dirichlet(1) over all words for a flat model) whose top
    k words pass step 1's check: what the check gives attention that knows nothing."""
    rng = _rng(k, *lengths[:16], len(lengths))
    if hierarchical:
        sentences = rng.dirichlet(np.ones(len(lengths)), size=draws)  # (draws, S)
        words = np.concatenate([sentences[:, [s]] * rng.dirichlet(np.ones(n), size=draws)
                                for s, n in enumerate(lengths)], axis=1)
    else:
        words = rng.dirichlet(np.ones(sum(lengths)), size=draws)
    shares = _top_share(words, k)
    return float(np.mean((shares > MOST) & (shares - even_share >= MIN_SHARE)))


def _head_importances(ex: Explanation, hierarchical: bool) -> list[np.ndarray]:
    """Each head's own word importance, reading order (word weight x its sentence weight, in the same
    head): an average over heads is smoother than any one head, so a multi-head model is judged a
    head at a time (random attention averaged over two heads has a lower Gini than over one)."""
    a = ex.attentions[ex.target_name("word")]
    axis = head_axis(a)
    heads = a.weights.shape[a.axis(axis)] if axis else 1
    out = []
    for h in range(heads):
        head = h if axis else None
        words = ex.target_attention("word", head)
        sentences = ex.target_attention("sentence", head) if hierarchical else None
        flat = ([w * sentences[s] for s, ws in enumerate(words) for w in ws] if sentences is not None
                else [w for ws in words for w in ws])
        flat = np.asarray(flat, dtype=np.float64)
        out.append(flat / flat.sum() if flat.sum() > 0 else flat)
    return out


def concentration_verdict(c: Concentration) -> tuple[bool, str]:
    """Step 1: (shown, sentence) for "a few words carry most of the weight", judged per head."""
    heads = len(c.head_top_shares)
    even = (f"an even spread gives {100 * c.even_top_share:.0f}%. The claim asks for more than {100 * MOST:.0f}%, "
            f"and {100 * MIN_SHARE:.0f} points more than the even spread.")
    if c.random_focused is not None:
        even += (f" Random attention of this document's shape passes that check {100 * c.random_focused:.0f}% of "
                 "the time: concentration describes the map, it does not show that the words are the right ones.")
    if heads == 1:
        return c.focused, (f"Here the top 10% of words hold {100 * c.top_share:.0f}% of the document's weight; "
                           f"{even} (Gini {c.gini:.2f} against {c.even_gini:.2f} for the even spread.)")
    per_head = ", ".join(f"head {h + 1} {100 * share:.0f}%" for h, share in enumerate(c.head_top_shares))
    where = (f"It holds in head{'s' if len(c.focused_heads) > 1 else ''} "
             + ", ".join(str(h + 1) for h in c.focused_heads) + f" of {heads}. " if c.focused else
             f"It holds in none of the {heads} heads. ")
    return c.focused, (
        f"Judged a head at a time (averaging heads flattens them): the top 10% of words hold {per_head} of "
        f"each head's weight; {even} {where}With the heads averaged they hold {100 * c.top_share:.0f}%.")


@dataclass
class BranchContrast:
    """Step 2: do the two parallel self-attentions relate words to different words?"""

    words: int
    different_top: float  # share of words whose most-attended other word differs between branch a and b
    examples: list[tuple[str, str, str]]  # (word, branch a's top, branch b's top), first few that differ
    divergence: float = 0.0  # mean Jensen-Shannon divergence between a word's rows in branch a and b, heads averaged
    between_heads: float = 0.0  # mean JSD between a head of branch a and a head of branch b, per word
    within_heads: float = 0.0  # mean JSD between two heads of one branch, per word
    # the real split's gap (between - within) and every split's, over the whole document
    gap: float = 0.0
    split_gaps: list[float] | None = None
    p_value: float = 1.0  # (1 + splits whose gap reaches the real one's) / splits; 1 with no heads to split
    heads: int = 1  # heads a branch

    @property
    def splits(self) -> int:
        return len(self.split_gaps) if self.split_gaps else 0

    @property
    def smallest_p(self) -> float:
        """The smallest p-value the splits allow: 1 / splits."""
        return 1 / self.splits if self.splits else 1.0

    @property
    def different(self) -> bool:
        return self.p_value <= ALPHA and self.different_top > TOP_WORDS_DIFFER

    @property
    def effect(self) -> float:
        """The real split's gap minus the largest other split's: above 0 when the real one is the largest."""
        others = (self.split_gaps or [0.0])[1:] or [0.0]
        return self.gap - max(others)


def pairwise_jsd(rows: np.ndarray) -> np.ndarray:
    """(..., m, n) distributions -> (..., m, m) Jensen-Shannon divergences between every two."""
    return js_divergence(rows[..., :, None, :], rows[..., None, :, :])


def head_splits(heads: int) -> list[list[int]]:
    """Every way to split 2h heads into two groups of h, each once (the group holding head 0 first):
    C(2h, h) / 2 of them, the real split (heads 0..h-1 against h..2h-1) first."""
    from itertools import combinations

    return [list(c) for c in combinations(range(2 * heads), heads) if 0 in c]


def split_gaps(divergences: np.ndarray, heads: int) -> np.ndarray:
    """(words, 2h, 2h) divergences between the rows of 2h heads, pooled over a document's words ->
    (splits,): for each split of the heads (``head_splits``), used for every word of the document,
    the mean divergence between the groups minus the mean within them, averaged over the words."""
    everyone = range(2 * heads)
    out = []
    for group in head_splits(heads):
        other = [i for i in everyone if i not in group]
        between = divergences[:, group][:, :, other].mean((1, 2))
        within = [divergences[:, g][:, :, g].sum((1, 2)) / (heads * (heads - 1)) for g in (group, other)]
        out.append(float((between - (within[0] + within[1]) / 2).mean()))
    return np.asarray(out)


def split_p_value(gaps: np.ndarray) -> float:
    """The real split's (the first) p-value among all splits: the share of splits whose gap is at least
    its own, itself included. Under the null every split is as likely to be the real one."""
    return float((gaps >= gaps[0] - 1e-12).sum() / len(gaps))


def branch_contrast(ex: Explanation) -> BranchContrast | None:
    """Per-sentence word-level maps with branches a and b (hierarchical HCAN); a word's own position
    is left out of its top, since attending to itself says nothing of relations. The branches
    differ when their heads differ more than the heads of one branch do, judged against every other
    split of the heads into two groups, one split for the whole document (see the module doc).
    Needs two or more heads a branch (with one, there is nothing within a branch to compare)."""
    if not {"word.self.a", "word.self.b"} <= set(ex.attentions):
        return None
    a_map = ex.attentions["word.self.a"]
    heads = a_map.weights.shape[a_map.axis(head_axis(a_map))] if head_axis(a_map) else 1
    differ, total, examples, divergences, pairs = 0, 0, [], [], []
    for s, sentence in enumerate(ex.document.sentences):
        n = len(sentence.tokens)
        if n < 3:
            continue
        a = ex.self_attention("word.self.a", s, None).to(torch.float64)
        b = ex.self_attention("word.self.b", s, None).to(torch.float64)
        divergences += js_divergence(a.numpy(), b.numpy()).tolist()
        if heads >= 2:
            rows = np.stack([ex.self_attention(name, s, h).to(torch.float64).numpy()
                             for name in ("word.self.a", "word.self.b") for h in range(heads)], 1)  # (n, 2h, n)
            pairs.append(pairwise_jsd(rows))  # (n, 2h, 2h)
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
    contrast = BranchContrast(total, differ / total, examples, float(np.mean(divergences)), heads=heads)
    if pairs:
        d = np.concatenate(pairs)  # (words, 2h, 2h)
        gaps = split_gaps(d, heads)  # (splits,); split 0 is the real one
        branch_a, branch_b = list(range(heads)), list(range(heads, 2 * heads))
        contrast.between_heads = float(d[:, branch_a][:, :, branch_b].mean())
        contrast.within_heads = float(np.mean([d[:, g][:, :, g].sum((1, 2)) / (heads * (heads - 1))
                                               for g in (branch_a, branch_b)]))
        contrast.gap, contrast.split_gaps = float(gaps[0]), gaps.tolist()
        contrast.p_value = split_p_value(gaps)
    return contrast


def branch_verdict(c: BranchContrast) -> tuple[bool, str]:
    """Step 2: (shown, sentence) for "the branches relate a word to different words"."""
    if not c.splits:
        split = "With one head a branch there is no other split of the heads to compare with. "
    else:
        rank = 1 + sum(g > c.gap for g in c.split_gaps[1:])
        split = (f"Among all {c.splits} ways to split the {2 * c.heads} heads into two "
                 f"groups, the real branches rank {rank} by that gap (p = {c.p_value:.3f}; with {c.splits} splits "
                 f"no p-value can go below {c.smallest_p:.3f}, and the claim asks for {ALPHA:.2f} or less). ")
    return c.different, (
        f"In this review a head of one branch and a head of the other differ by a Jensen–Shannon divergence of "
        f"{c.between_heads:.3f} per word, two heads of one branch by {c.within_heads:.3f}. " + split
        + f"For {100 * c.different_top:.0f}% of the {c.words} words the most-attended other word differs between "
        f"the branches (the claim asks for more than {100 * TOP_WORDS_DIFFER:.0f}%).")


def han_hcan_verdict(han: Concentration, hcan: Concentration) -> tuple[bool, str]:
    """HCAN Supplementary B: HAN's weights are more focused on keywords than HCAN's. Shown when
    HAN's Gini exceeds HCAN's on the same document by ``MIN_GINI_GAP``: a comparison of the two
    models, which asks neither to beat random attention outright. Each head's Gini, averaged over
    heads (``Concentration.head_gini``): HCAN's heads averaged would look flatter than any of them."""
    holds = han.head_gini - hcan.head_gini >= MIN_GINI_GAP
    return holds, (
        f"HAN's word weights have Gini {han.head_gini:.2f} (top 10% of words: {100 * han.top_share:.0f}% of the "
        f"weight), HCAN's {hcan.head_gini:.2f} a head ({100 * hcan.top_share:.0f}%, heads averaged); an even spread "
        f"has Gini {han.even_gini:.2f} here, and the claim asks HAN's to be {MIN_GINI_GAP:.2f} above HCAN's. This "
        "compares these two checkpoints: how focused a target attention is follows where its query vector started.")


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
