"""The document shaded by its target attention (Explore), and the attention's distributions."""
from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st

from hierattn import viz
from hierattn.analysis import heads
from hierattn.analysis.explain import Explanation, head_axis, map_title
from hierattn.app.downloads import Figures, chart
from hierattn.app.widgets import head_picker, keep_valid
from hierattn.contract import ATTENTION

PAGE = 40  # sentences of the document view per page


@dataclass
class Shading:
    """What the shaded view shows, for the sections below it: the weights of the chosen head, the
    scale, the page of a long document, and the slot the view is drawn in."""

    painted: bool  # the model weighs words or sentences for the document (target attention or coverage)
    coverage: bool  # the word weights are a coverage stand-in, not attention
    head: int | None = None
    words: list | None = None  # weights per sentence
    sentences: list | None = None
    scale: str = "document"
    part: slice = field(default_factory=lambda: slice(None))
    slot: object = None  # the st.empty the view is drawn in

    def options(self) -> dict:
        """``viz.shaded_document_html``'s options for the view shown."""
        return {"words": self.words, "sentences": self.sentences, "scale": self.scale, "part": self.part,
                "coverage": self.coverage}


def _heaviest_unknown(ex: Explanation, shading: Shading) -> str | None:
    """The word with the largest shown weight (word x sentence weight, or the word weight alone), when
    the model read it as ``<unk>``; else None."""
    if shading.words is None or not ex.unknown_count:
        return None
    best, where = -1.0, None
    for s, (ws, flags) in enumerate(zip(shading.words, ex.unknown)):
        scale = float(shading.sentences[s]) if shading.sentences is not None and s < len(shading.sentences) else 1.0
        for j, w in enumerate(ws):
            if float(w) * scale > best:
                best, where = float(w) * scale, (s, j, bool(flags[j]) if j < len(flags) else False)
    if where is None or not where[2]:
        return None
    return ex.document.sentences[where[0]].tokens[where[1]].text


def document_shading(ex: Explanation, model_name: str, model_maps: str, doc_key: str) -> Shading:
    """Explore's "Where the model looks": a head picker where there are heads, the word shading's
    scale, pages of 40 sentences for a long document, and the shaded document."""
    st.subheader("Where the model looks")
    word_map, sentence_map = ex.target_name("word"), ex.target_name("sentence")
    names = [n for n in (word_map, sentence_map) if n]
    shading = Shading(bool(names), word_map is not None and ex.describe(word_map).kind == "coverage")
    if names:
        axis = head_axis(ex.describe(names[0])) or "head"
        count = max(ex.heads(n) for n in names)
        if count > 1:
            label = "Channel" if axis == "channel" else "Target-attention head" if names[0].endswith(".target") \
                else f"Head ({map_title(names[0]).partition(' ')[2]})"
            shading.head = head_picker(st, label, count, "target_head", axis, radio=True)
    shading.words = ex.target_attention("word", shading.head)
    shading.sentences = ex.target_attention("sentence", shading.head)
    if not ex.attentions:
        st.info(f"{model_name} has no attention mechanism: it is one of the papers' baselines without attention, "
                "so only its prediction is shown.")
    elif not names:
        recurrent = any("time" in ex.describe(n).axes for n in ex.attentions)
        how = ("it classifies from its last hidden state" if recurrent
               else "it pools with max-pooling, not target attention")
        what = ("Its attention maps are below" if all(ex.describe(n).kind == ATTENTION for n in ex.attentions)
                else "What it exposes instead is below")
        st.info(f"{model_name} does not weigh words or sentences for the document as a whole ({how}). "
                f"{what}.")
    if shading.coverage:
        st.caption(f"{model_name} has no attention. The shading is {model_maps}: where its features came "
                   "from, not an attention distribution.")
    special = heads.first_token_to_special(ex, shading.head)
    if special is not None:  # a transformer: what the word shading, renormalised over words, leaves out
        st.caption(f"In the last layer the first token gives {special:.0%} of its attention "
                   f"({'mean of heads' if shading.head is None else f'head {shading.head + 1}'}) to special tokens "
                   "([CLS], [SEP], <s>, </s>) and punctuation; the shading spreads the rest over the words "
                   "(Clark et al. 2019 found most of many BERT heads' attention there).")
    if shading.words is not None:
        keep_valid("shade_scale", ["document", "sentence"])
        shading.scale = st.radio("Word shading", ["document", "sentence"], horizontal=True, key="shade_scale",
                                 format_func={"document": "one scale for the document",
                                              "sentence": "relative to each sentence's top word"}.get)
        st.caption(("Orange bars: sentence attention (relative to the top sentence, weight beside it). "
                    if shading.sentences else "") + "Blue: word weight, darkest = "
                   + ("the document's largest weight" if shading.scale == "document" else "the sentence's top word")
                   + "; hover for the weight.")
        top = _heaviest_unknown(ex, shading)
        if top:
            st.warning(f"The heaviest word here, {viz.md_code(top)}, is not in the model's vocabulary: the model read "
                       "it as <unk>, the token for every word it never learnt, so its weight says where the unknown "
                       f"words sit, not what {viz.md_code(top)} means ({ex.unknown_count:,} of the "
                       f"{ex.word_count():,} words read are unknown; hatched in red).", icon=":material/help:")
    if shading.painted:
        count = len(ex.document.sentences)
        pages = -(-count // PAGE)
        if pages > 1:  # a long document: the view pages by sentence, the scale stays the document's
            page = st.number_input(f"Page (sentences {PAGE} at a time, {count} in all)", 1, pages, 1,
                                   key=f"page_{doc_key}")
            shading.part = slice((page - 1) * PAGE, page * PAGE)
        shading.slot = st.empty()  # the shading alone, or beside an attribution's once one is computed
        # built once for the explanation and shared by every session that shows this view
        shading.slot.html(ex.remembered(f"shaded {shading.head} {shading.scale} {shading.coverage} {shading.part}",
                                        lambda: viz.shaded_document_html(**ex.text_view(), **shading.options())))
    return shading


def distributions(ex: Explanation, shading: Shading, sentence_labels: list[str], doc_key: str,
                  figures: Figures) -> None:
    """The target attention as bar charts: over the words of one sentence, over the sentences."""
    if shading.words is None and shading.sentences is None:
        return
    pooling = ex.target_name("word") or ex.target_name("sentence") or ""
    st.subheader("Word weights" if shading.coverage else "Target-attention distributions"
                 if pooling.endswith(".target") or not pooling else
                 f"Distributions of the {map_title(pooling).partition(' ')[2]}")
    left, right = st.columns(2)
    if shading.words is not None:
        s = left.selectbox("Sentence", range(len(ex.document.sentences)), key=f"dist_sentence_{doc_key}",
                           format_func=sentence_labels.__getitem__)
        head = "" if shading.head is None else f" · head {shading.head + 1}"
        bars = ex.remembered(f"word distribution {s} {shading.head}", lambda: viz.distribution_chart(
            shading.words[s], [t.text for t in ex.document.sentences[s].tokens], "over the words of the sentence",
            even=not shading.coverage))
        chart(bars,
              ("word weights" if shading.coverage else "word target attention") + f" over S{s + 1}{head}", left,
              figures=figures)
    if shading.sentences is not None:
        bars = ex.remembered(f"sentence distribution {shading.head}", lambda: viz.distribution_chart(
            shading.sentences, [f"S{i + 1}" for i in range(len(shading.sentences))],
            "over the sentences of the document", "sentence"))
        chart(bars,
              "sentence target attention" + ("" if shading.head is None else f" · head {shading.head + 1}"), right,
              figures=figures)
