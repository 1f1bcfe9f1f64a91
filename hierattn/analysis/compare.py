"""Two models, one document: where each looks, aligned word by word, and how far they agree.

Works on two ``Explanation`` objects only (never on the models). The two models may read
different parts of a long document (their sentence and word caps differ), so everything is
aligned on character spans: a word is the same word in both when it has the same span in the
pasted text, and comparisons use the words (and sentences) both models read.

Word importance, one number per word that sums to 1 over the document, for any model:
- word and sentence target attention (HAN, HCAN): the word's weight in its sentence times the
  sentence's weight in the document, the share of the document vector that comes from the word;
- word target attention over the whole document (flat HCAN, MahNN channels averaged, Kim CNN's
  max-pool coverage): that weight, renormalised;
- word target attention per sentence without sentence attention (HCAN with max pooling at the
  sentence level only): the word's weight divided by the number of sentences;
- only self-attention (HCAN with max pooling, SANet, HA-LSTM): the attention each word receives,
  summed over queries and averaged over heads and maps, renormalised over the document. This is a
  proxy (what other words take from it), not a weight the classifier applies; ``source`` says so.
Sentence importance: the sentence target attention where there is one, else the sum of the
importance of its words.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch

from hierattn.analysis.explain import Explanation, head_axis
from hierattn.analysis.metrics import diagonality, even_spread, gini

TOP_K = (5, 10)
Span = tuple[int, int]


@dataclass
class Importance:
    words: dict[Span, float]  # token span -> importance; sums to 1 over the words read
    sentences: dict[int, float]  # sentence start (character) -> importance; sums to 1
    source: str  # how the numbers were derived, for captions


def _normalised(values: list[float]) -> list[float]:
    total = sum(values)
    return [v / total for v in values] if total > 0 else [1.0 / len(values)] * len(values) if values else []


def _received(ex: Explanation) -> list[float] | None:
    """Attention received per word (document order), from the word-level self-attention maps."""
    names = [n for n in ex.self_attention_names if ex.attentions[n].level == "word"]
    if not names:
        return None
    lengths = ex.sentence_lengths
    offsets = [sum(lengths[:s]) for s in range(len(lengths))]
    total = torch.zeros(sum(lengths), dtype=torch.float64)
    for name in names:
        a = ex.attentions[name]
        w = a.weights[0].to(torch.float64)
        if "head" in a.axes:
            w = w.mean(a.axis("head") - 1)
        if "layer" in a.axes:  # a transformer: what every layer's words receive, in the mean
            w = w.mean(a.axis("layer") - 1)
        received = w.sum(-2)  # (..., key)
        if "sentence" in a.axes:  # (sentence, key)
            for s, n in enumerate(lengths):
                total[offsets[s]: offsets[s] + n] += received[s, :n]
        elif "time" in a.axes:  # (time, window slot): slot k at step t holds the state of word t - 1 - k
            steps = min(received.shape[0], len(total))
            for k in range(received.shape[1]):  # word j gets slot k of step j + 1 + k
                total[: max(steps - 1 - k, 0)] += received[1 + k: steps, k]
        else:  # (key,) over the document's words
            total += received[: len(total)]
    return _normalised(total.tolist())


def importance(ex: Explanation) -> Importance | None:
    """The word and sentence importance of one explained document (see the module doc); None for a
    model without any attention."""
    sentences = ex.document.sentences
    spans = [[(t.start, t.end) for t in s.tokens] for s in sentences]
    words = ex.target_attention("word")
    sentence_weights = ex.target_attention("sentence")
    if words is not None:
        hierarchical = "sentence" in ex.attentions[ex.target_name("word")].axes
        if hierarchical and sentence_weights is not None:
            flat = [w * sentence_weights[s] for s, ws in enumerate(words) for w in ws]
            source = "word attention × sentence attention"
        elif hierarchical:
            flat = [w / len(words) for ws in words for w in ws]
            source = "word attention ÷ number of sentences"
        else:
            flat = [w for ws in words for w in ws]
            coverage = ex.attentions[ex.target_name("word")].kind == "coverage"
            source = "coverage (not attention)" if coverage else "word attention over the document"
        flat = _normalised(flat)
    else:
        flat = _received(ex)
        if flat is None:
            return None
        source = "self-attention received (a proxy: this model has no target attention)"
    by_span = dict(zip((sp for s in spans for sp in s), flat))
    if sentence_weights is not None:
        per_sentence = _normalised(list(sentence_weights))
    else:
        per_sentence = _normalised([sum(by_span[sp] for sp in s) for s in spans])
    return Importance(by_span, {s.start: v for s, v in zip(sentences, per_sentence)}, source)


def spearman(a: list[float], b: list[float]) -> float | None:
    if len(a) < 2:
        return None
    rho = pd.Series(a).corr(pd.Series(b), method="spearman")
    return None if pd.isna(rho) else float(rho)


def _top(values: dict, k: int) -> set:
    return set(sorted(values, key=lambda key: (-values[key], key))[:k])


def top_k_overlap(a: dict, b: dict, k: int) -> float | None:
    """Share of the k most important items of ``a`` that are among the k most important of ``b``
    (over the keys both have; ties broken by position). None when fewer than k items are shared."""
    common = a.keys() & b.keys()
    if len(common) < k:
        return None
    a, b = {key: a[key] for key in common}, {key: b[key] for key in common}
    return len(_top(a, k) & _top(b, k)) / k


@dataclass
class Agreement:
    words: int  # words both models read
    sentences: int
    word_spearman: float | None
    sentence_spearman: float | None
    word_top_k: dict[int, float | None]
    sentence_top_k: dict[int, float | None]
    difference: dict[Span, float]  # importance in A minus in B, each renormalised over the common words

    def table(self) -> pd.DataFrame:
        """Each measure beside what two unrelated rankings give: Spearman 0, and a top-k overlap of
        k/n on average (k of the n shared items drawn at random)."""
        def chance(k, n):
            return k / n if n >= k else None

        rows = [("Spearman rank correlation", self.word_spearman, 0.0, self.sentence_spearman, 0.0)]
        rows += [(f"top-{k} overlap", self.word_top_k[k], chance(k, self.words), self.sentence_top_k[k],
                  chance(k, self.sentences)) for k in TOP_K]
        table = pd.DataFrame(rows, columns=["measure", f"words ({self.words})", "words, if unrelated",
                                            f"sentences ({self.sentences})", "sentences, if unrelated"])
        return table.astype(dict.fromkeys(table.columns[1:], float))  # None -> NaN: "—" on the page, not "None"


def agreement(a: Importance, b: Importance) -> Agreement:
    common = sorted(a.words.keys() & b.words.keys())
    wa, wb = _normalised([a.words[s] for s in common]), _normalised([b.words[s] for s in common])
    sentences = sorted(a.sentences.keys() & b.sentences.keys())
    return Agreement(
        len(common), len(sentences),
        spearman(wa, wb), spearman([a.sentences[s] for s in sentences], [b.sentences[s] for s in sentences]),
        {k: top_k_overlap(a.words, b.words, k) for k in TOP_K},
        {k: top_k_overlap(a.sentences, b.sentences, k) for k in TOP_K},
        {s: x - y for s, x, y in zip(common, wa, wb)},
    )


def locality(matrix: torch.Tensor) -> dict[str, float]:
    """Gini and diagonality (b = 3) of a shown (n, n) matrix, and the diagonality an even spread over
    the same n words gives (its Gini is 0): the figures the Compare page puts under a heatmap."""
    n = matrix.shape[0]
    return {"gini": gini(matrix), "diagonality_b3": diagonality(matrix, 3),
            "even_diagonality_b3": float(even_spread(n)["diagonality_b3"])}


def shading(ex: Explanation, imp: Importance) -> list[list[float]]:
    """The importance as word weights per sentence of ``ex``'s document (for ``viz.document_html``)."""
    return [[imp.words[(t.start, t.end)] for t in s.tokens] for s in ex.document.sentences]


def map_label(name: str) -> str:
    """'word.self.a' -> 'branch a' (HCAN), 'word.self.block1' -> 'block 1' (SANet)."""
    part = name.split(".")[-1]
    if part.startswith("block"):
        return f"block {part[5:]}"
    return f"branch {part}" if len(part) == 1 else part


def sentence_index(ex: Explanation, start: int) -> int | None:
    return next((i for i, s in enumerate(ex.document.sentences) if s.start == start), None)


def last_layer(ex: Explanation, name: str) -> int | None:
    """The index of the last layer of a map with a ``layer`` axis (a transformer's), else None."""
    a = ex.attentions[name]
    return a.weights.shape[a.axis("layer")] - 1 if "layer" in a.axes else None


def sentence_self_attention(ex: Explanation, name: str, start: int, head: int | None,
                            keep: set[Span] | None = None,
                            layer: int | None = None) -> tuple[torch.Tensor, list[Span]] | None:
    """The word self-attention among the words of the sentence that starts at ``start``: a (n, n)
    matrix and the n word spans, restricted to ``keep`` (the words both models read) when given.

    Per-sentence maps (HCAN) give their sentence's matrix; a flat map over the whole document
    (SANet) gives the block of its rows and columns for that sentence, not renormalised: rows then
    sum to the share of attention that stays inside the sentence. None when the model did not read
    that sentence. A map with a ``layer`` axis gives ``layer``'s (default: the last)."""
    s = sentence_index(ex, start)
    if s is None:
        return None
    a = ex.attentions[name]
    tokens = ex.document.sentences[s].tokens
    if "sentence" in a.axes:
        matrix = ex.self_attention(name, s, head)
        positions = list(range(len(tokens)))
    else:
        matrix = ex.self_attention(name, layer if layer is not None else last_layer(ex, name), head)
        first = sum(ex.sentence_lengths[:s])
        positions = list(range(first, first + len(tokens)))
    local = [i for i, t in enumerate(tokens) if keep is None or (t.start, t.end) in keep]
    index = torch.tensor([positions[i] for i in local], dtype=torch.long)
    return matrix[index][:, index], [(tokens[i].start, tokens[i].end) for i in local]


def word_self_attention(ex: Explanation, start: int, word: Span, layer: int | None = None) -> list[dict]:
    """HCAN Figures 5 and 8: the self-attention one word gives the words of its sentence, for every
    word-level self-attention map (HCAN branch a and b, SANet blocks) and every head.

    Returns one ``{"map", "head", "weights", "elsewhere"}`` per map and head: ``weights`` over the
    sentence's words, ``elsewhere`` the share the word gives to words outside its sentence (a
    flat model's attention spans the document; 0 for per-sentence maps). Empty when the word was
    not read or the model has no word self-attention. A map with a ``layer`` axis gives ``layer``'s
    rows (default: the last layer's)."""
    s = sentence_index(ex, start)
    if s is None:
        return []
    tokens = ex.document.sentences[s].tokens
    try:
        w = next(i for i, t in enumerate(tokens) if (t.start, t.end) == word)
    except StopIteration:
        return []
    out = []
    for name in ex.self_attention_names:
        a = ex.attentions[name]
        if a.level != "word" or "time" in a.axes:
            continue
        for head in range(ex.heads(name) if head_axis(a) else 1):
            h = head if head_axis(a) else None
            if "sentence" in a.axes:
                row = ex.self_attention(name, s, h)[w]
                weights, elsewhere = row.tolist(), 0.0
            else:
                first = sum(ex.sentence_lengths[:s])
                group = layer if layer is not None and "layer" in a.axes else last_layer(ex, name)
                row = ex.self_attention(name, group, h)[first + w]
                weights = row[first: first + len(tokens)].tolist()
                elsewhere = max(0.0, float(row.sum()) - sum(weights))
            out.append({"map": name, "head": head, "weights": weights, "elsewhere": elsewhere})
    return out
