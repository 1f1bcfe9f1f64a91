"""Attention statistics over a whole split of a data set, in the form of the SANet paper's Table 2.

``split_statistics`` runs a classifier over every document of a split, a chunk at a time, and
keeps one row per self-attention matrix: the document, its true and predicted label, the map
(HCAN branch ``a``/``b``, SANet block), the level, the sentence (or HA-LSTM time step), the head,
the matrix size and every metric of ``metrics.METRICS`` (the Gini coefficient and diagonality
b = 1..5). Attention tensors are dropped after each batch, so memory holds only these rows.

Readings, where the paper leaves room:
- An aggregate is the mean over matrices (SANet reports one mean per test set; its flat model
  has one matrix per document and block, so there the two readings coincide).
- Matrices over fewer than two real positions are left out: a one-word sentence has Gini 0 and
  diagonality 1 by construction, which says nothing about the model.
- Gini is the paper's: over the n x n cells of a matrix (``metrics.gini``).

Every figure comes with its baseline: the value an even spread gives a matrix of the same size
(``metrics.even_spread``, one per matrix, so means are length-matched), and the excess over it.
An even spread's Gini is 0 at every size, so Gini's "excess" is the Gini itself: it says the map
is not even, not that it is sharper than a map of no meaning would be (a random Dirichlet(1) map
over 100 keys already has Gini about 0.5, and Gini grows with the number of cells); compare Gini
across models or data sets only at matched lengths (``versus`` does), or against a random map.
Verdicts (``summary``, ``versus``) are decided on the excess, never on raw means: an even spread
over a 15-word tweet already has 41% of its weight within 3 positions of the diagonal, over a
1,000-word article under 1%, so raw means of data sets of different lengths differ whatever the
models do. Where two data sets are compared, matrices are compared within matched length buckets,
and the noise is a bootstrap over documents (matrices of one document are not independent).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import torch

from hierattn.analysis import metrics
from hierattn.analysis.explain import map_title
from hierattn.analysis.metrics import BANDWIDTHS, even_spread, metric_columns, named, names
from hierattn.checkpoint.classifier import Classifier
from hierattn.contract import AttentionMap
from hierattn.data.batches import streamed_batches

GROUPINGS = {"overall": None, "level": "level", "map": "map", "head": "head", "map and head": "map_head",
             "class": "label"}

# SANet Table 2 (SANet base, test sets), in %: the figures of its columns (``PAPER_METRICS``).
PAPER_METRICS = ("gini", *(f"diagonality_b{b}" for b in BANDWIDTHS))
SANET_TABLE2 = {
    "topic": {"AG": [55.31, 7.44, 11.86, 16.21, 20.42, 24.48], "DBP.": [67.94, 8.49, 13.80, 18.88, 23.74, 28.25],
              "Yah. A.": [67.45, 6.34, 9.83, 13.28, 16.59, 19.65]},
    "sentiment": {"Yelp P.": [65.16, 5.02, 7.89, 10.62, 13.19, 15.62], "Yelp F.": [84.18, 23.54, 36.89, 45.49, 50.90,
                                                                                   54.54],
                  "Amz. F.": [89.50, 41.77, 62.35, 73.53, 79.49, 83.09], "Amz. P.": [87.76, 40.01, 60.34, 71.43,
                                                                                     77.21, 80.56]},
}
# The paper's summary means leave Yelp Review Polarity out of sentiment (its §5.3): 87.15% and 63.48%.
PAPER_EXCLUDED = {"Yelp P."}


def paper_means() -> dict[str, dict[str, float]]:
    """The SANet paper's mean per task (topic / sentiment), in %, per metric it reports
    (``PAPER_METRICS``), as its §5.3 quotes them."""
    out = {}
    for task, columns in SANET_TABLE2.items():
        kept = [v for name, v in columns.items() if name not in PAPER_EXCLUDED]
        out[task] = {m: sum(v[i] for v in kept) / len(kept) for i, m in enumerate(PAPER_METRICS)}
    return out


def batch_budget(classifier: Classifier, batch_size: int = 32) -> tuple[int, int]:
    """(documents per batch, attention cells such a batch holds at the model's caps): at most
    ``batch_size`` documents, and no more than fit ``limits.EXPLANATION_CELLS`` together (one at the
    least), the budget one explanation has. A batch's maps are reduced to their metrics before the
    next batch runs. Batches of 32 on a transformer of a 512-token window held every layer's maps
    of 32 documents: ``stats --documents 20`` on MiniLM with BBC articles peaked at 12.7 GB."""
    from hierattn.limits import EXPLANATION_CELLS
    from hierattn.models.footprint import attention_cells

    text, model = classifier.text_config, classifier.model
    forward = getattr(model, "forward_cells", None)  # a transformer: its pass's peak, not only what it keeps
    cells = forward(text.max_sentences, text.max_words) if callable(forward) else attention_cells(
        model, text.max_sentences, text.max_words)
    if not cells:
        return batch_size, 0
    documents = max(1, min(batch_size, int(EXPLANATION_CELLS.value) // cells))
    return documents, documents * cells


@torch.inference_mode()
def split_statistics(classifier: Classifier, texts: list[str], labels: list[str] | None = None,
                     batch_size: int = 32, progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """One row per self-attention matrix of every document in ``texts`` (see the module doc), with
    each metric's even-spread value at the matrix's size (``gini_even``, ``diagonality_b1_even``, ...).

    ``labels``: the documents' true class names (None: unknown). ``progress(done, total)`` is
    called after every batch; a batch holds at most ``batch_size`` documents, fewer where their
    attention would pass one explanation's budget (``batch_budget``). Empty frame (with the
    columns) when the model has no self-attention.
    """
    frames, done = [], 0
    batch_size = batch_budget(classifier, batch_size)[0]
    for positions, _, batch in streamed_batches(texts, classifier.text_config, classifier.vocab, batch_size):
        out = classifier.model(batch.to(classifier.device), return_attentions=True)
        predicted = out.logits.argmax(-1).cpu()
        for name, a in out.attentions.items():
            if not a.is_self_attention:
                continue
            a = AttentionMap(a.weights.float().cpu(), a.axes, a.level, a.mask.cpu())
            cols = metric_columns(a)
            index = cols.pop("batch_index").tolist()
            frame = pd.DataFrame({k: v.numpy() for k, v in cols.items()})
            frame.insert(0, "document", [positions[i] for i in index])
            frame.insert(1, "label", [labels[positions[i]] if labels else "?" for i in index])
            frame.insert(2, "predicted", [classifier.labels[int(predicted[i])] for i in index])
            frame.insert(3, "map", name)
            frame.insert(4, "level", a.level)
            frames.append(frame)
        del out  # this batch's maps, before the next batch computes its own
        done += len(positions)
        if progress:
            progress(done, len(texts))
    figures = names()
    columns = ["document", "label", "predicted", "map", "level", "group", "head", "size"] + figures
    if not frames:
        return with_even_spread(pd.DataFrame(columns=columns))
    rows = pd.concat(frames, ignore_index=True)[columns]
    for c in ("label", "predicted", "map", "level"):
        rows[c] = rows[c].astype("category")
    rows[figures] = rows[figures].astype("float32")
    rows = with_even_spread(rows)
    return rows.sort_values(["document", "map", "group", "head"], kind="stable").reset_index(drop=True)


def with_even_spread(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with each metric's even-spread value for its matrix's ``size`` (columns ``*_even``)."""
    even = even_spread(rows["size"].to_numpy(dtype=np.float64))
    return rows.assign(**{m.even_name: even[m.name].astype("float32") for m in metrics.METRICS})


def grouped_by(rows: pd.DataFrame, by: str | None) -> pd.DataFrame:
    """``rows`` with the derived ``map_head`` column when that is the grouping."""
    if by != "map_head":
        return rows
    return rows.assign(map_head=rows["map"].astype(str) + " · head " + (rows["head"] + 1).astype(str))


def metric_groups(rows: pd.DataFrame, by: str | None, metric: str) -> dict[str, list[float]]:
    """One metric's values per group of ``by`` (None: all matrices), named as ``table2`` names its
    columns: what the box plots show."""
    if by is None:
        return {"all matrices": rows[metric].tolist()}
    return {(f"head {k + 1}" if by == "head" else str(k)): v[metric].tolist()
            for k, v in grouped_by(rows, by).groupby(by, observed=True)}


KINDS = ("measured", "even spread", "excess")  # the three columns of every group in ``table2``


def table2(rows: pd.DataFrame, by: str | None = None) -> pd.DataFrame:
    """SANet Table 2's layout with its baseline: one row per metric (in %), and for each value of
    ``by`` (a column of ``rows``: level, map, head, label; or ``map_head``, each head of each map
    apart; None: all matrices) three columns: the mean measured value, the mean even-spread value
    over the same matrices, and the excess of the first over the second. Columns are named
    ``measured``, ``even spread``, ``excess`` without ``by``, else ``"<group> · measured"``, ...
    Last row, the matrix count (in each group's ``measured`` column)."""
    rows = grouped_by(rows, by)
    figures, evens = names(), [m.even_name for m in metrics.METRICS]
    if by is None:
        groups = {"": rows}
    else:
        groups = {(f"head {k + 1}" if by == "head" else str(k)): g for k, g in rows.groupby(by, observed=True)}
    columns = {}
    for name, g in groups.items():
        means = g[figures + evens].astype("float64").mean() * 100
        measured = means[figures].set_axis(figures)
        even = means[evens].set_axis(figures)
        prefix = f"{name} · " if name else ""
        for kind, values in zip(KINDS, (measured, even, measured - even)):
            columns[prefix + kind] = pd.concat([values, pd.Series({"matrices": float(len(g)) if kind == "measured"
                                                                   else np.nan})])
    table = pd.DataFrame(columns)
    return table.rename(index={m.name: m.label for m in metrics.METRICS})


def table2_by_group(table: pd.DataFrame) -> pd.DataFrame:
    """``table2``'s figures one row per group, for many groups (HCAN's maps x heads made it 48
    columns wide): the matrix count, and each metric's excess over an even spread in points, or
    its measured value where an even spread gives the same at every size (Gini: 0, so the value is
    its own excess)."""
    groups = [c.removesuffix(" · measured") for c in table.columns if c.endswith("measured")]
    out = {}
    for group in groups:
        prefix = f"{group} · " if group != "measured" else ""
        measured, excess = table[f"{prefix}measured"], table[f"{prefix}excess"]
        first, _, rest = group.partition(" · ")
        label = map_title(first) + (f" · {rest}" if rest else "") if prefix else "all"
        out[label] = {"matrices": int(measured["matrices"])}
        for m in metrics.METRICS:
            if m.even_varies:
                out[label][f"{m.short} excess"] = excess[m.label]
            else:
                out[label][m.short] = measured[m.label]
    return pd.DataFrame.from_dict(out, orient="index")


# A difference smaller than this (in share of attention, 0..1) is no finding, whatever its interval:
# float rounding alone separates two uniform maps by 1e-7.
MIN_EFFECT = 0.01
MIN_BUCKET = 20  # matrices of each data set for a length bucket to be compared
RESAMPLES = 1000
# Length buckets [edge_k, edge_k+1), a factor sqrt(2) apart from 2 positions up.
BUCKET_EDGES = np.unique(np.round(2 * np.sqrt(2) ** np.arange(0, 30)).astype(int))


def _at_level(rows: pd.DataFrame, level: str | None) -> pd.DataFrame:
    return rows if level in (None, "all") else rows[rows["level"] == level]


def _by_document(rows: pd.DataFrame, values: np.ndarray, buckets: np.ndarray | None = None):
    """(sums, counts): per document (rows of the result) and bucket (columns), the sum of
    ``values`` and the number of matrices."""
    documents, d = np.unique(rows["document"].to_numpy(), return_inverse=True)
    b = np.zeros(len(rows), dtype=int) if buckets is None else buckets
    k = int(b.max()) + 1 if len(b) else 1
    sums, counts = np.zeros((len(documents), k)), np.zeros((len(documents), k))
    np.add.at(sums, (d, b), values)
    np.add.at(counts, (d, b), 1)
    return sums, counts


def _resampled_means(sums: np.ndarray, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(RESAMPLES, buckets) means over matrices of documents drawn with replacement (NaN where a
    draw has no matrix in a bucket)."""
    n = len(sums)
    weights = rng.multinomial(n, np.full(n, 1 / n), size=RESAMPLES).astype(np.float64)  # copies of each document
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weights @ sums) / (weights @ counts)


def _verdict(value: float, low: float, high: float, above: str, below: str) -> tuple[str, str]:
    if abs(value) < MIN_EFFECT:
        return "no finding", f"the difference is under {100 * MIN_EFFECT:.0f} point"
    if low > 0:
        return above, "its 95% interval lies above 0"
    if high < 0:
        return below, "its 95% interval lies below 0"
    return "no finding", "within noise: its 95% interval includes 0"


def summary(rows: pd.DataFrame, level: str | None = "word", seed: int = 0) -> dict:
    """Per metric, over the matrices at ``level`` (None or "all": every level): the mean measured
    value, the mean even-spread value at the same sizes, their difference (``excess``), a 95%
    bootstrap interval of the excess over documents, and the verdict: "above an even spread",
    "below an even spread" or "no finding" (under 1 point, or an interval that includes 0).
    Values are shares (0..1). Empty metrics when there is no matrix."""
    rows = _at_level(rows, level)
    out = {"level": level or "all", "documents": int(rows["document"].nunique()) if len(rows) else 0,
           "matrices": len(rows), "metrics": {}}
    if rows.empty:
        return out
    rng = np.random.default_rng(seed)
    for m in names():
        measured, even = rows[m].to_numpy(np.float64), rows[named(m).even_name].to_numpy(np.float64)
        excess = measured - even
        draws = _resampled_means(*_by_document(rows, excess), rng)[:, 0]
        low, high = np.nanpercentile(draws, [2.5, 97.5])
        verdict, reason = _verdict(excess.mean(), low, high, "above an even spread", "below an even spread")
        out["metrics"][m] = {"measured": measured.mean(), "even_spread": even.mean(), "excess": excess.mean(),
                             "interval": [float(low), float(high)], "verdict": verdict, "reason": reason}
    return out


def length_bucket(sizes) -> np.ndarray:
    """The length bucket of each matrix size (``BUCKET_EDGES``)."""
    return np.searchsorted(BUCKET_EDGES, np.asarray(sizes), side="right") - 1


def versus(topic: pd.DataFrame, sentiment: pd.DataFrame, level: str | None = "word", seed: int = 0) -> dict:
    """SANet's finding (its section 5.3: sentiment attention sparser and more diagonal than topic
    attention) judged on two sets of statistics rows, per metric:

    - ``raw``: sentiment mean minus topic mean, as the paper compares them (and as this app did);
    - ``length_matched``: the difference of the excess over an even spread, within length buckets
      (``BUCKET_EDGES``) holding at least ``MIN_BUCKET`` matrices of each set, weighted by
      n_topic n_sentiment / (n_topic + n_sentiment); ``buckets`` lists them;
    - each with a 95% interval from resampling the documents of each set (``RESAMPLES`` draws), and
      a verdict: "holds" (sentiment higher), "reversed" or "no finding";
    - ``verdict``: the length-matched one, and only where the side found higher is itself above an
      even spread (``summary``'s verdict, in ``topic`` and ``sentiment``): attention less diagonal
      than an even spread is not "more diagonal" for being less so than the other's. Where no
      bucket is shared, "no finding": matrices of different lengths cannot be compared (a fixed
      focus on k words has Gini 1 - k/n).
    Values are shares (0..1)."""
    sets = {"topic": _at_level(topic, level), "sentiment": _at_level(sentiment, level)}
    rng = np.random.default_rng(seed)
    out = {"level": level or "all", "matrices": {t: len(r) for t, r in sets.items()},
           "documents": {t: int(r["document"].nunique()) if len(r) else 0 for t, r in sets.items()}, "metrics": {}}
    if any(r.empty for r in sets.values()):
        return out
    buckets = {t: length_bucket(r["size"].to_numpy()) for t, r in sets.items()}
    n = {t: np.bincount(b, minlength=len(BUCKET_EDGES)) for t, b in buckets.items()}
    shared = np.nonzero((n["topic"] >= MIN_BUCKET) & (n["sentiment"] >= MIN_BUCKET))[0]
    own = {t: summary(r, None, seed)["metrics"] for t, r in sets.items()}
    for m in names():
        row = {t: {k: own[t][m][k] for k in ("measured", "even_spread", "excess", "interval", "verdict")} for t in sets}
        raw_draws = [_resampled_means(*_by_document(r, r[m].to_numpy(np.float64)), rng)[:, 0] for r in sets.values()]
        raw = row["sentiment"]["measured"] - row["topic"]["measured"]
        low, high = np.nanpercentile(raw_draws[1] - raw_draws[0], [2.5, 97.5])
        verdict, reason = _verdict(raw, low, high, "holds", "reversed")
        row["raw"] = {"difference": raw, "interval": [float(low), float(high)], "verdict": verdict, "reason": reason}
        row["length_matched"] = _length_matched(sets, m, buckets, n, shared, rng)
        row["verdict"], row["reason"] = row["length_matched"]["verdict"], row["length_matched"]["reason"]
        higher = {"holds": "sentiment", "reversed": "topic"}.get(row["verdict"])
        if higher and row[higher]["verdict"] != "above an even spread":
            row["verdict"], row["reason"] = "no finding", (
                f"the {higher} model's own attention is not above an even spread "
                f"({100 * row[higher]['excess']:+.2f} points), only less far below it than the other's")
        out["metrics"][m] = row
    return out


def _length_matched(sets: dict, metric: str, buckets: dict, counts: dict, shared: np.ndarray,
                    rng: np.random.Generator) -> dict:
    """``versus``'s length-matched comparison of one metric: per shared bucket, each set's mean
    excess over an even spread; their weighted difference (sentiment minus topic), its bootstrap
    interval and verdict, and the buckets."""
    if len(shared) == 0:
        return {"difference": None, "interval": None, "buckets": [], "verdict": "no finding",
                "reason": "the two sets of matrices share no length bucket"}
    weight = counts["topic"][shared] * counts["sentiment"][shared] / (counts["topic"][shared]
                                                                        + counts["sentiment"][shared])
    means, draws = {}, {}
    for t, r in sets.items():
        excess = r[metric].to_numpy(np.float64) - r[named(metric).even_name].to_numpy(np.float64)
        sums, n = (_padded(a, len(BUCKET_EDGES))[:, shared] for a in _by_document(r, excess, buckets[t]))
        means[t] = sums.sum(0) / n.sum(0)
        draws[t] = _resampled_means(sums, n, rng)
    difference = float((weight * (means["sentiment"] - means["topic"])).sum() / weight.sum())
    per_draw = draws["sentiment"] - draws["topic"]
    usable = ~np.isnan(per_draw)  # a draw may miss a bucket: weigh the buckets it has
    drawn = (np.where(usable, per_draw, 0) * weight).sum(1) / (usable * weight).sum(1)
    low, high = np.nanpercentile(drawn, [2.5, 97.5])
    verdict, reason = _verdict(difference, low, high, "holds", "reversed")
    return {"difference": difference, "interval": [float(low), float(high)], "verdict": verdict, "reason": reason,
            "buckets": [{"sizes": [int(BUCKET_EDGES[k]), int(BUCKET_EDGES[k + 1] - 1)],
                         "matrices": {t: int(counts[t][k]) for t in sets},
                         "excess": {t: float(means[t][i]) for t in sets}} for i, k in enumerate(shared)]}


def _padded(a: np.ndarray, columns: int) -> np.ndarray:
    return np.pad(a, ((0, 0), (0, columns - a.shape[1])))


# The panel's columns: (a short label, what the column holds).
TVS_COLUMNS = {
    "topic · measured": ("topic", "mean over the topic model's word-level matrices, in %"),
    "topic · even spread": ("topic, even", "the same matrices spread evenly: what length alone gives"),
    "sentiment · measured": ("sentiment", "mean over the sentiment model's word-level matrices, in %"),
    "sentiment · even spread": ("sentiment, even", "the same matrices spread evenly: what length alone gives"),
    "topic (SANet paper)": ("paper: topic", "SANet Table 2, mean of AG News, DBPedia and Yahoo! Answers"),
    "sentiment (SANet paper)": ("paper: sentiment", "SANet Table 2, mean of Yelp F., Amazon F. and Amazon P."),
    "raw difference": ("raw Δ", "sentiment minus topic, raw means (as the paper compares them), in points"),
    "length-matched difference": ("matched Δ", "sentiment minus topic, excess over an even spread, within "
                                               "matched length buckets, in points: the verdict's figure"),
    "interval low": ("95% low", "bootstrap interval of the matched difference (documents resampled)"),
    "interval high": ("95% high", "bootstrap interval of the matched difference (documents resampled)"),
}
CLAIMS = {"gini": "sentiment attention sparser (Gini)", "diagonality_b3": "sentiment attention more diagonal (b = 3)"}


def topic_versus_sentiment(topic: pd.DataFrame, sentiment: pd.DataFrame, level: str = "word") -> tuple[pd.DataFrame,
                                                                                                       dict]:
    """The topic-versus-sentiment panel: a table (one row per metric, in %) of each set's measured
    and even-spread means, the SANet paper's means, the raw difference and the length-matched
    difference of the excess with its 95% interval; and ``versus``'s result, whose verdicts (the
    length-matched ones) the panel states for ``CLAIMS``."""
    judged = versus(topic, sentiment, level)
    paper = paper_means()
    table = {}
    for m, row in judged["metrics"].items():
        matched = row["length_matched"]
        low, high = matched["interval"] or (None, None)
        table[named(m).label] = {
            "topic · measured": 100 * row["topic"]["measured"],
                "topic · even spread": 100 * row["topic"]["even_spread"],
            "sentiment · measured": 100 * row["sentiment"]["measured"],
            "sentiment · even spread": 100 * row["sentiment"]["even_spread"],
            "topic (SANet paper)": paper["topic"].get(m), "sentiment (SANet paper)": paper["sentiment"].get(m),
            "raw difference": 100 * row["raw"]["difference"],
            "length-matched difference": None if matched["difference"] is None else 100 * matched["difference"],
            "interval low": None if low is None else 100 * low, "interval high": None if high is None else 100 * high}
    return pd.DataFrame(table).T.astype("float64"), judged
