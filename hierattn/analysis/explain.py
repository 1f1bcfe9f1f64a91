"""Text in, prediction + attention + metrics out: the scriptable face of the app.

Everything here is per document (batch of one) and reads the model only through the output
contract (``ClassifierOutput`` / ``AttentionMap``), so it works for every model in the registry.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import torch

from hierattn.analysis.metrics import EVEN, GROUP_AXES, METRICS, attention_metrics, real_matrices
from hierattn.checkpoint import Classifier
from hierattn.contract import GATE, SENTENCE, AttentionMap
from hierattn.data.batches import encode_documents
from hierattn.data.text import Document, TextConfig, tokenize
from hierattn.limits import EXPLANATION_CELLS

if TYPE_CHECKING:
    import pandas as pd

HEAD_AXES = ("head", "channel")  # parallel attention distributions over the same keys


def head_axis(a: AttentionMap) -> str | None:
    return next((axis for axis in HEAD_AXES if axis in a.axes), None)


_MAP_KINDS = {"self": "self-attention", "self.a": "self-attention, branch a (ELU)",
              "self.b": "self-attention, branch b (tanh)", "target": "target attention",
              "window": "look-back attention over the cell's window", "syntactic": "syntactical attention",
              "semantic": "semantical attention", "depth": "master forget gate (ON-LSTM)",
              "maxpool": "max-pool coverage", "first_token": "attention of the first token ([CLS], last layer)"}


def map_title(name: str) -> str:
    """A map's name as a reader says it: ``word.self.a`` -> "word self-attention, branch a (ELU)",
    ``word.self.block2`` -> "word self-attention, block 2", ``sentence.target`` -> "sentence target
    attention". A name it does not know (a plug-in's) is returned as it is."""
    level, _, kind = name.partition(".")
    if kind.startswith("self.block") and kind[len("self.block"):].isdigit():
        return f"{level} self-attention, block {kind[len('self.block'):]}"
    return f"{level} {_MAP_KINDS[kind]}" if kind in _MAP_KINDS else name


class ExplainError(ValueError):
    """The text cannot be explained (e.g. it has no words); the message is for the user."""


@dataclass
class Explanation:
    classifier_name: str
    labels: list[str]
    probabilities: list[float]
    document: Document
    attentions: dict[str, AttentionMap]  # batch of one, on the CPU
    metrics: list[dict]  # one row per self-attention matrix (map, level, sentence, head)
    # per sentence, per word: not in the model's vocabulary (it read <unk> there)
    unknown: list[list[bool]] = field(default_factory=list)
    # a model of subword tokens: each token it read (as its tokenizer writes it) and the reading-order
    # index of its word, -1 for a special token; the keys of its ``subword``-level maps. Empty otherwise.
    subwords: list[tuple[str, int]] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.labels[max(range(len(self.labels)), key=self.probabilities.__getitem__)]

    @property
    def sentence_lengths(self) -> list[int]:
        return [len(s.tokens) for s in self.document.sentences]

    @property
    def self_attention_names(self) -> list[str]:
        return [n for n, a in self.attentions.items() if a.is_self_attention]

    def heads(self, name: str) -> int:
        """Size of the map's head (or MahNN channel) axis; 1 when it has none."""
        a = self.attentions[name]
        axis = head_axis(a)
        return a.weights.shape[a.axis(axis)] if axis else 1

    def word_count(self) -> int:
        return sum(self.sentence_lengths)

    @property
    def nbytes(self) -> int:
        """What holding it costs, roughly: its maps and masks, the text twice (as pasted and as
        the cache's key), about 200 bytes a token and a metric row."""
        tensors = sum(a.weights.numel() * a.weights.element_size() + a.mask.numel() * a.mask.element_size()
                      for a in self.attentions.values())
        return tensors + 4 * len(self.document.text) + 200 * (self.document.num_tokens + len(self.metrics))

    @property
    def unknown_count(self) -> int:
        """Words the model read as ``<unk>``: its vocabulary does not have them."""
        return sum(sum(flags) for flags in self.unknown)

    def mostly_unknown(self, share: float = 0.5) -> bool:
        """More than ``share`` of the words read are unknown: the prediction rests on the few
        the model knows (a text in another language, another domain's jargon)."""
        return self.word_count() > 0 and self.unknown_count > share * self.word_count()

    def target_attention(self, level: str, head: int | None = None) -> list[list[float]] | list[float] | None:
        """Target-attention weights over words (a list per sentence) or over sentences (a list).

        ``head=None`` averages the heads. ``None`` when the model has no target attention at that
        level (e.g. HCAN with max pooling).
        """
        name = self.target_name(level)
        if name is None:
            return None
        a = self.attentions[name]
        w = a.weights[0]
        axis = head_axis(a)
        if axis:
            h = a.axis(axis) - 1
            w = w.mean(h) if head is None else w.select(h, head)
        lengths = self.sentence_lengths
        if level == SENTENCE:
            return w[: len(lengths)].tolist()
        if "sentence" in a.axes:  # (sentence, word)
            return [w[s, :n].tolist() for s, n in enumerate(lengths)]
        flat, out, start = w.tolist(), [], 0  # flat model: one sequence of the document's words
        for n in lengths:
            out.append(flat[start: start + n])
            start += n
        return out

    def target_name(self, level: str) -> str | None:
        """The map that weighs words (or sentences) for the document, if the model has one."""
        return next((n for n, a in self.attentions.items() if not a.is_self_attention and a.level == level), None)

    def self_attention(self, name: str, sentence: int | None = None, head: int | None = None) -> torch.Tensor:
        """One (n, n) self-attention matrix over real positions: for ``sentence`` (the index along the
        map's sentence or time axis), else the document's; ``head=None`` averages the heads (rows
        still sum to 1)."""
        mats = list(real_matrices(self.attentions[name], group=sentence))
        if not mats:
            raise KeyError(f"{name} has no matrix for sentence {sentence}")
        if head is None:
            return torch.stack([m for _, _, m in mats]).mean(0)
        return next(m for _, h, m in mats if h == head)

    def lookback(self, name: str) -> torch.Tensor:
        """(time, window) for a map with a ``time`` axis (HA-LSTM): the attention each window slot
        receives at each real step, averaged over the window's queries (and heads)."""
        a = self.attentions[name]
        w = a.weights[0]  # (time, [head,] query, key)
        if "head" in a.axes:
            w = w.mean(a.axis("head") - 1)
        return w.mean(-2)[: self.word_count()]

    def channel_strips(self, name: str) -> torch.Tensor:
        """(channel, words) for a flat word-level map with a ``channel`` axis (MahNN)."""
        a = self.attentions[name]
        return a.weights[0][:, : self.word_count()]

    def hidden_attention(self, name: str, channel: int) -> torch.Tensor:
        """(words, hidden dimensions) for a ``hidden``-level map, one channel (MahNN)."""
        a = self.attentions[name]
        return a.weights[0, channel, : self.word_count()]

    def gate_names(self) -> list[str]:
        """Maps of kind ``gate`` (ON-LSTM's master forget gate): distributions over hidden units."""
        return [n for n, a in self.attentions.items() if a.kind == GATE]

    def gate_depth(self, name: str) -> torch.Tensor:
        """(words,) for a ``gate`` map: the expected split point of the master forget gate as a share
        of the hidden units, which is the share of the ordered memory the word erases (Shen et al.
        2019's distance H - sum(F), divided by H)."""
        split = self.attentions[name].weights[0][: self.word_count()]  # (words, H)
        units = split.shape[-1]
        return (split * torch.arange(units, dtype=split.dtype)).sum(-1) / units

    def gate_depth_if_even(self, name: str) -> float:
        """``gate_depth`` of a split spread evenly over the H units: (H - 1) / 2H, the baseline."""
        units = self.attentions[name].weights.shape[-1]
        return (units - 1) / (2 * units)

    def to_dict(self) -> dict:
        return {
            "checkpoint": self.classifier_name,
            "label": self.label,
            "probabilities": dict(zip(self.labels, self.probabilities)),
            "truncation": self.document.truncation.message or None,
            "unknown_words": self.unknown_count,
            "sentences": [
                {"text": self.document.text[s.start: s.end], "start": s.start, "end": s.end,
                 "tokens": [{"text": t.text, "norm": t.norm, "start": t.start, "end": t.end,
                             **({"unknown": True} if i < len(self.unknown) and self.unknown[i][j] else {})}
                            for j, t in enumerate(s.tokens)]}
                for i, s in enumerate(self.document.sentences)
            ],
            **({"subwords": [{"token": t, "word": w} for t, w in self.subwords]} if self.subwords else {}),
            "attention": {
                name: {"axes": list(a.axes), "level": a.level, "kind": a.kind, "weights": a.weights.tolist(),
                       **({"source": a.source} if a.source else {})}
                for name, a in self.attentions.items()
            },
            "metrics": self.metrics,
        }


def explain(classifier: Classifier, text: str, text_config: TextConfig | None = None) -> Explanation:
    """Tokenise, run the model once, crop attention to this document, compute the metrics."""
    if not isinstance(text, str) or not text.strip():
        raise ExplainError("the text is empty: paste a document with at least one word")
    document = classifier.vocab.within_window(tokenize(text, text_config or classifier.text_config))
    if not document.sentences:
        raise ExplainError("no words were found in the text (after dropping symbols and punctuation)")
    batch = encode_documents([document], classifier.vocab).to(classifier.device)
    with torch.inference_mode():
        output = classifier.model(batch)
    cells = sum(a.weights.numel() for a in output.attentions.values())
    if EXPLANATION_CELLS.exceeded(cells):  # a model whose cells could not be predicted when it was opened
        raise ExplainError(EXPLANATION_CELLS.message(cells, classifier.name))
    probabilities = torch.softmax(output.logits[0].float(), -1).tolist()
    attentions = {n: replace(a, weights=a.weights.float().cpu(), mask=a.mask.cpu())
                  for n, a in output.attentions.items()}
    rows = []
    for name, a in attentions.items():
        if a.is_self_attention:
            rows += [{"map": name, "level": a.level, **r} for r in attention_metrics(a)]
    unknown = classifier.vocab.unknown(document)
    tokens = getattr(classifier.vocab, "tokens", None)
    return Explanation(classifier.name, classifier.labels, probabilities, document, attentions, rows, unknown,
                       tokens(document) if tokens else [])



def explained(classifier: Classifier, texts: list[str]):
    """(index, Explanation or None) for each text: None where the text cannot be explained (no
    words), so split-level analyses skip it and still count it."""
    for i, text in enumerate(texts):
        try:
            yield i, explain(classifier, text)
        except ExplainError:
            yield i, None

def metrics_table(explanation: Explanation, name: str | None = None, sentence: int | None = None) -> pd.DataFrame:
    """The metric rows as a pandas DataFrame, optionally for one map and one sentence: each
    diagonality followed by its even-spread value at the matrix's size (``diagonality_b1_even``,
    ...); an even spread's Gini is 0 at every size, so that column is left out."""
    import pandas as pd  # lazily: the command line's explain does without it

    rows = [r for r in explanation.metrics
            if (name is None or r["map"] == name) and (sentence is None or r["sentence"] == sentence)]
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    where = ["sentence"] + [axis for axis in GROUP_AXES[1:] if axis in df.columns]
    df[where] = df[where].astype("Int64")  # indices with gaps (maps without the axis), not floats
    figures = [c for m in METRICS for c in ([m] if m == "gini" else [m, EVEN[m]])]
    return df[["map", "level"] + where + ["head", "size"] + figures]


def metrics_view(explanation: Explanation, level: str, group_axis: str | None, group: int | None,
                 heads: int) -> pd.DataFrame:
    """The metrics table a reader sees beside one self-attention heatmap: every map of ``level``
    (so its branches compare), for one sentence or time step (``group`` along ``group_axis``),
    numbered from 1 as the pickers number them, and the head column only where there are heads.
    ``METRIC_LABELS`` names its figures for a reader."""
    table = metrics_table(explanation)
    table = table[table["level"] == level]
    if group_axis:
        table = table[table[group_axis] == group]
    table = table.drop(columns=["level"] + [c for c in GROUP_AXES if c != group_axis and c in table])
    if heads > 1:
        table["head"] = table["head"] + 1
    else:
        table = table.drop(columns=["head"])
    if group_axis:
        table[group_axis] = table[group_axis] + 1  # S1, S2, ... as in the selectors
    return table


# The metrics table's figures as a reader sees them: "Gini", "b=1", "b=1 (even)", ...
METRIC_LABELS = {"gini": "Gini", **{f"diagonality_b{b}{even}": f"b={b}{' (even)' if even else ''}"
                                    for b in range(1, 6) for even in ("", "_even")}}
