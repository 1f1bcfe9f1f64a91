"""The Tour's step 2 on the page: HCAN's two parallel self-attentions on a tweet or on the paper's
Supplementary A reviews (Figure 5)."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from hierattn import viz
from hierattn.analysis.tour.rates import StepRate
from hierattn.analysis.tour.two_self_attentions import SUPPLEMENTARY_A, branch_contrast, branch_lines, branch_verdict
from hierattn.app import loading
from hierattn.app.panels.tour.recorded import picked, show_rate
from hierattn.app.panels.tour.verdict import show_verdict


def tweets_and_reviews(rate: StepRate | None) -> list[tuple[str, str]]:
    """(label, text): the tweets the record picked, then the reviews of HCAN's Supplementary A."""
    return picked(rate, "tweets") + [(f"the paper's Supplementary A · {' '.join(r.split()[:9])}…", r)
                                     for r in SUPPLEMENTARY_A]


def draw(checkpoints: dict[str, Path]) -> None:
    """Step 2: the two parallel branches on HCAN's Supplementary A reviews (Figure 5)."""
    st.subheader("Two parallel self-attentions: relations a weighted average misses (HCAN §3.4, Figure 5)")
    st.markdown("Attention only averages, so it cannot flip a meaning (negation: *was not the case*) or scale it "
                "(*to a high degree*). HCAN runs two self-attentions side by side, one with ELU values and one with "
                "tanh values (which can be negative), and multiplies their outputs element by element. The reviews "
                "below are the paper's Supplementary A: one self-attention got them wrong, two got them right.")
    rate = show_rate(2, checkpoints)
    docs = tweets_and_reviews(rate)
    pick = st.selectbox("A tweet from the test split, or a review from HCAN's Supplementary A", range(len(docs)),
                        key="tour2_doc", format_func=lambda i: docs[i][0])
    ex = loading.explain_cached(checkpoints["tweets-hcan"], docs[pick][1])
    st.caption(f"tweets-hcan reads it as {viz.md_text(ex.label)} ({max(ex.probabilities):.0%}); our model was trained "
               "on tweets (positive / neutral / negative), not on the paper's reviews.")
    sentences = ex.document.sentences
    default = next((i for i, s in enumerate(sentences) if "doesnt" in [t.text for t in s.tokens]), 0)
    if len(sentences) == 1:
        default = 0
    s_idx = st.selectbox("Sentence", range(len(sentences)), index=default, key=f"tour2_sentence_{pick}",
                         format_func=lambda i: " ".join(t.text for t in sentences[i].tokens[:12]) + "…")
    tokens = sentences[s_idx].tokens
    words = [t.text for t in tokens]
    start = words.index("it") if "it" in words else 0
    w_idx = st.select_slider("Word", range(len(tokens)), value=start, format_func=words.__getitem__,
                             key=f"tour2_word_{pick}_{s_idx}")
    rows = branch_lines(ex, sentences[s_idx].start, (tokens[w_idx].start, tokens[w_idx].end))
    st.html(viz.word_attention_html(words, rows, w_idx))
    contrast = branch_contrast(ex)
    examples = "; ".join(f"'{w}' → '{a}' in branch a, '{b}' in branch b" for w, a, b in contrast.examples[:3])
    shown, verdict = branch_verdict(contrast)
    st.markdown("**What to notice.** The two branches should relate a word to different words: in the paper, 'it' "
                "looks at 'doesnt' in one branch and at 'chop' in the other. The check asks whether the heads of "
                "branch a differ from those of branch b more than any other way of splitting the same heads into two "
                "groups would: a head keeps its character across the words of a review, so the whole review is "
                "judged on one split.")
    show_verdict(shown, viz.md_text(verdict), "“the branches differ”")
    if examples:
        st.caption("Words whose most-attended other word differs: " + viz.md_text(examples) + ".")
    if rate is not None and rate.documents and rate.rate <= 2 / 35:
        st.markdown(f"**Over the test split, no more often than chance.** The claim holds on {rate.rate:.1%} of the "
                    "tweets; if the branch labels meant nothing, the real split would be the most different of the 35 "
                    "on 1 tweet in 35 (2.9%). On our tweets HCAN, the two branches' heads differ no more than any two "
                    "groups of its heads do: the paper's Figure 5 shows what two branches can do, not what they "
                    "must do. Where a review here holds, treat it as one of the 1 in 35.")
    st.caption("The paper also compares with a single self-attention on the same reviews. We ship no "
               "single-self-attention HCAN for tweets; on bbc-news, docs/RESULTS.md has both rows.")
