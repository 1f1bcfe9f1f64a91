"""Every head of a stacked self-attention over subword tokens (a transformer's), at a glance: per
layer and head, what its attention does, each figure beside what an even spread over the same
tokens gives (the head overview; Clark et al. 2019, "What does BERT look at?", sections 3-4,
name the patterns).

Per head, over one document's real tokens (special tokens included, as the model reads them):
- ``special``: the mean share of a query's attention that goes to special tokens ([CLS], [SEP], <s>);
  an even spread gives (special tokens) / T.
- ``previous`` / ``next``: the mean weight a token gives the token just before / after it; an even
  spread gives 1 / T.
- ``same word``: for pieces of a word split in two or more, the mean share they give the word's
  other pieces; an even spread gives (pieces - 1) / T. None when no word is split.
- Gini and band diagonality (b = 1) of the whole matrix, beside the even spread's (``metrics``).

A pattern is a *finding* when its share is at least ``MARGIN`` above the even spread's. A random
map (each row drawn uniformly from the simplex) gives every key 1 / T in expectation, as the even
spread does, and its mean over T queries varies by about T^-1.5 (under 0.01 from T = 22 tokens up),
so a margin of 0.3 is far beyond what a random map reaches; it is also what separates Clark et al.'s
"broad" heads from their positional ones. Over a split (``split_overview``), a pattern is a finding
when its mean excess is at least ``MARGIN`` and the lower end of its bootstrap 95% interval is above 0.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import torch

from hierattn.analysis.battery_split import bootstrap
from hierattn.analysis.explain import Explanation
from hierattn.analysis.metrics import GINI, batched_matrix_metrics, even_spread, named

MARGIN = 0.3
PATTERNS = ("special", "previous", "next", "same word")


def layered_map(ex: Explanation) -> str | None:
    """The map the overview reads: self-attention over subword tokens with a ``layer`` axis."""
    return next((n for n in ex.attentions if (a := ex.describe(n)).is_self_attention and a.level == "subword"
                 and "layer" in a.axes and "head" in a.axes), None)


def layer_weights(ex: Explanation, name: str, layer: int) -> torch.Tensor:
    """(heads, T, T) float64: one layer of a layered map over its real tokens, read alone (a layer of
    a 512-token MiniLM is 25 MB in float64; the whole map was 150 MB)."""
    a = ex.attentions.layer(name, layer)
    real = a.mask[0, 0, 0].diagonal()
    weights = a.weights[0, 0] if bool(real.all()) else a.weights[0, 0][..., real, :][..., real]  # one document: all
    return weights.double()


def overview(ex: Explanation) -> list[dict]:
    """One row per (layer, head) of ``ex``'s layered map: each pattern's share and its even-spread
    value, Gini and diagonality with theirs, and ``finding`` (the pattern furthest above its even
    value when that is at least ``MARGIN``, else None). [] for a model without such a map."""
    name = layered_map(ex)
    if name is None:
        return []
    return ex.remembered("heads.overview", lambda: [
        row for layer in range(ex.layers(name)) for row in _overview_of(ex, layer, layer_weights(ex, name, layer))])


def _overview_of(ex: Explanation, layer: int, weights: torch.Tensor) -> list[dict]:
    heads, t = weights.shape[0], weights.shape[-1]
    word = torch.tensor([w for _, w in ex.subwords][:t] if ex.subwords else [-1] * t)
    special = word == -1  # not a piece in no word (-2): that is punctuation the model reads
    shares = {"special": (weights @ special.to(weights.dtype)).mean(-1),
              "previous": weights.diagonal(-1, -2, -1).mean(-1) if t > 1 else torch.zeros(heads),
              "next": weights.diagonal(1, -2, -1).mean(-1) if t > 1 else torch.zeros(heads)}
    evens = {"special": float(special.sum()) / t, "previous": 1 / t, "next": 1 / t}
    same = (word.unsqueeze(0) == word.unsqueeze(1)) & (word >= 0).unsqueeze(0) & ~torch.eye(t, dtype=torch.bool)
    split = same.any(-1)  # pieces of a word split in two or more
    if split.any():
        shares["same word"] = (weights[..., split, :] * same[split]).sum(-1).mean(-1)
        evens["same word"] = float(same[split].sum(-1).double().mean()) / t
    shown = [GINI, named("diagonality_b1")]  # the band of one position: previous and next token together
    values = batched_matrix_metrics(weights, torch.ones(heads, t, dtype=torch.bool), shown)
    even = even_spread(t)
    rows = []
    for head in range(heads):
        row = {"layer": layer, "head": head, "size": t}
        for metric in shown:
            row[metric.name] = float(values[metric.name][head])
            row[metric.even_name] = float(even[metric.name])
        for pattern in PATTERNS:
            value = shares.get(pattern)
            row[pattern] = None if value is None else float(value[head])
            row[f"{pattern}_even"] = evens.get(pattern)
        row["finding"] = finding(row)
        rows.append(row)
    return rows


def excess(row: dict, pattern: str) -> float | None:
    value, even = row.get(pattern), row.get(f"{pattern}_even")
    return None if value is None or even is None else value - even


def finding(row: dict) -> str | None:
    """The pattern furthest above its even-spread value, when at least ``MARGIN`` above it."""
    scored = [(excess(row, p), p) for p in PATTERNS if excess(row, p) is not None]
    best = max(scored, default=(None, None))
    return best[1] if best[0] is not None and best[0] >= MARGIN else None


def grid(rows: list[dict]) -> tuple[np.ndarray, list[list[str]]]:
    """(layers, heads) of the largest excess over an even spread, and each cell's label (its finding
    and share, or "no finding")."""
    layers, heads = max(r["layer"] for r in rows) + 1, max(r["head"] for r in rows) + 1
    values, labels = np.zeros((layers, heads)), [[""] * heads for _ in range(layers)]
    for r in rows:
        scored = [excess(r, p) for p in PATTERNS if excess(r, p) is not None]
        values[r["layer"], r["head"]] = max(0.0, max(scored, default=0.0))
        labels[r["layer"]][r["head"]] = f"{r['finding']} {r[r['finding']]:.0%}" if r["finding"] else "no finding"
    return values, labels


def split_overview(explanations: Iterable[Explanation], draws: int = 1000, seed: int = 0) -> list[dict]:
    """Per (layer, head) over documents: each pattern's mean excess over its even spread with a
    bootstrap 95% interval (documents resampled), and ``finding``: the pattern whose mean excess is
    at least ``MARGIN`` and whose interval lies above 0 (the largest such), else None. The
    explanations are read one at a time (a generator holds one document's maps at once)."""
    per_document = [rows for rows in (overview(ex) for ex in explanations) if rows]
    if not per_document:
        return []
    out = []
    for i, first in enumerate(per_document[0]):
        row = {"layer": first["layer"], "head": first["head"], "documents": len(per_document)}
        best = (None, None)
        for pattern in PATTERNS:
            values = [excess(rows[i], pattern) for rows in per_document if excess(rows[i], pattern) is not None]
            if not values:
                row[pattern] = None
                continue
            row[pattern] = mean, low, _ = bootstrap(values, draws, seed)
            if mean >= MARGIN and low > 0 and (best[0] is None or mean > best[0]):
                best = (mean, pattern)
        row["finding"] = best[1]
        out.append(row)
    return out


def over_split(classifier, texts: list[str], progress: Callable[[int, int], None] | None = None) -> list[dict]:
    """``split_overview`` of ``texts`` explained one by one; ``progress(done, total)`` after each."""
    from hierattn.analysis.explain import explained

    def each():
        for i, ex in explained(classifier, texts):
            if progress:
                progress(i + 1, len(texts))
            if ex is not None:
                yield ex

    return split_overview(each())


def first_token_to_special(ex: Explanation, head: int | None = None) -> float | None:
    """The share of the first token's attention in the last layer (``head``, or the mean of heads)
    that goes to special tokens and to pieces in no word (punctuation): what the word shading,
    renormalised over words, leaves out. None for a model without layers of heads over subword
    tokens."""
    name = layered_map(ex)
    if name is None or not ex.subwords:
        return None
    a = ex.attentions.layer(name, ex.layers(name) - 1)
    row = a.weights[0, 0, :, 0, :].double()  # (heads, T)
    row = row.mean(0) if head is None else row[head]
    special = torch.tensor([w < 0 for _, w in ex.subwords][: row.shape[-1]])
    return float(row[: len(special)][special].sum())
