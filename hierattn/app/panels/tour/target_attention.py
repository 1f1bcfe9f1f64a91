"""The Tour's step 1 on the page: target attention on a bbc-news article (HCAN Figure 4)."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from hierattn import viz
from hierattn.analysis.tour.target_attention import concentration, concentration_verdict
from hierattn.app import loading
from hierattn.app.panels.tour.recorded import explained_pick, show_rate
from hierattn.app.panels.tour.verdict import show_verdict


def draw(checkpoints: dict[str, Path]) -> None:
    """Step 1: target attention on a bbc-news article (HCAN Figure 4)."""
    st.subheader("Target attention: the document says where it looks (HCAN Figure 4)")
    st.markdown("HCAN pools each sentence's words, then the document's sentences, with **target attention**: a learned "
                "target vector scores every position, and the softmax of those scores weighs the average. Word "
                "shade = weight within its sentence; the orange bar = the sentence's weight in the document.")
    rate = show_rate(1, checkpoints)
    ex = explained_pick(rate, "bbc-news", "An article from the test split", "tour1_doc", checkpoints["bbc-news-hcan"])
    st.markdown(f"bbc-news-hcan predicts **{viz.md_text(ex.label)}** ({max(ex.probabilities):.1%}).")
    c = concentration(ex)
    shown, verdict = concentration_verdict(c)
    heaviest = c.head_top_words[c.focused_heads[0]] if c.focused else c.top_words
    where = f"in head {c.focused_heads[0] + 1}" if c.focused and len(c.head_top_shares) > 1 else "here"
    show_verdict(shown, f"The heaviest words {where} are " + viz.md_text(", ".join(heaviest)) + ". "
                 + viz.md_text(verdict), "“a few words carry the weight”")
    if rate is not None and rate.rate < 0.5:
        from hierattn.experiments.start_length import start_and_length

        moved = start_and_length("bbc-news", loading.load(checkpoints["bbc-news-hcan"]).model_type)
        st.markdown("**What this says, and what it does not.** Each word head is judged on its own, with the "
                    "sentence weights averaged over the sentence heads (HCAN's sentence heads mix every channel of "
                    "the sentence vectors, so sentence head 1 is not word head 1 one level up). Averaging the word "
                    "heads flattens them, so the averaged shading below can look even where one head is not. On our "
                    "HCAN most heads spread an article's weight widely; the paper draws a spread-out but not flat map "
                    "(its Figure 4). How peaked a target attention ends follows where its target vector started; "
                    "how long it trained moved it far less: "
                    + (viz.md_text(moved) if moved else "step 4 shows the sweep of starts.")
                    + " Random attention of the same shape passes this check too: concentration describes the map, "
                    "it does not show that the words are the right ones. The model classifies 97% of the test "
                    "articles correctly, so accuracy does not need peaked attention, and a heatmap's colour scale "
                    "must start at zero to show that.")
    head = c.focused_heads[0] if c.focused and len(c.head_top_shares) > 1 else None
    st.caption((f"Shaded: word head {head + 1}, the first where the claim holds, on its own scale" if head is not None
                else "Shaded: the word heads averaged (no head holds the claim here)")
               + "; the sentence bars: the sentence heads averaged.")
    with st.container(height=460):  # a long article scrolls inside, the step's layout stays on screen
        st.html(viz.shaded_document_html(**ex.text_view(), words=ex.target_attention("word", head),
                                         sentences=ex.target_attention("sentence")))
