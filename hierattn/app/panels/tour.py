"""The Tour's four steps, each drawn on the shipped checkpoints and judged by ``analysis.tour``."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from hierattn import viz
from hierattn.analysis import tour
from hierattn.app import loading
from hierattn.data.builtin import sample_documents


def _verdict(shown: bool, markdown: str) -> None:
    """A step's check: green where the model shows the paper's claim beyond the baselines, else a
    warning that says it is not shown here."""
    (st.success if shown else st.warning)(markdown, icon=":material/check_circle:" if shown else ":material/info:")


def _shading(ex) -> tuple:
    """viz.document_html's arguments for an explained document, shaded by its target attention."""
    return ex.document.text, ex.document.spans(), ex.target_attention("word"), ex.target_attention("sentence")


def target_attention(checkpoints: dict[str, Path]) -> None:
    """Step 1: target attention on a bbc-news article (HCAN Figure 4)."""
    st.subheader("Target attention: the document says where it looks (HCAN Figure 4)")
    st.markdown("HCAN pools each sentence's words, then the document's sentences, with **target attention**: a learned "
                "target vector scores every position, and the softmax of those scores weighs the average. Word "
                "shade = weight within its sentence; the orange bar = the sentence's weight in the document.")
    docs = sample_documents("bbc-news")
    pick = st.selectbox("An article from the test split", range(len(docs)), key="tour1_doc",
                        format_func=lambda i: f"{docs[i][0]} · {' '.join(docs[i][1].split()[:10])}…")
    ex = loading.explain_cached(checkpoints["bbc-news-hcan"], docs[pick][1])
    st.metric("Prediction (bbc-news-hcan)", ex.label, f"{max(ex.probabilities):.1%}", delta_color="off")
    st.html(viz.document_html(*_shading(ex)))
    c = tour.concentration(ex)
    shown, verdict = tour.concentration_verdict(c)
    _verdict(shown, "**What to notice.** A handful of words carry the weight, and the words that name the topic "
             "should be among them: the heaviest here are " + viz.md_text(", ".join(c.top_words)) + ". "
             + viz.md_text(verdict))


def two_self_attentions(checkpoints: dict[str, Path]) -> None:
    """Step 2: the two parallel branches on HCAN's Supplementary A reviews (Figure 5)."""
    st.subheader("Two parallel self-attentions: relations a weighted average misses (HCAN §3.4, Figure 5)")
    st.markdown("Attention only averages, so it cannot flip a meaning (negation: *was not the case*) or scale it "
                "(*to a high degree*). HCAN runs two self-attentions side by side, one with ELU values and one with "
                "tanh values (which can be negative), and multiplies their outputs element by element. The reviews "
                "below are the paper's Supplementary A: one self-attention got them wrong, two got them right.")
    pick = st.selectbox("A review from HCAN's Supplementary A", range(len(tour.SUPPLEMENTARY_A)), key="tour2_doc",
                        format_func=lambda i: " ".join(tour.SUPPLEMENTARY_A[i].split()[:12]) + "…")
    ex = loading.explain_cached(checkpoints["tweets-hcan"], tour.SUPPLEMENTARY_A[pick])
    st.caption(f"tweets-hcan reads it as {viz.md_text(ex.label)} ({max(ex.probabilities):.0%}); our model was trained "
               "on "
               "tweets (positive / neutral / negative), not on the paper's reviews.")
    sentences = ex.document.sentences
    default = next((i for i, s in enumerate(sentences) if "doesnt" in [t.text for t in s.tokens]), 0)
    s_idx = st.selectbox("Sentence", range(len(sentences)), index=default, key=f"tour2_sentence_{pick}",
                         format_func=lambda i: " ".join(t.text for t in sentences[i].tokens[:12]) + "…")
    tokens = sentences[s_idx].tokens
    words = [t.text for t in tokens]
    start = words.index("it") if "it" in words else 0
    w_idx = st.select_slider("Word", range(len(tokens)), value=start, format_func=words.__getitem__,
                             key=f"tour2_word_{pick}_{s_idx}")
    rows = tour.branch_lines(ex, sentences[s_idx].start, (tokens[w_idx].start, tokens[w_idx].end))
    st.html(viz.word_attention_html(words, rows, w_idx))
    contrast = tour.branch_contrast(ex)
    examples = "; ".join(f"'{w}' → '{a}' in branch a, '{b}' in branch b" for w, a, b in contrast.examples[:3])
    shown, verdict = tour.branch_verdict(contrast)
    _verdict(shown, "**What to notice.** The two branches should relate a word to different words: in the paper, "
             "'it' looks at 'doesnt' in one branch and at 'chop' in the other. " + viz.md_text(verdict))
    if examples:
        st.caption("Words whose most-attended other word differs: " + viz.md_text(examples) + ".")
    st.info("What we cannot show here: the paper's comparison with a single self-attention on the same reviews. We "
            "ship no single-self-attention HCAN for tweets; on bbc-news, the README's results table has both rows.")


def diagonal_or_columnar(checkpoints: dict[str, Path]) -> None:
    """Step 3: SANet's band-diagonal sentiment against columnar topic attention."""
    st.subheader("Sentiment looks near, topic looks at a few columns (SANet Figures 3-5, Table 2)")
    st.markdown("In SANet's self-attention maps, sentiment tasks give a **band around the diagonal**: each word "
                "attends to its neighbours, the local phrase carrying the polarity. Topic tasks give **columns**: "
                "every word attends to the same few topical words. SANet measures the first with diagonality "
                "(share of attention within b positions of the diagonal).")
    tweets, articles = sample_documents("tweets"), sample_documents("bbc-news")
    left, right = st.columns(2)
    t_pick = left.selectbox("A tweet (tweets-sanet)", range(len(tweets)), key="tour3_tweet",
                            format_func=lambda i: " ".join(tweets[i][1].split()[:10]))
    a_pick = right.selectbox("An article (bbc-news-sanet)", range(len(articles)), key="tour3_article",
                             format_func=lambda i: " ".join(articles[i][1].split()[:10]))
    shapes = {}
    for where, name, text in ((left, "tweets-sanet", tweets[t_pick][1]), (right, "bbc-news-sanet",
                                                                          articles[a_pick][1])):
        ex = loading.explain_cached(checkpoints[name], text)
        map_name = ex.self_attention_names[0]
        matrix = ex.self_attention(map_name, None, None)
        words = [t.text for s in ex.document.sentences for t in s.tokens]
        n = min(len(words), 60)
        where.plotly_chart(viz.attention_heatmap(matrix[:n, :n], words[:n], f"{name} · first {n} words"),
                           width="stretch", key=f"tour3_{name}")
        shapes[name] = tour.matrix_shape(ex, map_name)
    verdicts = tour.sanet_verdict(shapes["tweets-sanet"], shapes["bbc-news-sanet"])
    for shown, verdict in verdicts:
        _verdict(shown, "**What to notice.** " + viz.md_text(verdict))
    st.caption("Why the even spread: attention spread evenly over a 15-word tweet already has 41% of its weight within "
               "3 positions of the diagonal, over a 1,000-word article under 1%, so raw shares mostly measure length. "
               "Over whole test splits (Dataset statistics page, topic versus sentiment) our tweets SANet's "
               "attention is no more diagonal than an even spread.")


def han_and_hcan(checkpoints: dict[str, Path]) -> None:
    """Step 4: HAN against HCAN on one review (HCAN Figures 6-8)."""
    st.subheader("HAN against HCAN: focused or spread out (HCAN Figures 6-8)")
    st.markdown("HAN feeds recurrent states straight into target attention, so its weights sit on keywords "
                "(Figure 6). HCAN's self-attention first redistributes the content of keywords over other words, "
                "so its target attention looks more spread out (Figure 7), and a plain word like *the* can carry a "
                "keyword's meaning (Figure 8).")
    pick = st.selectbox("A review from HCAN's Supplementary A", range(len(tour.SUPPLEMENTARY_A)), index=1,
                        key="tour4_doc", format_func=lambda i: " ".join(tour.SUPPLEMENTARY_A[i].split()[:12]) + "…")
    han = loading.explain_cached(checkpoints["tweets-han"], tour.SUPPLEMENTARY_A[pick])
    hcan = loading.explain_cached(checkpoints["tweets-hcan"], tour.SUPPLEMENTARY_A[pick])
    left, right = st.columns(2)
    left.markdown(f"**HAN** ({viz.md_text(han.label)})")
    left.html(viz.document_html(*_shading(han)))
    right.markdown(f"**HCAN** ({viz.md_text(hcan.label)})")
    right.html(viz.document_html(*_shading(hcan)))
    c_han, c_hcan = tour.concentration(han), tour.concentration(hcan)
    shown, verdict = tour.han_hcan_verdict(c_han, c_hcan)
    _verdict(shown, "**What to notice.** " + viz.md_text(verdict))
    sentence, chosen = tour.heaviest_word(hcan)
    tokens = [t.text for t in sentence.tokens]
    st.markdown(f"**Figure 8 on our HCAN.** Its heaviest word is {viz.md_code(tokens[chosen])}; before the target "
                "attention weighed it, each self-attention branch filled it with content from these words:")
    span = (sentence.tokens[chosen].start, sentence.tokens[chosen].end)
    st.html(viz.word_attention_html(tokens, tour.branch_lines(hcan, sentence.start, span), chosen))


# The steps in order: (title, the shipped checkpoints each needs, the function that draws it)
STEPS = {1: ("1 · Target attention", ["bbc-news-hcan"], target_attention),
         2: ("2 · Two self-attentions", ["tweets-hcan"], two_self_attentions),
         3: ("3 · Diagonal or columnar", ["tweets-sanet", "bbc-news-sanet"], diagonal_or_columnar),
         4: ("4 · HAN and HCAN", ["tweets-han", "tweets-hcan"], han_and_hcan)}
