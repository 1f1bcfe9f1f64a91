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
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .compare import importance
from .explain import Explanation
from .metrics import _gini_1d, diagonality, gini

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


@dataclass
class Concentration:
    """Step 1 and 4: how concentrated a document's word importance is."""

    words: int
    top_share: float  # share of the importance held by the top 10% of words
    gini: float  # Gini coefficient of the word importances (0 even .. 1 on one word)
    top_words: list[str]


def concentration(ex: Explanation, top: float = 0.1) -> Concentration | None:
    imp = importance(ex)
    if imp is None:
        return None
    tokens = [t for s in ex.document.sentences for t in s.tokens]
    values = list(imp.words.values())
    order = sorted(range(len(values)), key=lambda i: -values[i])
    k = max(1, round(top * len(values)))
    return Concentration(len(values), sum(values[i] for i in order[:k]),
                         _gini_1d(torch.tensor(values, dtype=torch.float64)),  # of the word weights, as a vector
                         [tokens[i].text for i in order[:5]])


@dataclass
class BranchContrast:
    """Step 2: do the two parallel self-attentions relate words to different words?"""

    words: int
    different_top: float  # share of words whose most-attended other word differs between branch a and b
    examples: list[tuple[str, str, str]]  # (word, branch a's top, branch b's top), first few that differ


def branch_contrast(ex: Explanation) -> BranchContrast | None:
    """Per-sentence word-level maps with branches a and b (hierarchical HCAN), heads averaged; a
    word's own position is left out of its top, since attending to itself says nothing of relations."""
    if not {"word.self.a", "word.self.b"} <= set(ex.attentions):
        return None
    differ, total, examples = 0, 0, []
    for s, sentence in enumerate(ex.document.sentences):
        n = len(sentence.tokens)
        if n < 3:
            continue
        a = ex.self_attention("word.self.a", s, None).clone()
        b = ex.self_attention("word.self.b", s, None).clone()
        a.fill_diagonal_(-1.0)
        b.fill_diagonal_(-1.0)
        top_a, top_b = a.argmax(-1).tolist(), b.argmax(-1).tolist()
        for i in range(n):
            total += 1
            if top_a[i] != top_b[i]:
                differ += 1
                if len(examples) < 5:
                    examples.append((sentence.tokens[i].text, sentence.tokens[top_a[i]].text,
                                     sentence.tokens[top_b[i]].text))
    return BranchContrast(total, differ / total if total else 0.0, examples) if total else None


@dataclass
class MatrixShape:
    """Step 3: how local (band-diagonal) and how columnar a word-level self-attention matrix is."""

    size: int
    diagonality_b3: float  # share of attention within 3 positions of the diagonal
    columnar: float  # share of attention that goes to the top 10% of keys by total received
    gini: float
    # the same two shares for attention spread evenly over the n x n matrix: a short tweet has
    # nearly half its cells within 3 of the diagonal, so shares are judged against these
    even_diagonality_b3: float = 0.0
    even_columnar: float = 0.0

    @property
    def diagonal_lift(self) -> float:
        return self.diagonality_b3 / self.even_diagonality_b3 if self.even_diagonality_b3 else 0.0

    @property
    def columnar_lift(self) -> float:
        return self.columnar / self.even_columnar if self.even_columnar else 0.0


def matrix_shape(ex: Explanation, name: str, head: int | None = None) -> MatrixShape | None:
    """The document-wide (flat, SANet) or first-sentence (hierarchical) matrix of ``name``."""
    a = ex.attentions.get(name)
    if a is None or not a.is_self_attention:
        return None
    matrix = ex.self_attention(name, 0 if "sentence" in a.axes else None, head).to(torch.float64)
    n = matrix.shape[0]
    received = matrix.sum(0)
    k = max(1, -(-n // 10))
    columns = received.topk(k).values.sum().item() / max(matrix.sum().item(), 1e-12)
    even = torch.full((n, n), 1.0 / n, dtype=torch.float64)
    return MatrixShape(n, diagonality(matrix, 3), columns, gini(matrix), diagonality(even, 3), k / n)


def sanet_verdict(sentiment: MatrixShape, topic: MatrixShape) -> list[str]:
    """SANet's two findings (its Table 2 and Figures 3-5), checked on these two documents, each
    share judged against what an even spread would give on a matrix of that size."""
    more_diagonal = sentiment.diagonal_lift > topic.diagonal_lift
    more_columnar = topic.columnar_lift > sentiment.columnar_lift
    return [
        f"Sentiment attention is more band-diagonal: {100 * sentiment.diagonality_b3:.0f}% within 3 positions of the "
        f"diagonal ({sentiment.diagonal_lift:.1f}x an even spread) against {100 * topic.diagonality_b3:.0f}% "
        f"({topic.diagonal_lift:.1f}x) for topic — "
        + ("shown here." if more_diagonal else "not shown by our models on these documents."),
        f"Topic attention is more columnar: its most-attended 10% of words take {100 * topic.columnar:.0f}% "
        f"({topic.columnar_lift:.1f}x an even spread) against {100 * sentiment.columnar:.0f}% "
        f"({sentiment.columnar_lift:.1f}x) for sentiment — "
        + ("shown here." if more_columnar else "not shown by our models on these documents."),
    ]


def han_hcan_verdict(han: Concentration, hcan: Concentration) -> str:
    """HCAN Supplementary B: HAN's weights are more focused on keywords than HCAN's."""
    holds = han.gini > hcan.gini
    return (f"HAN's word weights have Gini {han.gini:.2f} (top 10% of words: {100 * han.top_share:.0f}% of the weight), "
            f"HCAN's {hcan.gini:.2f} ({100 * hcan.top_share:.0f}%): "
            + ("HAN is more focused, as in the paper." if holds else
               "on this document HCAN is the more focused one, unlike the paper's Figures 6 and 7."))
