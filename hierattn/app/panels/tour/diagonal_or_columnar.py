"""The Tour's step 3 on the page: SANet's band-diagonal sentiment attention against its columnar
topic attention (Figures 3-5, Table 2)."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from hierattn import viz
from hierattn.analysis.tour.diagonal_or_columnar import matrix_shape, sanet_verdict
from hierattn.app import loading
from hierattn.app.downloads import Figures, chart
from hierattn.app.panels.tour.recorded import picked, show_rate
from hierattn.app.panels.tour.verdict import show_verdict
from hierattn.data.builtin import sample_documents


def draw(checkpoints: dict[str, Path]) -> None:
    """Step 3: SANet's band-diagonal sentiment against columnar topic attention."""
    st.subheader("Sentiment looks near, topic looks at a few columns (SANet Figures 3-5, Table 2)")
    st.markdown("In SANet's self-attention maps, sentiment tasks give a **band around the diagonal**: each word "
                "attends to its neighbours, the local phrase carrying the polarity. Topic tasks give **columns**: "
                "every word attends to the same few topical words. SANet measures the first with diagonality "
                "(share of attention within b positions of the diagonal).")
    rate = show_rate(3, checkpoints)
    tweets = picked(rate, "tweets", "tweet ") or [(" ".join(t.split()[:10]), t) for _, t in sample_documents("tweets")]
    articles = picked(rate, "bbc-news", "article ") or [(" ".join(t.split()[:10]), t)
                                                        for _, t in sample_documents("bbc-news")]
    left, right = st.columns(2)
    t_pick = left.selectbox("A tweet (tweets-sanet)", range(len(tweets)), key="tour3_tweet",
                            format_func=lambda i: tweets[i][0])
    a_pick = right.selectbox("An article (bbc-news-sanet)", range(len(articles)), key="tour3_article",
                             format_func=lambda i: articles[i][0])
    shapes = {}
    for name, text in (("tweets-sanet", tweets[t_pick][1]), ("bbc-news-sanet", articles[a_pick][1])):
        ex = loading.explain_cached(checkpoints[name], text)
        map_name = ex.self_attention_names[0]
        matrix = ex.self_attention(map_name, None, None)
        words = [t.text for s in ex.document.sentences for t in s.tokens]
        n = min(len(words), 40)
        chart(viz.attention_heatmap(matrix[:n, :n], words[:n], f"{name} · first {n} words"),
              f"Self-attention over the first {n} words", key=f"tour3_{name}",
              figures=Figures.of_document(name, text))
        shapes[name] = matrix_shape(ex, map_name)
    verdicts = sanet_verdict(shapes["tweets-sanet"], shapes["bbc-news-sanet"])
    for (shown, verdict), what in zip(verdicts, ("“sentiment looks near”", "“topic looks at a few columns”")):
        show_verdict(shown, viz.md_text(verdict), what)
    if rate is not None and rate.parts:
        tweets, articles = rate.parts["tweets diagonal"], rate.parts["articles columnar"]
        diagonal, columnar = tweets[1] / max(tweets[0], 1), articles[1] / max(articles[0], 1)
        st.markdown(
            "**Over the test splits.** "
            + (f"Only {diagonal:.0%} of tweets are more diagonal than their own rows shuffled, no more than the 5% "
               "chance gives: our tweets SANet shows no band. " if diagonal <= 0.06 else
               f"{diagonal:.0%} of tweets are more diagonal than their own rows shuffled (5% by chance). ")
            + (f"{columnar:.0%} of articles are more columnar than theirs: the columns survive the null that keeps "
               "each row's sharpness, so topic attention here does look at a few words throughout."
               if columnar >= 0.5 else
               f"{columnar:.0%} of articles are more columnar than theirs (5% by chance).")
            + _tweets_columnar(rate.parts, "tweet strongest" in rate.picks))
    st.caption("Why these baselines: attention spread evenly over a 15-word tweet already has 41% of its weight "
               "within 3 positions of the diagonal, over a 1,000-word article under 1%, so raw shares mostly measure "
               "length. And a sharp row puts much of its weight near the diagonal or on a few keys by chance: the "
               "check shuffles each row's own weights among its keys, which keeps how sharp the row is and destroys "
               "only where its weight sits. Over whole test splits (Dataset statistics page, topic versus "
               "sentiment) our tweets SANet's attention is no more diagonal than an even spread.")


def _tweets_columnar(parts: dict, offered: bool) -> str:
    """The columnar rate of the tweets, beside the diagonal one: columns on both sides mean columns do
    not tell topic from sentiment here; and whether any tweet that reads as a band is offered."""
    columnar, band = parts.get("tweets columnar"), parts.get("tweets reading as a band")
    if not columnar:
        return ""
    share = columnar[1] / max(columnar[0], 1)
    out = (f" But {share:.1%} of tweets are more columnar than their own rows shuffled too, so on our SANets columns "
           "do not separate topic from sentiment")
    if band:
        out += (f". {band[1]:,} tweets are more diagonal than the null and read as a band (further towards a band "
                "than towards columns)")
        out += (": the strongest readable one is offered first above" if offered else
                ", and none of them is one to show a class (each has a web address, a @handle or fewer than 8 "
                "words), so no tweet is offered as the band's example: the tweets above are the typical and the "
                "weakest")
    return out + "."
