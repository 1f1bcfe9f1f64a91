"""The app's views in a Jupyter notebook, from the same builders (``hierattn.viz``,
``hierattn.analysis``), without Streamlit::

    from hierattn import notebook as nb

    han, hcan = nb.load("tweets-han"), nb.load("tweets-hcan")   # a name under checkpoints/, or a path
    ex = nb.explain(hcan, "The plot was thin. The acting, though, was superb!")
    nb.shaded(ex)              # the document shaded by target attention, sentence bars (HTML)
    nb.heatmaps(ex)            # the self-attention matrices, one plotly heatmap per map and head
    nb.metrics(ex)             # Gini and diagonality per matrix, beside an even spread's (a DataFrame)
    nb.compare(han, hcan, ex.document.text)   # both shadings on one scale, and their agreement
    nb.attributions(hcan, ex)  # Integrated Gradients and occlusion (captum) beside the attention
    nb.sentence_attributions(hcan, ex)  # each sentence's attention, occlusion and Shapley value (a DataFrame)

Each call returns an object Jupyter displays as the cell's output (HTML, plotly figures, a
DataFrame) and that code can read: ``.html``, the figures themselves, ``.agreement``.
"""
from __future__ import annotations

import html
from pathlib import Path

from hierattn import viz
from hierattn.analysis import compare as comparing
from hierattn.analysis.explain import Explanation
from hierattn.analysis.explain import explain as _explain
from hierattn.analysis.metric_tables import metrics_table
from hierattn.checkpoint.classifier import WITHHELD, Classifier
from hierattn.checkpoint.format import CheckpointError
from hierattn.checkpoint.reading import load_classifier
from hierattn.home import checkpoint_roots, find_checkpoint

MAX_POSITIONS = 120  # rows and columns of a heatmap, as on the Explore page

__all__ = ["Attributions", "Comparison", "Figures", "HTMLView", "attributions", "compare", "explain", "heatmaps",
           "load", "metrics", "sentence_attributions", "shaded"]


class HTMLView:
    """HTML that Jupyter displays as it is; ``.html`` holds it (all user text escaped)."""

    def __init__(self, markup: str):
        self.html = markup

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return f"<HTMLView: {len(self.html):,} characters of HTML; display it in a notebook>"


class Figures(list):
    """Plotly figures that Jupyter displays one after another; a list otherwise."""

    def _ipython_display_(self) -> None:
        from IPython.display import display  # present wherever this method is called

        for figure in self:
            display(figure)


def load(checkpoint: str | Path, device: str | None = None) -> Classifier:
    """A checkpoint by folder path, or by name (``HIERATTN_CHECKPOINTS``, then the shipped ones)."""
    path = find_checkpoint(checkpoint)
    if not path.is_dir():
        raise CheckpointError(f"no checkpoint {checkpoint!r}: neither a folder nor a name in "
                              f"{' or '.join(str(root) for root in checkpoint_roots())}")
    return load_classifier(path, device)


def explain(model: Classifier, text: str) -> Explanation:
    """The prediction, the attention maps cropped to the document, and their metrics."""
    return _explain(model, text)


def _header(ex: Explanation, title: str | None = None) -> str:
    name = f"<b>{html.escape(title)}</b> · " if title else ""
    said = (f"no prediction ({html.escape(WITHHELD[ex.withheld])})" if ex.withheld else
            f"prediction <b>{html.escape(ex.label)}</b> ({max(ex.probabilities):.1%})")
    return (f"<p style='margin:0 0 .4em 0'>{name}{said} · "
            f"{len(ex.document.sentences)} sentences · {ex.document.num_tokens} tokens read</p>")


def shaded(ex: Explanation, head: int | None = None, scale: str = "document") -> HTMLView:
    """The document as Explore paints it: words shaded by target attention (``head=None``: the mean
    of the heads), bars for sentence attention; ``scale="sentence"`` darkens each sentence's top word."""
    words, sentences = ex.target_attention("word", head), ex.target_attention("sentence", head)
    if words is None and sentences is None:
        note = ("<p><i>This model weighs no words or sentences for the whole document (no target attention); "
                "its self-attention is in <code>heatmaps(ex)</code>.</i></p>" if ex.self_attention_names else
                "<p><i>This model exposes no attention.</i></p>")
        return HTMLView(_header(ex) + note + viz.plain_text_html(ex.document.text))
    body = viz.document_html(ex.document.text, ex.document.spans(), words, sentences, scale)
    return HTMLView(_header(ex) + body)


def _labels(ex: Explanation, name: str, sentence: int, layer: int | None = None) -> tuple[int | None, list[str]]:
    """The group (sentence, or layer) a map's matrix is taken from, and its positions' labels."""
    a = ex.attentions[name]
    if "sentence" in a.axes:
        return sentence, [t.text for t in ex.document.sentences[sentence].tokens]
    group = None
    if "layer" in a.axes:  # a transformer: ``layer``, by default the last
        layers = a.weights.shape[a.axis("layer")]
        group = layers - 1 if layer is None else layer
        if not 0 <= group < layers:
            raise IndexError(f"layer {group} of a model of {layers} layers")
    words = [t.text for s in ex.document.sentences for t in s.tokens]
    if a.level == "subword":
        return group, [token for token, _ in ex.subwords]
    if a.level == "word":
        return group, words
    return group, [f"S{i + 1}: {' '.join(t.text for t in s.tokens[:6])}" for i, s in enumerate(ex.document.sentences)]


def heatmaps(ex: Explanation, name: str | None = None, sentence: int = 0, head: int | None = None,
             layer: int | None = None) -> Figures:
    """One heatmap per self-attention map (or the map ``name``) and head (or the one ``head``), for
    ``sentence`` where the map is per sentence and ``layer`` where it has layers (a transformer's;
    default the last); at most the first 120 positions of a long document, as on Explore. A
    recurrent model's window attention (a ``time`` axis) is left to the app."""
    names = [name] if name else [n for n in ex.self_attention_names if "time" not in ex.attentions[n].axes]
    if name and name not in ex.self_attention_names:
        raise KeyError(f"{name!r} is not a self-attention map of this model; it has: "
                       f"{', '.join(ex.self_attention_names) or 'none'}")
    if not 0 <= sentence < len(ex.document.sentences):
        raise IndexError(f"sentence {sentence} of a document of {len(ex.document.sentences)} sentences")
    figures = Figures()
    for n in names:
        group, labels = _labels(ex, n, sentence, layer)
        shown = slice(0, min(len(labels), MAX_POSITIONS))
        cut = "" if len(labels) <= MAX_POSITIONS else f" · first {MAX_POSITIONS} of {len(labels)}"
        axes = ex.attentions[n].axes
        where = f" · S{sentence + 1}" if "sentence" in axes else f" · layer {group + 1}" if "layer" in axes else ""
        count = ex.heads(n)
        for h in ([head] if head is not None else range(count)):
            matrix = ex.self_attention(n, group, h if count > 1 else None)[shown, shown]
            title = f"{n}{where} · " + (f"head {h + 1} of {count}" if count > 1 else "single head") + cut
            figures.append(viz.attention_heatmap(matrix, labels[shown], title))
    return figures


def heads(ex: Explanation):
    """Every head at a glance (a transformer's): the grid (layers x heads, each cell's finding and how
    far above an even spread) as a figure, and the figures per head as a pandas DataFrame; (None,
    None) for a model without layers of heads over subword tokens."""
    from hierattn.analysis import heads as overview

    rows = overview.overview(ex)
    if not rows:
        return None, None
    values, labels = overview.grid(rows)
    figure = viz.head_grid(values, labels, [f"layer {i + 1}" for i in range(values.shape[0])],
                           [f"head {h + 1}" for h in range(values.shape[1])])
    return figure, viz.head_table(rows)


def metrics(ex: Explanation, name: str | None = None, sentence: int | None = None):
    """Gini and diagonality of every self-attention matrix, each diagonality beside what attention
    spread evenly over the same positions gives (``*_even``); a pandas DataFrame."""
    return metrics_table(ex, name, sentence)


class Comparison(HTMLView):
    """Two models on one document: ``.a`` / ``.b`` their explanations, ``.agreement`` the
    agreement of their word and sentence importance (``.table``: each measure beside chance)."""

    def __init__(self, markup: str, a: Explanation, b: Explanation, agreement):
        super().__init__(markup)
        self.a, self.b, self.agreement = a, b, agreement
        self.table = agreement.table() if agreement is not None else None


def compare(model_a: Classifier, model_b: Classifier, text: str) -> Comparison:
    """Compare's "Where each model looks": both documents shaded by each model's word importance on
    one scale, and how far the two rankings agree beside what unrelated rankings give."""
    explanations = {"A": explain(model_a, text), "B": explain(model_b, text)}
    models = {"A": model_a, "B": model_b}
    importances = {slot: comparing.importance(ex) for slot, ex in explanations.items()}
    present = [imp for imp in importances.values() if imp is not None]
    peak = max((max(imp.words.values()) for imp in present), default=None)
    sentence_peak = max((max(imp.sentences.values()) for imp in present), default=None)
    cells = []
    for slot, ex in explanations.items():
        imp = importances[slot]
        title = f"{slot}: {models[slot].name} ({models[slot].display_name})"
        if imp is None:
            body = "<p><i>No attention: nothing to shade.</i></p>"
        else:
            body = (f"<p style='color:#666;margin:0 0 .4em 0'>{html.escape(imp.source)}</p>"
                    + viz.document_html(ex.document.text, ex.document.spans(), comparing.shading(ex, imp),
                                        [imp.sentences[s.start] for s in ex.document.sentences], "document",
                                        peak=peak, sentence_peak=sentence_peak))
        cells.append(f"<td style='vertical-align:top;width:50%;padding:0 8px'>{_header(ex, title)}{body}</td>")
    agreement = comparing.agreement(importances["A"], importances["B"]) if len(present) == 2 else None
    markup = f"<table style='width:100%;border:0'><tr>{''.join(cells)}</tr></table>"
    if agreement is not None:
        table = agreement.table().to_html(index=False, float_format=lambda x: f"{x:.2f}", na_rep="—")
        markup += ("<p><b>Agreement</b> (one scale for both; beside each measure, what two unrelated rankings "
                   f"give)</p>{table}")
    return Comparison(markup, explanations["A"], explanations["B"], agreement)


class Attributions(HTMLView):
    """The attention shading beside captum's attributions; ``.results``: method -> ``Attribution``
    (signed scores per word, reading order; Integrated Gradients' ``.delta`` and ``.relative_delta``)."""

    def __init__(self, markup: str, results: dict):
        super().__init__(markup)
        self.results = results


def _explained(model: Classifier, ex: Explanation | str) -> Explanation:
    return explain(model, ex) if isinstance(ex, str) else ex


def attributions(model: Classifier, ex: Explanation | str, steps: int | None = None) -> Attributions:
    """Explore's "Beside the attention shading": the document (an explanation of ``model``, or its
    text) shaded by its attention, by Integrated Gradients (``steps`` points, default
    ``attribution.IG_STEPS``; its convergence delta beside it) and by word occlusion, each on its own
    scale; a word that argues against the class is left unshaded."""
    from hierattn.analysis.attribution import integrated_gradients
    from hierattn.analysis.attribution_methods import ATTRIBUTION_METHODS, INTEGRATED
    from hierattn.analysis.eraser import WORD_UNITS
    from hierattn.analysis.faithfulness import by_sentence

    ex = _explained(model, ex)
    label = ex.labels.index(ex.label)
    results = {}
    for method in ATTRIBUTION_METHODS:  # captum's, over the words: each shades the document
        if not (method.captum and method.unit == WORD_UNITS):
            continue
        found = integrated_gradients(model, ex.document, label, steps) if method is INTEGRATED and steps else \
            method.attribute(model, ex.document, label)
        if found is not None:
            results[found.method] = found
    cells = [f"<td style='vertical-align:top;padding:0 8px'>{shaded(ex).html}</td>"]
    for method, result in results.items():
        note = (f" · completeness within {result.relative_delta:.1%}" if result.relative_delta is not None else "")
        body = viz.document_html(ex.document.text, ex.document.spans(), by_sentence(result.scores, ex.document),
                                 None, "document")
        cells.append(f"<td style='vertical-align:top;padding:0 8px'><p style='margin:0 0 .4em 0'><b>"
                     f"{html.escape(method)}</b>{html.escape(note)}</p>{body}</td>")
    return Attributions(f"<table style='width:100%;border:0'><tr>{''.join(cells)}</tr></table>", results)


def sentence_attributions(model: Classifier, ex: Explanation | str):
    """Each sentence's share of the attention beside its occlusion and Shapley value (exact up to 7
    sentences, else KernelSHAP with its measured error; captum), in
    probability points, as Explore's sentence attributions show them (a DataFrame; ``.attrs["caption"]``
    says how they agree and what they cost)."""
    import pandas as pd

    from hierattn.analysis.shapley import sentence_table

    ex = _explained(model, ex)
    if len(ex.document.sentences) < 2:
        raise ValueError("sentence attributions need a document of two or more sentences")
    table = sentence_table(model, ex)
    frame = pd.DataFrame(table["rows"])
    frame.attrs["caption"] = table["caption"]
    return frame
