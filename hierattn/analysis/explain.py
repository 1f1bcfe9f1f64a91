"""Text in, prediction + attention + metrics out: the scriptable face of the app.

Everything here is per document (batch of one) and reads the model only through the output
contract (``ClassifierOutput`` / ``AttentionMap``), so it works for every model in the registry.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import torch

from hierattn.analysis.metrics import GROUP_AXES, attention_metrics, real_matrices
from hierattn.checkpoint.classifier import WITHHELD, Classifier
from hierattn.contract import GATE, SENTENCE, AttentionMap, DerivedMap, Maps
from hierattn.data.batches import encode_documents
from hierattn.data.text import Document, TextConfig, tokenize
from hierattn.limits import EXPLANATION_CELLS, LimitExceeded, rough_nbytes
from hierattn.models.common import document_vectors

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
    # batch of one, on the CPU; a transformer's word and sentence maps are computed when first read,
    # its token map is held in float16 at 512 tokens (``contract.Maps``)
    attentions: Mapping[str, AttentionMap]
    # one row per self-attention matrix (map, level, sentence, head); None until first asked for
    # (``metrics``): a transformer's 216 matrices at 512 tokens took 6 s, and a page shows one layer's
    metric_rows: list[dict] | None = None
    # per sentence, per word: not in the model's vocabulary (it read <unk> there)
    unknown: list[list[bool]] = field(default_factory=list)
    # a model of subword tokens: each token it read (as its tokenizer writes it) and the reading-order
    # index of its word, -1 for a special token; the keys of its ``subword``-level maps. Empty otherwise.
    subwords: list[tuple[str, int]] = field(default_factory=list)
    # (features,): the vector the model's classifier read (``ClassifierOutput.document``), where the
    # document sits among the model's own (``analysis.domain``); None where the model gives none
    vector: torch.Tensor | None = None
    # why the probabilities are no prediction (``Classifier.prediction_withheld``), shown instead of a label
    withheld: str | None = None

    def __post_init__(self):
        if not isinstance(self.attentions, Maps):
            self.attentions = Maps(self.attentions)
        self._metrics_by_map: dict[tuple[str, int | None], list[dict]] = {}
        self._remembered: dict[str, object] = {}
        self._remembered_bytes: dict[str, int] = {}
        self._remembering = threading.RLock()  # sessions shown it at once wait for one computation

    def remembered(self, key: str, compute):
        """``compute()``'s result, computed once for this explanation: figures a page shows on every
        rerun (a 512-token transformer's head overview took 1.6 s), kept with it, and shared by every
        session shown the same explanation (a class pasting one sample builds each figure once).
        Each result must depend only on the explanation and ``key``, and is never changed by its
        readers. Its size counts in ``nbytes``, so the explanations kept stay within their budget."""
        if key in self._remembered:
            return self._remembered[key]
        with self._remembering:
            if key not in self._remembered:
                value = compute()
                self._remembered_bytes[key] = rough_nbytes(value)
                self._remembered[key] = value
            return self._remembered[key]

    @property
    def metrics(self) -> list[dict]:
        """Every self-attention matrix's metric row, computed the first time they are asked for."""
        if self.metric_rows is None:
            self.metric_rows = [r for name in self.self_attention_names for r in self.metrics_of(name)]
        return self.metric_rows

    def metrics_of(self, name: str, layer: int | None = None) -> list[dict]:
        """The metric rows of map ``name``; given ``layer``, only those of that entry of its group
        axis (its layer, sentence or time step), computing that entry alone: what a page showing one
        layer or one sentence needs (every sentence of a 550-word article took 12 ms of a paste)."""
        a = self.describe(name)
        axis = next((g for g in GROUP_AXES if g in a.axes), None)
        if axis in ("sentence", "time") and layer is not None:
            if (name, layer) not in self._metrics_by_map:
                m = self.attentions[name]
                dim = m.axis(axis)
                one = AttentionMap(m.weights.narrow(dim, layer, 1), m.axes, m.level, m.mask.narrow(dim, layer, 1))
                self._metrics_by_map[name, layer] = [{"map": name, "level": a.level, **r, axis: layer}
                                                     for r in attention_metrics(one)]
            return self._metrics_by_map[name, layer]
        if "layer" not in a.axes:
            if (name, None) not in self._metrics_by_map:
                self._metrics_by_map[name, None] = [{"map": name, "level": a.level, **r}
                                                    for r in attention_metrics(self.attentions[name])]
            return self._metrics_by_map[name, None]
        if layer is None:
            return [r for entry in range(self.layers(name)) for r in self.metrics_of(name, entry)]
        if (name, layer) not in self._metrics_by_map:
            rows = attention_metrics(self.attentions.layer(name, layer))
            self._metrics_by_map[name, layer] = [{"map": name, "level": a.level, **r, "layer": layer} for r in rows]
        return self._metrics_by_map[name, layer]

    def describe(self, name: str) -> AttentionMap | DerivedMap:
        """Map ``name``'s axes, level and kind, without computing a map that is computed when read."""
        return self.attentions.describe(name)

    def layers(self, name: str) -> int:
        """Size of the map's ``layer`` axis (a transformer's layers); 1 when it has none."""
        a = self._shaped(name)
        return a.weights.shape[a.axis("layer")] if "layer" in a.axes else 1

    def _shaped(self, name: str) -> AttentionMap:
        # a map with weights to read sizes from: a derived map's source has its layers and heads
        a = self.describe(name)
        return self.describe(a.source) if isinstance(a, DerivedMap) else a

    @property
    def label(self) -> str:
        return self.labels[max(range(len(self.labels)), key=self.probabilities.__getitem__)]

    @property
    def sentence_lengths(self) -> list[int]:
        return [len(s.tokens) for s in self.document.sentences]

    @property
    def self_attention_names(self) -> list[str]:
        return [n for n in self.attentions if self.describe(n).is_self_attention]

    def heads(self, name: str) -> int:
        """Size of the map's head (or MahNN channel) axis; 1 when it has none."""
        a = self._shaped(name)
        axis = head_axis(a)
        return a.weights.shape[a.axis(axis)] if axis else 1

    def word_count(self) -> int:
        return sum(self.sentence_lengths)

    @property
    def nbytes(self) -> int:
        """What holding it costs now, roughly: the maps it holds (``Maps.nbytes``: storage counted
        once, the maps computed so far), the text twice (as pasted and as the cache's key), about
        200 bytes a token and a metric row computed."""
        rows = sum(len(r) for r in self._metrics_by_map.values()) + len(self.metric_rows or [])
        return (self.attentions.nbytes + 4 * len(self.document.text) + 200 * (self.document.num_tokens + rows)
                + sum(self._remembered_bytes.values()))

    def text_view(self) -> dict:
        """The document as the text views draw it (``viz.shaded_document_html``'s keywords): its
        ``text``, the character ``spans`` of its sentences and words, per sentence and word whether
        the model read ``<unk>`` there (``unknown``), and the text the caps cut, by the sentence it
        follows (``unread``)."""
        return {"text": self.document.text, "spans": self.document.spans(), "unknown": self.unknown,
                "unread": self.document.unread()}

    @property
    def sentence_words(self) -> list[list[str]]:
        """Each sentence's words as the text has them, in reading order."""
        return [[t.text for t in s.tokens] for s in self.document.sentences]

    @property
    def unknown_count(self) -> int:
        """Words the model read as ``<unk>``: its vocabulary does not have them."""
        return sum(sum(flags) for flags in self.unknown)

    def unknown_spans(self) -> set[tuple[int, int]]:
        """The character spans of the words the model read as ``<unk>``."""
        return {(t.start, t.end) for s, flags in zip(self.document.sentences, self.unknown)
                for t, flag in zip(s.tokens, flags) if flag}

    def word_unknown(self) -> list[bool]:
        """Per word of the document, in reading order: read as ``<unk>``."""
        out = []
        for s, sentence in enumerate(self.document.sentences):
            flags = self.unknown[s] if s < len(self.unknown) else []
            out += [w < len(flags) and bool(flags[w]) for w in range(len(sentence.tokens))]
        return out

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
        if "sentence" in a.axes:  # (sentence, word); one conversion, not one a sentence (0.6 ms a paste)
            rows = w.tolist()
            return [rows[s][:n] for s, n in enumerate(lengths)]
        flat, out, start = w.tolist(), [], 0  # flat model: one sequence of the document's words
        for n in lengths:
            out.append(flat[start: start + n])
            start += n
        return out

    def target_name(self, level: str) -> str | None:
        """The map that weighs words (or sentences) for the document, if the model has one."""
        return next((n for n in self.attentions
                     if not self.describe(n).is_self_attention and self.describe(n).level == level), None)

    def self_attention(self, name: str, sentence: int | None = None, head: int | None = None) -> torch.Tensor:
        """One (n, n) self-attention matrix over real positions: for ``sentence`` (the index along the
        map's sentence, time or layer axis), else the document's; ``head=None`` averages the heads
        (rows still sum to 1). A layer is computed alone, the rest of the map left as it is. Kept
        with the explanation (``remembered``): a page reads the same matrix on every rerun."""
        return self.remembered(f"self_attention {name} {sentence} {head}",
                               lambda: self._self_attention(name, sentence, head))

    def _self_attention(self, name: str, sentence: int | None, head: int | None) -> torch.Tensor:
        if "layer" in self.describe(name).axes and sentence is not None:
            if not 0 <= sentence < self.layers(name):
                raise KeyError(f"{name} has no layer {sentence}")
            mats = list(real_matrices(self.attentions.layer(name, sentence), group=0))
        else:
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
        return [n for n in self.attentions if self.describe(n).kind == GATE]

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

    def to_dict(self, maps: str | Iterable[str] = "all") -> dict:
        """The explanation as JSON-ready data. ``maps``: ``"all"`` writes every map's weights;
        ``"summary"`` writes every map's axes, level, kind and shape, and the weights of the maps
        the text is painted with (those without a query axis: one weight a word or sentence), not
        of the self-attention grids (a 512-token transformer's are 31 million weights, 780 MB of
        JSON); a list of names writes those maps' weights and the summary of the rest."""
        if maps == "all":
            wanted = set(self.attentions)
        elif maps == "summary":
            wanted = {n for n in self.attentions if not self.describe(n).is_self_attention}
        else:
            wanted = set(maps)
            unknown = wanted - set(self.attentions)
            if unknown:
                raise ExplainError(f"no map named {', '.join(sorted(unknown))}: this model's maps are "
                                   f"{', '.join(self.attentions)}")

        def entry(name: str) -> dict:
            a = self.describe(name)
            out = {"axes": list(a.axes), "level": a.level, "kind": a.kind, **({"source": a.source} if a.source else {})}
            if name in wanted:
                return {**out, "weights": self.attentions[name].weights.tolist()}
            shaped = self._shaped(name)
            shape = list(shaped.weights.shape)
            if isinstance(a, DerivedMap):  # a derived map has its source's layers and heads, its own units
                units = len(self.document.sentences) if a.level == SENTENCE else self.word_count()
                shape = shape[:-2] + [units, units]
            return {**out, "shape": shape}

        return {
            "checkpoint": self.classifier_name,
            "label": None if self.withheld else self.label,
            "probabilities": None if self.withheld else dict(zip(self.labels, self.probabilities)),
            **({"prediction_withheld": WITHHELD[self.withheld]} if self.withheld else {}),
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
            "attention": {name: entry(name) for name in self.attentions},
            "metrics": self.metrics,
        }


def explain(classifier: Classifier, text: str, text_config: TextConfig | None = None) -> Explanation:
    """Tokenise, run the model once, keep its attention on the CPU (``Maps.held``). The metrics are
    computed when first read (``Explanation.metrics``, ``metrics_of``)."""
    if not isinstance(text, str) or not text.strip():
        raise ExplainError("the text is empty: paste a document with at least one word")
    try:
        document = classifier.vocab.within_window(tokenize(text, text_config or classifier.text_config))
        if not document.sentences:
            raise ExplainError("no words were found in the text (after dropping symbols and punctuation)")
        batch = encode_documents([document], classifier.vocab).to(classifier.device)
    except LimitExceeded as error:  # a folder's tokenizer past its memory or time (data.tokenizer_process)
        raise ExplainError(str(error)) from None
    with torch.inference_mode(), document_vectors():
        output = classifier.model(batch)
        attentions = (output.attentions if isinstance(output.attentions, Maps) else Maps(output.attentions)).held()
    cells = attentions.weight_bytes // 4  # float32 cells' worth: a float16 map counts half its cells
    if EXPLANATION_CELLS.exceeded(cells):  # a model whose cells could not be predicted when it was opened
        raise ExplainError(EXPLANATION_CELLS.message(cells, classifier.name))
    probabilities = torch.softmax(output.logits[0].float(), -1).tolist()
    unknown = classifier.vocab.unknown(document)
    tokens = getattr(classifier.vocab, "tokens", None)
    vector = None if output.document is None else output.document[0].float().cpu().clone()
    return Explanation(classifier.name, classifier.labels, probabilities, document, attentions, None, unknown,
                       tokens(document) if tokens else [], vector, classifier.prediction_withheld)



def explained(classifier: Classifier, texts: list[str]):
    """(index, Explanation or None) for each text: None where the text cannot be explained (no
    words), so split-level analyses skip it and still count it."""
    for i, text in enumerate(texts):
        try:
            yield i, explain(classifier, text)
        except ExplainError:
            yield i, None

