"""The Tour's step 6 on the page: the heads Clark et al. (2019) found in BERT, on the shipped
pre-trained encoder."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from hierattn import viz
from hierattn.app.downloads import Figures, chart
from hierattn.app.panels.tour.recorded import explained_pick, recorded_rate, show_rate
from hierattn.app.panels.tour.verdict import show_verdict


def draw(checkpoints: dict[str, Path]) -> None:
    """Step 6: the heads Clark et al. (2019) found in BERT, on the shipped pre-trained encoder."""
    from hierattn.analysis import clark, heads

    st.subheader("A pre-trained transformer: the heads Clark et al. found")
    st.markdown("all-MiniLM-L6-v2 learnt English from over a billion sentence pairs before it saw a tweet; "
                "tweets-minilm is that model fine-tuned here on 4,000 tweets. Clark et al. (2019) found in pre-trained "
                "BERT heads that put over half of their attention on the **previous** or the **next** token, and "
                "middle layers that sink over half of theirs on one special token, [SEP] in BERT. Each share below "
                "stands beside an even spread over the same tokens: 1/T for a position, s/T for s special tokens.")
    ex = explained_pick(show_rate(6, checkpoints), "tweets", "A tweet from the test split", "tour6_doc",
                        checkpoints["tweets-minilm"])
    rows = clark.profile(ex)
    layers = clark.by_layer(rows)
    best = max(rows, key=lambda r: max(r["previous"] - r["previous_even"], r["next"] - r["next_even"]))
    side = "previous" if best["previous"] - best["previous_even"] >= best["next"] - best["next_even"] else "next"
    sink = max(layers, key=lambda r: r["first special"] - r["first special_even"])
    first = rows[0]["first_special"] or "the first token"
    excess = min(best[side] - best[f"{side}_even"], sink["first special"] - sink["first special_even"])
    show_verdict(excess >= heads.MARGIN, f"Layer {best['layer'] + 1}, head {best['head'] + 1} gives "
                 f"{best[side]:.0%} of its attention to the {side} token (even: {best[f'{side}_even']:.0%}); layer "
                 f"{sink['layer'] + 1}'s heads give {viz.md_text(first)} {sink['first special']:.0%} on average "
                 f"(even: {sink['first special_even']:.0%}).", "“pre-training leaves positional heads and a sink”")
    chart(viz.clark_layers(layers, first), "What the heads look at, layer by layer", key="tour_pretrained_layers",
          figures=Figures.of_document("tweets-minilm", ex.document.text))
    rate = recorded_rate(6)
    sink = ""
    if rate and "sink over half" in rate.parts:
        count, holds = rate.parts["sink over half"]
        positional = rate.parts["positional head over half"]
        sink = (f" At their bar, over half of the attention, this encoder has a positional head on "
                f"{positional[1] / max(positional[0], 1):.0%} of the test tweets, but its best layer sinks over half "
                f"on {viz.md_text(first)} on only {holds / max(count, 1):.0%} of them. Both pass this step's own "
                f"bar (30 points above an even spread) on {rate.rate:.0%}: the positional heads are as Clark et al. "
                "found them, the sink is weaker than the one they report.")
    st.markdown(f"**Beside the paper.** In BERT-base, Clark et al. report heads with over 50% on the previous or "
                f"next token, and over half of layers 6-10's attention on [SEP]. This encoder sinks on "
                f"{viz.md_text(first)} instead (a sink is where a head puts attention it has no use for).{sink} "
                "Step 5 asks the same of a BERT trained from scratch on these tweets alone.")
