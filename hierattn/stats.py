"""Attention statistics over a whole split of a data set, in the form of the SANet paper's Table 2.

``split_statistics`` runs a classifier over every document of a split, a chunk at a time, and
keeps one row per self-attention matrix: the document, its true and predicted label, the map
(HCAN branch ``a``/``b``, SANet block), the level, the sentence (or HA-LSTM time step), the head,
the matrix size and its Gini coefficient and diagonality b = 1..5 (``metrics``). Attention
tensors are dropped after each batch, so memory holds only these rows.

Readings, where the paper leaves room:
- An aggregate is the mean over matrices (SANet reports one mean per test set; its flat model
  has one matrix per document and block, so there the two readings coincide).
- Matrices over fewer than two real positions are left out: a one-word sentence has Gini 0 and
  diagonality 1 by construction, which says nothing about the model.
- Gini is the paper's: over the n x n cells of a matrix (``metrics.gini``).
"""
from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import torch

from .checkpoint import Classifier
from .data import streamed_batches
from .metrics import BANDWIDTHS, METRICS, metric_columns
from .outputs import AttentionMap

METRIC_NAMES = {"gini": "Gini coefficient", **{f"diagonality_b{b}": f"Diagonality (bandwidth = {b})" for b in BANDWIDTHS}}
GROUPINGS = {"overall": None, "level": "level", "map": "map", "head": "head", "map and head": "map_head",
             "class": "label"}

# SANet Table 2 (SANet base, test sets), in %: Gini, then diagonality b = 1..5.
SANET_TABLE2 = {
    "topic": {"AG": [55.31, 7.44, 11.86, 16.21, 20.42, 24.48], "DBP.": [67.94, 8.49, 13.80, 18.88, 23.74, 28.25],
              "Yah. A.": [67.45, 6.34, 9.83, 13.28, 16.59, 19.65]},
    "sentiment": {"Yelp P.": [65.16, 5.02, 7.89, 10.62, 13.19, 15.62], "Yelp F.": [84.18, 23.54, 36.89, 45.49, 50.90, 54.54],
                  "Amz. F.": [89.50, 41.77, 62.35, 73.53, 79.49, 83.09], "Amz. P.": [87.76, 40.01, 60.34, 71.43, 77.21, 80.56]},
}
# The paper's summary means leave Yelp Review Polarity out of sentiment (its §5.3): 87.15% and 63.48%.
PAPER_EXCLUDED = {"Yelp P."}


def paper_means() -> dict[str, dict[str, float]]:
    """The SANet paper's mean per task (topic / sentiment), in %, per metric, as its §5.3 quotes them."""
    out = {}
    for task, columns in SANET_TABLE2.items():
        kept = [v for name, v in columns.items() if name not in PAPER_EXCLUDED]
        out[task] = {m: sum(v[i] for v in kept) / len(kept) for i, m in enumerate(METRICS)}
    return out


@torch.inference_mode()
def split_statistics(classifier: Classifier, texts: list[str], labels: list[str] | None = None,
                     batch_size: int = 32, progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """One row per self-attention matrix of every document in ``texts`` (see the module doc).

    ``labels``: the documents' true class names (None: unknown). ``progress(done, total)`` is
    called after every batch. Empty frame (with the columns) when the model has no self-attention.
    """
    frames, done = [], 0
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
        done += len(positions)
        if progress:
            progress(done, len(texts))
    columns = ["document", "label", "predicted", "map", "level", "group", "head", "size"] + METRICS
    if not frames:
        return pd.DataFrame(columns=columns)
    rows = pd.concat(frames, ignore_index=True)[columns]
    for c in ("label", "predicted", "map", "level"):
        rows[c] = rows[c].astype("category")
    rows[METRICS] = rows[METRICS].astype("float32")
    return rows.sort_values(["document", "map", "group", "head"], kind="stable").reset_index(drop=True)


def grouped_by(rows: pd.DataFrame, by: str | None) -> pd.DataFrame:
    """``rows`` with the derived ``map_head`` column when that is the grouping."""
    if by != "map_head":
        return rows
    return rows.assign(map_head=rows["map"].astype(str) + " · head " + (rows["head"] + 1).astype(str))


def table2(rows: pd.DataFrame, by: str | None = None) -> pd.DataFrame:
    """SANet Table 2's layout: one row per metric (in %), one column per value of ``by`` (a column
    of ``rows``: level, map, head, label; or ``map_head``, each head of each map apart) or a single
    ``all`` column; last row, the matrix count."""
    rows = grouped_by(rows, by)
    if by is None:
        means = rows[METRICS].mean().to_frame("all")
        counts = pd.Series({"all": len(rows)})
    else:
        grouped = rows.groupby(by, observed=True)
        means, counts = grouped[METRICS].mean().T, grouped.size()
        if by == "head":
            means.columns = [f"head {h + 1}" for h in means.columns]
            counts.index = means.columns
        else:
            means.columns = [str(c) for c in means.columns]
            counts.index = means.columns
    table = (100 * means.astype("float64")).rename(index=METRIC_NAMES)
    table.loc["matrices"] = counts.astype("float64")
    return table


def topic_versus_sentiment(topic: pd.DataFrame, sentiment: pd.DataFrame, level: str = "word") -> tuple[pd.DataFrame, dict]:
    """Our means (in %) at ``level`` beside the SANet paper's topic and sentiment means, and whether
    the paper's finding holds here: sentiment attention sparser (higher Gini) and more diagonal
    (higher diagonality at b = 3) than topic attention."""
    ours = {task: rows.loc[rows["level"] == level, METRICS].astype("float64").mean() * 100
            for task, rows in (("topic", topic), ("sentiment", sentiment))}
    paper = paper_means()
    table = pd.DataFrame({"topic (measured)": ours["topic"], "topic (SANet paper)": pd.Series(paper["topic"]),
                          "sentiment (measured)": ours["sentiment"],
                          "sentiment (SANet paper)": pd.Series(paper["sentiment"])}).rename(index=METRIC_NAMES)
    sparser = bool(ours["sentiment"]["gini"] > ours["topic"]["gini"])
    diagonal = bool(ours["sentiment"]["diagonality_b3"] > ours["topic"]["diagonality_b3"])
    return table, {"sentiment sparser (Gini)": sparser, "sentiment more diagonal (b = 3)": diagonal}
