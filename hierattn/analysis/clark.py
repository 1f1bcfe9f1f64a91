"""Where a transformer's heads look, in the terms of Clark et al. (2019), "What does BERT look at?"
(sections 3-4, Figures 1-4): per layer and head, the share of attention that goes to the first
special token ([CLS] for BERT, <s> for RoBERTa), to the other special tokens ([SEP], </s>), to
punctuation, to the token itself, to the previous and to the next token, and the entropy of each
query's distribution; each beside what an even spread over the same tokens gives.

Clark et al. find BERT-base's middle layers sinking on [SEP] and broad heads in its first layers;
MiniLM sinks on [CLS] instead. Those are findings only beside the even spread, which is why each
figure carries it: with T tokens of which s are special, an even spread gives the first special
1/T, the other specials (s - 1)/T, punctuation p/T, self, previous and next 1/T each (previous and
next over the queries that have one), and an entropy of ln T nats (the most a distribution over T keys can have).

Everything is read over one document's real tokens (padding never, special tokens always, as the
model reads them); a "share" is the mean over queries of the weight a query gives that group.
The rows ask nothing of the model but its layered self-attention map (``heads.layered_map``).
"""
from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable, Iterable

import numpy as np
import torch

from hierattn.analysis.battery_split import bootstrap
from hierattn.analysis.explain import Explanation
from hierattn.analysis.heads import layer_weights, layered_map

TARGETS = ("first special", "other specials", "punctuation", "self", "previous", "next")
SUBWORD_MARKS = ("##", "Ġ", "▁", "Ċ")  # WordPiece continuation, byte-level BPE and SentencePiece spaces


def is_punctuation(piece: str) -> bool:
    """A piece made of punctuation only, once its tokenizer's marks are taken off ("," "." "Ġ,")."""
    text = piece
    for mark in SUBWORD_MARKS:
        text = text.replace(mark, "")
    return bool(text) and all(unicodedata.category(c).startswith("P") for c in text)


def groups(subwords: list[tuple[str, int]], t: int) -> dict[str, torch.Tensor]:
    """Boolean masks over the ``t`` real tokens: the first special token (only when the sequence
    starts with one), the other special tokens, punctuation."""
    word = torch.tensor([w for _, w in subwords][:t] if subwords else [-1] * t)
    special = word == -1  # a piece in no word (-2) is text read, punctuation most often
    first = torch.zeros(t, dtype=torch.bool)
    if t and special[0]:
        first[0] = True
    punctuation = torch.tensor([is_punctuation(p) and w != -1 for p, w in subwords][:t] if subwords else [False] * t,
                               dtype=torch.bool)
    return {"first special": first, "other specials": special & ~first, "punctuation": punctuation}


def profile(ex: Explanation) -> list[dict]:
    """One row per (layer, head): each target's share and ``<target>_even``, ``entropy`` and
    ``entropy_even`` (nats), ``size`` (T) and the first special token's text. [] for a model
    without a layered self-attention map over subword tokens."""
    name = layered_map(ex)
    if name is None:
        return []
    return ex.remembered("clark.profile", lambda: _profile(ex, name))


def _profile(ex: Explanation, name: str) -> list[dict]:
    rows = []
    for layer in range(ex.layers(name)):  # a layer at a time: a 512-token MiniLM's whole map is 150 MB in float64
        weights = layer_weights(ex, name, layer)  # (H, T, T): queries x keys, real tokens
        heads, t = weights.shape[0], weights.shape[-1]
        masks = groups(ex.subwords, t)
        # a matrix-vector product per group: indexing the keys copied every layer three times over
        shares = {target: (weights @ mask.to(weights.dtype)).mean(-1) for target, mask in masks.items()}
        evens = {target: float(mask.sum()) / t for target, mask in masks.items()}
        zero = torch.zeros(heads, dtype=torch.float64)
        shares["self"] = weights.diagonal(0, -2, -1).mean(-1)
        # previous / next: over the queries that have one (as the head overview reads them)
        shares["previous"] = weights.diagonal(-1, -2, -1).mean(-1) if t > 1 else zero
        shares["next"] = weights.diagonal(1, -2, -1).mean(-1) if t > 1 else zero
        evens.update({"self": 1 / t, "previous": 1 / t, "next": 1 / t})
        entropy = torch.special.entr(weights).sum(-1).mean(-1)  # -w ln w (0 at 0), mean over queries, nats
        first = ex.subwords[0][0] if ex.subwords and masks["first special"].any() else None
        for head in range(heads):
            row = {"layer": layer, "head": head, "size": t, "first_special": first,
                   "entropy": float(entropy[head]), "entropy_even": math.log(t) if t else 0.0}
            for target in TARGETS:
                row[target] = float(shares[target][head])
                row[f"{target}_even"] = evens[target]
            rows.append(row)
    return rows


def by_layer(rows: list[dict]) -> list[dict]:
    """The rows averaged over the heads of each layer (Clark et al.'s per-layer figures)."""
    out = []
    for layer in sorted({r["layer"] for r in rows}):
        mine = [r for r in rows if r["layer"] == layer]
        row = {"layer": layer, "heads": len(mine), "size": mine[0]["size"], "first_special": mine[0]["first_special"]}
        for key in ("entropy", "entropy_even", *TARGETS, *(f"{t}_even" for t in TARGETS)):
            row[key] = float(np.mean([r[key] for r in mine]))
        out.append(row)
    return out


def over_documents(explanations: Iterable[Explanation], draws: int = 1000, seed: int = 0) -> list[dict]:
    """Per layer, each figure's mean over the documents with a bootstrap 95% interval (documents
    resampled), and each even spread's mean: ``{"layer", "documents", target: (mean, low, high),
    f"{target}_even": mean, ...}``. The explanations are read one at a time."""
    return summarise([by_layer(rows) for rows in (profile(ex) for ex in explanations) if rows], draws, seed)


def summarise(per_document: list[list[dict]], draws: int = 1000, seed: int = 0) -> list[dict]:
    """``over_documents`` from each document's ``by_layer`` rows."""
    if not per_document:
        return []
    out = []
    for i, first in enumerate(per_document[0]):
        row = {"layer": first["layer"], "documents": len(per_document), "first_special": first["first_special"]}
        for key in (*TARGETS, "entropy"):
            row[key] = bootstrap([layers[i][key] for layers in per_document], draws, seed)
            row[f"{key}_even"] = float(np.mean([layers[i][f"{key}_even"] for layers in per_document]))
        out.append(row)
    return out


def over_split(classifier, texts: list[str], progress: Callable[[int, int], None] | None = None
               ) -> tuple[list[dict], list[dict]]:
    """Every head over ``texts`` (``heads.split_overview``) and every layer by Clark et al.'s
    figures (``summarise``), from one explanation of each text; ``progress(done, total)`` after each."""
    from hierattn.analysis import heads
    from hierattn.analysis.explain import explained

    layers = []

    def each():
        for i, ex in explained(classifier, texts):
            if progress:
                progress(i + 1, len(texts))
            if ex is not None:
                rows = profile(ex)
                if rows:
                    layers.append(by_layer(rows))
                yield ex

    head_rows = heads.split_overview(each())
    return head_rows, summarise(layers)


def words_with_specials(ex: Explanation, layer: int, head: int | None = None) -> tuple[torch.Tensor, list[str]]:
    """One layer's token attention read at the word level by Clark et al.'s rule with the special
    tokens kept (their section 4: a word's pieces' received attention summed, its pieces' own
    attention averaged): (words, words + special tokens), each row summing to 1, and the keys'
    labels (the words, then each special token by its text and position). The word map the app
    draws by default is this matrix without the special columns, each row renormalised; a row that
    puts most of its weight on [CLS] or [SEP] then looks spread over the words, which is why the
    switch exists. ``head`` None: the mean of the heads."""
    name = layered_map(ex)
    if name is None:
        raise ValueError("this model has no self-attention over subword tokens")
    weights = layer_weights(ex, name, layer)  # (H, T, T)
    weights = weights.mean(0) if head is None else weights[head]
    t = weights.shape[-1]
    word = torch.tensor([w for _, w in ex.subwords][:t])
    n_words = int(word.max()) + 1 if (word >= 0).any() else 0
    member = (word.unsqueeze(-1) == torch.arange(n_words)).double()  # (T, W)
    special = (word < 0).nonzero().flatten()
    keys = torch.cat([weights @ member, weights[:, special]], dim=1)  # (T, W + S): received, summed
    queries = member / member.sum(0, keepdim=True).clamp_min(1.0)  # each word's pieces averaged
    matrix = queries.T @ keys  # (W, W + S)
    words = [""] * n_words
    for piece, w in ex.subwords[:t]:  # a word's label: its pieces joined, marks off
        if w >= 0:
            text = piece
            for mark in SUBWORD_MARKS:
                text = text.replace(mark, "")
            words[w] += text
    labels = words + [f"{ex.subwords[int(i)][0]} @{int(i)}" for i in special]
    return matrix, labels
