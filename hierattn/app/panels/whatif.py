"""What if? Drop or reorder sentences, replace a word, and see the prediction and the attention
move (Explore)."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from hierattn import viz
from hierattn.analysis import counterfactual
from hierattn.analysis.explain import ExplainError, Explanation
from hierattn.app.loading import explain_cached
from hierattn.app.panels.shading import Shading


def what_if(path: Path, ex: Explanation, shading: Shading, sentence_labels: list[str], doc_key: str) -> None:
    sentences = ex.document.sentences
    order_key = f"whatif_order_{doc_key}"
    st.session_state.setdefault(order_key, list(range(len(sentences))))

    def drop_sentence(i: int) -> None:
        st.session_state[order_key] = [j for j in st.session_state[order_key] if j != i]

    order = st.multiselect("Sentences, in the order the model reads them", range(len(sentences)),
                           format_func=sentence_labels.__getitem__, key=order_key,
                           help="× on a sentence drops it; add it back and it goes to the end, which reorders.")
    part = shading.part
    kept = [i for i in range(len(sentences))[part] if i in order]
    with st.expander("Drop this sentence: the document, one sentence per row" +
                     (f" (this page: S{part.start + 1}–S{min(part.stop, len(sentences))})" if part.start is not None
                      else ""), expanded=len(sentences) <= 20):
        for i in kept:
            row_button, row_text = st.columns([1, 9], vertical_alignment="center")
            row_button.button("Drop", key=f"drop_{doc_key}_{i}", on_click=drop_sentence, args=(i,),
                              help=f"Take S{i + 1} out of the document the model reads.")
            words_of = ex.document.text[sentences[i].start:sentences[i].end].strip()
            shown = words_of if len(words_of) <= 240 else words_of[:240] + "…"
            row_text.markdown(f"**S{i + 1}** " + viz.md_text(shown))
        if not kept:
            st.caption("Every sentence here is dropped; add them back above.")
    left, right = st.columns(2)
    word = left.text_input("Replace the word", key="whatif_word", placeholder="e.g. great")
    by = right.text_input("with", key="whatif_by", placeholder="e.g. awful")
    edit = counterfactual.Edit(list(order), [(word.strip(), by.strip())] if word.strip() else [])
    changes = edit.describe(len(sentences))
    if not changes:
        st.caption("Drop a sentence (×), put one back (it goes to the end), or replace a word: the prediction and "
                   "the attention of the edited document appear here beside the original's.")
        return
    if not order:
        st.warning("Every sentence is dropped: there is nothing left to classify.")
        return
    edited = counterfactual.apply(ex.document, edit)
    try:
        after = explain_cached(path, edited.text)
    except ExplainError as exc:
        st.warning(f"The edited document cannot be read: {viz.md_text(exc)}.")
        return
    st.caption("Edit: " + viz.md_text("; ".join(changes)) + ".")
    before_p = ex.probabilities[ex.labels.index(ex.label)]
    now_p = after.probabilities[after.labels.index(ex.label)]
    m1, m2 = st.columns(2)
    m1.metric(f"Before · P({viz.md_text(ex.label)}) = {before_p:.1%}", viz.md_text(ex.label))
    m2.metric(f"After · P({viz.md_text(ex.label)}) = {now_p:.1%}", viz.md_text(after.label), f"{now_p - before_p:+.1%}")
    if shading.painted:
        b1, b2 = st.columns(2)
        b1.html(viz.document_html(ex.document.text, ex.document.spans(), shading.words, shading.sentences,
                                  shading.scale, struck=[i for i in range(len(sentences)) if i not in order]))
        b2.html(viz.document_html(after.document.text, after.document.spans(),
                                  after.target_attention("word", shading.head),
                                  after.target_attention("sentence", shading.head), shading.scale,
                                  marked=edited.replaced))
        st.caption("Left: the original, dropped sentences struck through. Right: the edited document as the "
                   "model reads it, replaced words outlined; both shaded by the same head.")
