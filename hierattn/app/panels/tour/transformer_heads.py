"""The Tour's step 5 on the page: every head of the shipped transformer beside an even spread
(Clark et al. 2019)."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from hierattn import viz
from hierattn.app.downloads import Figures, chart
from hierattn.app.panels.tour.recorded import explained_pick, show_rate
from hierattn.app.panels.tour.verdict import show_verdict


def draw(checkpoints: dict[str, Path]) -> None:
    """Step 5: every head of the shipped transformer beside an even spread (Clark et al. 2019)."""
    from hierattn.analysis import heads

    st.subheader("Inside a transformer: what its heads do (Clark et al. 2019)")
    st.markdown("A transformer has no target attention: every layer lets every token attend to every other, in "
                "several heads. In a pre-trained BERT, Clark et al. found heads with one job: attend to the previous "
                "token, to the next, to the separator token. The grid measures each head of our small BERT, trained "
                "from scratch on tweets, against an even spread over the same tokens: a head is labelled when its "
                f"share is {heads.MARGIN:.0%} above.")
    ex = explained_pick(show_rate(5, checkpoints), "tweets", "A tweet from the test split", "tour5_doc",
                        checkpoints["tweets-transformer"])
    rows = heads.overview(ex)
    found = [r for r in rows if r["finding"]]
    show_verdict(bool(found), (f"{len(found)} of {len(rows)} heads have a pattern {heads.MARGIN:.0%} above an "
                               "even spread: " + ", ".join(
        f"layer {r['layer'] + 1} head {r['head'] + 1} ({r['finding']})" for r in found[:6]) + ".") if found else
        f"None of its {len(rows)} heads is {heads.MARGIN:.0%} above an even spread in any pattern.",
        "“heads have positional jobs”")
    values, labels = heads.grid(rows)
    chart(viz.head_grid(values, labels, [f"layer {i + 1}" for i in range(values.shape[0])],
                        [f"head {h + 1}" for h in range(values.shape[1])]), "Every head at a glance", key="tour_heads",
          figures=Figures.of_document("tweets-transformer", ex.document.text))
    if not found:
        st.markdown("**Why not, on our model.** Clark et al. looked at BERT after pre-training on billions of words; "
                    "ours learnt from 30,000 tweets for a few epochs, to classify them. Its heads' shares of the "
                    "previous token, the next token and the special tokens stay within a few points of an even "
                    "spread on most tweets: positional heads come with pre-training, not with attention itself.")
