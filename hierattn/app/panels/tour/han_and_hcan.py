"""The Tour's step 4 on the page: HAN against HCAN on one tweet (HCAN Figures 6-8), and what the
sweep of where their query vectors start shows."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from hierattn import viz
from hierattn.analysis.tour.han_and_hcan import heaviest_word, verdict_of
from hierattn.analysis.tour.two_self_attentions import branch_lines
from hierattn.app import loading
from hierattn.app.downloads import Figures, chart
from hierattn.app.panels.tour.recorded import show_rate
from hierattn.app.panels.tour.two_self_attentions import tweets_and_reviews
from hierattn.app.panels.tour.verdict import show_verdict


def draw(checkpoints: dict[str, Path]) -> None:
    """Step 4: HAN against HCAN on one review (HCAN Figures 6-8)."""
    st.subheader("HAN against HCAN: focused or spread out (HCAN Figures 6-8)")
    st.markdown("HAN feeds recurrent states straight into target attention, so its weights sit on keywords "
                "(Figure 6). HCAN's self-attention first redistributes the content of keywords over other words, "
                "so its target attention looks more spread out (Figure 7), and a plain word like *the* can carry a "
                "keyword's meaning (Figure 8).")
    rate = show_rate(4, checkpoints)
    docs = tweets_and_reviews(rate)
    pick = st.selectbox("A tweet both models classify correctly (test split), or a review from the paper",
                        range(len(docs)), key="tour4_doc", format_func=lambda i: docs[i][0])
    han = loading.explain_cached(checkpoints["tweets-han"], docs[pick][1])
    hcan = loading.explain_cached(checkpoints["tweets-hcan"], docs[pick][1])
    left, right = st.columns(2)
    left.markdown(f"**HAN** ({viz.md_text(han.label)})")
    left.html(viz.shaded_document_html(**han.text_view(), words=han.target_attention("word"),
                                        sentences=han.target_attention("sentence")))
    right.markdown(f"**HCAN** ({viz.md_text(hcan.label)})")
    st.caption("**What to notice.** Is HAN's shading darker on fewer words than HCAN's?")
    right.html(viz.shaded_document_html(**hcan.text_view(), words=hcan.target_attention("word"),
                                         sentences=hcan.target_attention("sentence")))
    shown, verdict, _ = verdict_of(han, hcan)
    show_verdict(shown, viz.md_text(verdict), "“HAN is more focused”")
    start_sweep_lesson(checkpoints=checkpoints)
    sentence, chosen = heaviest_word(hcan)
    tokens = [t.text for t in sentence.tokens]
    st.markdown(f"**Figure 8 on our HCAN.** Its heaviest word is {viz.md_code(tokens[chosen])}; before the target "
                "attention weighed it, each self-attention branch filled it with content from these words:")
    span = (sentence.tokens[chosen].start, sentence.tokens[chosen].end)
    st.html(viz.word_attention_html(tokens, branch_lines(hcan, sentence.start, span), chosen))


def seed_points(rows, x, y) -> dict[str, tuple[list[float], list[float]]]:
    """A sweep chart's points: per series (each row's model label), ``x(row)`` once per seed and
    the seeds' values ``y(row)``."""
    out: dict[str, tuple[list[float], list[float]]] = {}
    for r in rows:
        values = y(r)
        xs, ys = out.setdefault(r.label, ([], []))
        xs.extend([x(r)] * len(values))
        ys.extend(values)
    return out


def start_sweep_lesson(dataset: str = "tweets", checkpoints: dict[str, Path] | None = None) -> None:
    """What the sweep of the query's start shows (``experiments.start_sweep``): the same models trained
    from starts of every scale, their accuracy, their sharpness and their rank agreement."""
    from hierattn.experiments import start_sweep

    rows = start_sweep.rows(dataset)
    if not rows:
        st.caption("The sweep of where the query vectors start is not recorded here (`python -m hierattn reproduce "
                   f"{dataset}/` runs it).")
        return
    st.markdown("**Is it the architecture, or where training started?** HCAN scores each position against a "
                "learned target vector T, HAN against a learned context vector u_w; the softmax of those scores is "
                "sharper the longer the vector. The registry trained both from starts of every scale, N(0, v) for v "
                "from 1/d to 10, three seeds each, and measured each trained model on the test split:")
    recorded = Figures(f"HAN and HCAN on {dataset} · {len(rows)} recorded starts, test split")

    shipped = start_sweep.shipped_starts(checkpoints or {}, dataset, dict.fromkeys(r.model for r in rows))
    left, middle, right = st.columns(3)
    for column, (title, figure, percent) in zip((left, middle, right), (
            ("test accuracy", lambda r: r.accuracy, True),
            ("word attention's JSD from even", lambda r: r.word_jsd, False),
            ("Kendall tau with leave-one-out", lambda r: r.taus.get(start_sweep.TAUS[0], []), False))):
        chart(viz.start_sweep_chart(seed_points(rows, lambda r: r.variance, figure), title, percent, shipped=shipped),
              f"Where the attention starts: {title}",
              column, key=f"tour4_sweep_{title}", figures=recorded)
    seeds = sum(r.seeds for r in rows)
    st.markdown(f"**What the {seeds} recorded runs show.**\n" + "\n".join(
        f"- {viz.md_text(line)}" for line in start_sweep.lesson(rows)))
    st.caption("A rank correlation such as Kendall tau does not change when the scores are multiplied by a constant; "
               "a sharpness such as the JSD from even does. Where the sharpness follows the start, compare the two "
               "architectures on what training decides: which words rank high (right), not how peaked the map is.")
