"""The Tour's step 2, two parallel self-attentions (HCAN section 3.4, Figure 5, Supplementary A):
the branches relate a word to different words, which is how negation and scaling can be captured.

The branches differ more than the heads of one branch differ among themselves. Under the null the
branch labels are exchangeable among the heads, and a head keeps its character across the words of
a document, so the exchangeable unit is one split of the 2h heads into two groups of h for the whole
document (35 splits for 4 + 4 heads; re-splitting per word, then averaging over words, passed 25% of
documents whose null was true). The real split must have the largest between-minus-within gap of all
splits, a p-value of 1 / splits (with 35 splits no p-value can go below 1/35 = 0.029); and for most
words the most-attended other word differs (a sharper copy of one branch, same top words, is not shown).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from hierattn.analysis.attention_tests import js_divergence
from hierattn.analysis.compare import word_self_attention
from hierattn.analysis.explain import Explanation, head_axis
from hierattn.analysis.tour.rates import Step, StepRate

ALPHA = 0.05  # the real split of the heads must reach this p-value among all splits
TOP_WORDS_DIFFER = 0.5  # the most-attended other word differs for most words

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


def branch_lines(ex: Explanation, sentence_start: int, word: tuple[int, int]) -> list[tuple[str, list[float]]]:
    """What one word gives the words of its sentence in each self-attention branch, heads averaged:
    (label, weights) lines for ``viz.word_attention_html`` (HCAN Figures 5 and 8)."""
    per_map: dict[str, list[list[float]]] = {}
    for line in word_self_attention(ex, sentence_start, word):
        per_map.setdefault(line["map"], []).append(line["weights"])
    return [(f"branch {name[-1]} (mean of heads)", [sum(c) / len(c) for c in zip(*ws)]) for name, ws in per_map.items()]


def _branches(ex):
    c = branch_contrast(ex)
    return None if c is None else (c.different, c.effect)


def _said(rate: StepRate) -> str:
    return (f"Over the whole {rate.dataset} test split, the claim holds on {rate.holds:,} of {rate.documents:,} "
            f"documents ({rate.rate:.1%}). Where the branch labels carry nothing (4 + 4 heads: 35 splits), it "
            f"holds on at most 1 in 35 (2.9%) by chance, the smallest p-value 35 splits allow.")


STEP = Step(2, "the two self-attention branches relate a word to different words (their heads differ more than under "
               "any other split of the heads, p <= 0.05, and most words' top word differs)",
            ("tweets-hcan",), ("tweets",), check=_branches, said=_said)
