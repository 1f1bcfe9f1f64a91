"""The Tour's step 1, target attention (HCAN Figure 4): a few words and sentences carry most of the
weight.

"Most of the weight": the top 10% of words hold more than half of it (the claim's own words), and
at least ``MIN_SHARE`` more than an even spread of the same structure gives (a hierarchical model's
even spread weighs each sentence equally, so a short sentence's words weigh more). Judged per word
head: each word head's word weights times the sentence weights averaged over the sentence heads.
Averaging the word heads would flatten them (a mean of two one-hot heads on different words is two
half-weights) and hide a focused head, so the word heads are judged one at a time. The sentence
heads are averaged because they do not correspond to the word heads: HCAN's sentence level reads
the sentence vectors through convolutions that mix every channel, so sentence head h is not word
head h one level up, and pairing them by number would make the verdict depend on how the sentence
heads happen to be labelled (any relabelling of them leaves this verdict as it is; a test checks it).
The verdict names the word heads where it holds. The claim is about sharpness alone,
which no permutation of the weights changes, so its null is the even spread; beside it the verdict
gives how often random attention of the same structure (Dirichlet(1) sentence weights times
Dirichlet(1) word weights) passes the same check: products of two random levels are heavy-tailed,
and on articles of 10 or more sentences such random heads pass about a third of the time.
Concentration is therefore a description of the map, never evidence that the model chose the
right words (that is the battery's Kendall tau with leave-one-out, against the sentence weights
times even words).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from hierattn.analysis.compare import importance
from hierattn.analysis.explain import Explanation, head_axis
from hierattn.analysis.metrics import gini_of_values
from hierattn.analysis.tour.draws import seeded_by_shape
from hierattn.analysis.tour.rates import Step, StepRate, check_each_document, plain_sentence, tally

MOST = 0.5  # "most of the weight" on the top 10% of words
MIN_SHARE = 0.2  # and this much more of it than an even spread of the same structure gives


def gini_rows(values: np.ndarray) -> np.ndarray:
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
                         even_share, float(gini_rows(even[None])[0]), float(np.mean(ginis)), shares, heaviest,
                         random_concentration(ex.sentence_lengths, hierarchical, k, even_share,
                                              sentence_heads=head_count(ex, "sentence") if hierarchical else 1))


RANDOM_HEADS = 200  # random heads per document for step 1's comparison


def head_count(ex: Explanation, level: str) -> int:
    """How many heads the target attention at ``level`` has (1 without a head axis, or none there)."""
    name = ex.target_name(level)
    if name is None:
        return 1
    a = ex.attentions[name]
    axis = head_axis(a)
    return a.weights.shape[a.axis(axis)] if axis else 1


def random_word_importances(rng: np.random.Generator, lengths: list[int], draws: int, word_heads: int = 1,
                            sentence_heads: int = 1) -> np.ndarray:
    """(draws, word_heads, words): random target attention of a hierarchical model of this shape,
    read as steps 1 and 4 read a real one: Dirichlet(1) sentence weights averaged over
    ``sentence_heads`` draws, times each word head's Dirichlet(1) weights over each sentence's words."""
    sentences = rng.dirichlet(np.ones(len(lengths)), size=(sentence_heads, draws)).mean(0)  # (draws, S)
    return np.concatenate([sentences[:, None, [s]] * rng.dirichlet(np.ones(n), size=(draws, word_heads))
                           for s, n in enumerate(lengths)], axis=2)


def random_concentration(lengths: list[int], hierarchical: bool, k: int, even_share: float,
                         draws: int = RANDOM_HEADS, sentence_heads: int = 1) -> float:
    """The share of random heads of this structure (Dirichlet(1) over the sentences, averaged over
    ``sentence_heads`` such draws as the model's sentence heads are averaged, times Dirichlet(1)
    over each sentence's words; Dirichlet(1) over all words for a flat model) whose top k words pass
    step 1's check: what the check gives attention that knows nothing."""
    rng = seeded_by_shape(k, *lengths[:16], len(lengths))
    if hierarchical:
        words = random_word_importances(rng, lengths, draws, 1, sentence_heads)[:, 0]
    else:
        words = rng.dirichlet(np.ones(sum(lengths)), size=draws)
    shares = _top_share(words, k)
    return float(np.mean((shares > MOST) & (shares - even_share >= MIN_SHARE)))


def _head_importances(ex: Explanation, hierarchical: bool) -> list[np.ndarray]:
    """Each word head's word importance, reading order: its word weight times its sentence's weight
    averaged over the sentence heads (see the module doc: sentence heads are not word heads one
    level up). An average over word heads is smoother than any one of them, so a multi-head model
    is judged a word head at a time (random attention averaged over two heads has a lower Gini
    than over one)."""
    a = ex.attentions[ex.target_name("word")]
    axis = head_axis(a)
    heads = a.weights.shape[a.axis(axis)] if axis else 1
    sentences = ex.target_attention("sentence") if hierarchical else None  # (S,), sentence heads averaged
    out = []
    for h in range(heads):
        words = ex.target_attention("word", h if axis else None)
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


def _concentrated(ex):
    c = concentration(ex)
    if c is None:
        return None
    return c.focused, (c.effect, len(c.head_top_shares), len(c.focused_heads), c.averaged_focused,
                       c.random_focused or 0.0)


def _over_split(step: Step, models, split, progress, taken) -> StepRate:
    """The documents where some head holds, and beside them the (document, head) pairs, the heads
    averaged, and the random heads of the same documents' shapes."""
    (dataset, (texts, truth)), = split.items()
    rows, kept = check_each_document(texts, truth, models, _concentrated, progress)
    rate = tally(step, dataset, [(h, e[0], ok, clean) for h, e, ok, clean in rows], kept, taken.get(dataset))
    rate.parts = {"per head": [sum(r[1][1] for r in rows), sum(r[1][2] for r in rows)],
                  "heads averaged": [len(rows), sum(r[1][3] for r in rows)],
                  "random heads": [len(rows) * RANDOM_HEADS, round(sum(r[1][4] for r in rows) * RANDOM_HEADS)]}
    return rate


def _said(rate: StepRate) -> str:
    if not rate.parts:
        return plain_sentence(rate)
    heads, averaged = rate.parts["per head"], rate.parts["heads averaged"]
    random = rate.parts.get("random heads", [0, 0])
    return (f"Over the whole {rate.dataset} test split, at least one head shows it on {rate.holds:,} of "
            f"{rate.documents:,} documents ({rate.rate:.0%}); {heads[1]:,} of {heads[0]:,} (document, head) pairs "
            f"({heads[1] / max(heads[0], 1):.1%}); with the heads averaged, {averaged[1]:,} documents. Random "
            f"heads of the same documents' shapes pass {random[1] / max(random[0], 1):.0%} of the time.")


STEP = Step(1, "a few words carry most of the document's weight in some head (its top 10% of words hold over half of "
               "the head's weight, 20 points more than an even spread)",
            ("bbc-news-hcan",), ("bbc-news",), over_split=_over_split, said=_said)
