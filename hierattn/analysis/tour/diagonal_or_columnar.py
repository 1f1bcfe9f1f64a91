"""The Tour's step 3, diagonal or columnar (SANet Figures 3-5, Table 2): sentiment attention is
band-diagonal, topic attention columnar. Measured here: how band-diagonal and how columnar a
word-level self-attention matrix is, beside an even spread and beside the same matrix with each
row's weights permuted among its keys. The permutation keeps every row's sharpness and destroys only where its
weight sits: random Dirichlet(1) rows are far flatter (row Gini 0.5) than trained maps (0.92-0.99),
so sharp maps with no shape passed a null of fresh random rows more often than the real ones did."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from hierattn.analysis.explain import Explanation
from hierattn.analysis.metrics import diagonality, even_spread, gini
from hierattn.analysis.tour.draws import seeded_by_shape
from hierattn.analysis.tour.rates import Step, StepRate, check_each_document, pick_documents, taken_rows

DRAWS = 200  # row permutations per check
PERMUTED_CELLS = 40_000_000  # fewer permutations of a long article's matrix, at least MIN_DRAWS
MIN_DRAWS = 40
QUANTILE = 95  # a figure is "beyond" its null above this percentile of the null's draws


@dataclass
class MatrixShape:
    """Step 3: how local (band-diagonal) and how columnar a word-level self-attention matrix is,
    beside an even spread and the same matrix with each row's weights permuted among its keys
    (``row_permutations``: every row as sharp as it was, its weight anywhere)."""

    size: int
    diagonality_b3: float  # share of attention within 3 positions of the diagonal
    columnar: float  # share of attention that goes to the top 10% of keys by total received
    gini: float
    # the same two shares for attention spread evenly over the n x n matrix: a short tweet has
    # nearly half its cells within 3 of the diagonal, so shares are judged against these
    even_diagonality_b3: float = 0.0
    even_columnar: float = 0.0
    # 95th percentiles over the row-permuted matrices (named "random" for the maps they stand for)
    random_diagonality_b3: float = 1.0
    random_columnar: float = 1.0
    draws: int = 0  # row permutations behind those percentiles

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


def row_permutations(matrix: np.ndarray, draws: int, rng: np.random.Generator, k: int,
                     bandwidth: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """The null of step 3: ``draws`` copies of the (n, n) ``matrix`` with each row's weights
    permuted among its keys -> (diagonality at ``bandwidth``, share of the k most-attended keys),
    each (draws,). Each row keeps its values, so its sharpness; only where its weight sits is
    random. Drawn a few permutations at a time, so a long article's matrix fits in memory."""
    n = matrix.shape[0]
    band = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :]) <= bandwidth
    total = matrix.sum()
    diagonal, columns = [], []
    per_pass = max(1, 4_000_000 // (n * n))
    for done in range(0, draws, per_pass):
        shuffled = rng.permuted(np.broadcast_to(matrix, (min(per_pass, draws - done), n, n)), axis=2)
        diagonal.append((shuffled * band).sum((1, 2)) / total)
        columns.append(_columnar_share(shuffled, k))
    return np.concatenate(diagonal), np.concatenate(columns)


def matrix_shape(ex: Explanation, name: str, head: int | None = None) -> MatrixShape | None:
    """The document-wide (flat, SANet) or first-sentence (hierarchical) matrix of ``name``, beside
    ``DRAWS`` row permutations of itself (fewer for a long article: ``PERMUTED_CELLS``)."""
    a = ex.attentions.get(name)
    if a is None or not a.is_self_attention:
        return None
    matrix = ex.self_attention(name, 0 if "sentence" in a.axes else None, head).to(torch.float64)
    return shape_of(matrix.numpy())


def shape_of(matrix: np.ndarray) -> MatrixShape:
    """``matrix_shape`` of an (n, n) array of attention rows."""
    n = matrix.shape[0]
    k = max(1, -(-n // 10))
    columns = float(_columnar_share(matrix[None], k)[0])
    draws = max(MIN_DRAWS, min(DRAWS, PERMUTED_CELLS // (n * n)))
    null_diagonal, null_columns = row_permutations(matrix, draws, seeded_by_shape(n), k)
    tensor = torch.from_numpy(matrix)
    return MatrixShape(n, diagonality(tensor, 3), columns, gini(tensor), float(even_spread(n)["diagonality_b3"]),
                       k / n, float(np.percentile(null_diagonal, QUANTILE)),
                       float(np.percentile(null_columns, QUANTILE)), draws)


def sanet_verdict(sentiment: MatrixShape, topic: MatrixShape) -> list[tuple[bool, str]]:
    """SANet's two findings (its Table 2 and Figures 3-5), checked on these two documents: the
    sentiment matrix must be more diagonal than its rows shuffled among their keys (95th
    percentile), and further from an even spread towards a band than the topic matrix; likewise for
    the topic matrix's columns."""
    more_diagonal = sentiment.diagonal_beyond_random and sentiment.band > topic.band
    more_columnar = topic.columnar_beyond_random and topic.columns > sentiment.columns
    return [
        (more_diagonal,
         f"Is the tweet's attention band-diagonal? {100 * sentiment.diagonality_b3:.0f}% of it lies within 3 "
         f"positions of the diagonal, against {100 * sentiment.even_diagonality_b3:.0f}% for an even spread and up to "
         f"{100 * sentiment.random_diagonality_b3:.0f}% with each row's weights shuffled "
         f"({round(100 * sentiment.band)}% of the way "
         f"from an even spread to a pure band; topic: {100 * topic.diagonality_b3:.0f}% against "
         f"{100 * topic.even_diagonality_b3:.0f}%, {round(100 * topic.band)}% of the way)."),
        (more_columnar,
         f"Is the article's attention columnar? Its most-attended 10% of words take {100 * topic.columnar:.0f}% of the "
         f"attention, against {100 * topic.even_columnar:.0f}% for an even spread and up to "
         f"{100 * topic.random_columnar:.0f}% with each row's weights shuffled "
         f"({round(100 * topic.columns)}% of the way to all "
         f"of it; sentiment: {100 * sentiment.columnar:.0f}%, {round(100 * sentiment.columns)}% of the way)."),
    ]


def _over_split(step: Step, models, split, progress, taken) -> StepRate:
    """Each tweet's matrix more diagonal than its rows shuffled, each article's more columnar, and the
    claim as the Tour checks it on a pair: a (tweet, article) pair holds when both sides do and the
    tweet is further towards a band than the article, the article further towards columns. Both
    shapes are counted on both sides (a tweet can be columnar too, and most are).

    The showcases: a band showcase must read as a band, so the strongest tweet is the one with the
    largest excess of within-band weight over its null among the tweets diagonal beyond the null and
    further towards a band than towards columns (``band > columns``); likewise the strongest article
    is the most columnar beyond its null among those further towards columns than towards a band. A
    tweet drawn as two bright columns is not offered as a band, whatever its diagonal share."""
    sides = {}
    for model, (dataset, (texts, truth)), kind in zip(models, split.items(), ("diagonal", "columnar")):
        def check(ex, kind=kind):
            shape = matrix_shape(ex, ex.self_attention_names[0]) if ex.self_attention_names else None
            if shape is None:
                return None
            both = (shape.diagonal_beyond_random, shape.columnar_beyond_random)
            if kind == "diagonal":
                return both[0], (shape.diagonality_b3 - shape.random_diagonality_b3, shape.band, shape.columns,
                                 both)
            return both[1], (shape.columnar - shape.random_columnar, shape.band, shape.columns, both)
        sides[kind] = (dataset, *check_each_document(texts, truth, [model], check, progress))
    (tweets, rows_t, kept_t), (articles, rows_a, kept_a) = sides["diagonal"], sides["columnar"]
    band_a, cols_a = np.array([r[1][1] for r in rows_a]), np.array([r[1][2] for r in rows_a])
    ok_a = np.array([r[0] for r in rows_a], dtype=bool)
    # pairs where the tweet is diagonal beyond random and further towards a band than the article,
    # and the article is columnar beyond random and further towards columns than the tweet
    pairs = int(sum(((band > band_a) & ok_a & (cols_a > cols)).sum()
                    for holds, (_, band, cols, _), _, _ in rows_t if holds))
    reads_as_band = [bool(r[0]) and r[1][1] > r[1][2] for r in rows_t]
    reads_as_columns = [bool(r[0]) and r[1][2] > r[1][1] for r in rows_a]
    picks_t, effects_t = pick_documents([r[1][0] for r in rows_t], [r[2] for r in rows_t], reads_as_band,
                                        [r[3] for r in rows_t], taken_rows(kept_t, taken.get(tweets)))
    picks_a, effects_a = pick_documents([r[1][0] for r in rows_a], [r[2] for r in rows_a], reads_as_columns,
                                        [r[3] for r in rows_a], taken_rows(kept_a, taken.get(articles)))
    picks = {**{f"tweet {k}": kept_t[i] for k, i in picks_t.items()},
             **{f"article {k}": kept_a[i] for k, i in picks_a.items()}}
    return StepRate(step.number, step.claim, f"{tweets} and {articles}", len(rows_t) * len(rows_a), pairs, picks,
                    {**{f"tweet {k}": v for k, v in effects_t.items()},
                     **{f"article {k}": v for k, v in effects_a.items()}},
                    {"tweets diagonal": [len(rows_t), sum(r[1][3][0] for r in rows_t)],
                     "tweets columnar": [len(rows_t), sum(r[1][3][1] for r in rows_t)],
                     "tweets reading as a band": [len(rows_t), sum(reads_as_band)],
                     "articles columnar": [len(rows_a), sum(r[1][3][1] for r in rows_a)],
                     "articles diagonal": [len(rows_a), sum(r[1][3][0] for r in rows_a)]},
                    {k: tweets if k.startswith("tweet ") else articles for k in picks})


def _said(rate: StepRate) -> str:
    tweets, articles = rate.parts["tweets diagonal"], rate.parts["articles columnar"]
    out = (f"Over the test splits: {tweets[1]:,} of {tweets[0]:,} tweets ({tweets[1] / tweets[0]:.0%}) are more "
           f"diagonal than their rows shuffled among their keys, {articles[1]:,} of {articles[0]:,} articles "
           f"({articles[1] / articles[0]:.0%}) more columnar, and the claim holds for {rate.rate:.1%} of "
           f"(tweet, article) pairs. Where the claim is false, about 5% pass each side by chance.")
    columnar = rate.parts.get("tweets columnar")
    if columnar:
        band = rate.parts.get("tweets reading as a band", [0, 0])
        out += (f" Tweets are columnar too: {columnar[1]:,} of {columnar[0]:,} ({columnar[1] / columnar[0]:.1%}) are "
                f"more columnar than the same null, so on our SANets columns do not separate topic from sentiment; "
                f"{band[1]:,} tweets are diagonal beyond the null and further towards a band than towards columns.")
    return out


STEP = Step(3, "sentiment attention is band-diagonal and topic attention columnar (each beyond its rows' weights "
               "shuffled among their keys)",
            ("tweets-sanet", "bbc-news-sanet"), ("tweets", "bbc-news"), over_split=_over_split, said=_said)
