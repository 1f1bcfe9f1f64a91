"""Does the shading drive the prediction? Erasure curves for one document (Explore, with the
attribution shading beside the attention's) and over a split (Dataset statistics)."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from hierattn import viz
from hierattn.analysis import compare as comparing
from hierattn.analysis import faithfulness
from hierattn.analysis.attribution import IG_STEPS, supports_gradients
from hierattn.analysis.attribution_methods import INTEGRATED
from hierattn.analysis.battery_split import evenly_spaced
from hierattn.analysis.explain import Explanation
from hierattn.analysis.shapley import EXACT_SENTENCES, SHAP_SAMPLES, sentence_table
from hierattn.app.downloads import Figures, chart
from hierattn.app.loading import checkpoint_key
from hierattn.app.panels.shading import Shading
from hierattn.app.tasks import computed
from hierattn.app.widgets import asked_for, documents_count, keep_valid
from hierattn.checkpoint.classifier import Classifier

CONVERGED = 0.05  # Integrated Gradients' relative delta under which its scores are read as complete


def offered(classifier: Classifier, ex: Explanation, shading: Shading) -> bool:
    """Whether Explore offers "Test the shading": the model paints the document, its self-attention
    gives each word the attention it receives (the ranking its curves use), or it has an embedding
    table to attribute through (a model without attention, ON-LSTM: the attributions alone)."""
    return shading.painted or comparing.importance(ex) is not None or supports_gradients(classifier)


def document_erasure(classifier: Classifier, path: Path, ex: Explanation, shading: Shading, doc_key: str,
                     figures: Figures):
    """Explore's "Test the shading": the document's erasure curves, computed in the background, and
    an attribution method's shading beside the attention's. Returns the curves (None while they are
    computed)."""
    methods = faithfulness.interactive_methods(ex.document.num_tokens)
    for left_out in (m for m in faithfulness.WORD_METHODS if m.name not in methods):
        st.caption(f"{left_out.name.capitalize()} is left out: it needs {left_out.cost}, and this document has "
                   f"{ex.document.num_tokens:,} (the limit here is {left_out.most_units:,}). "
                   "`hierattn.analysis.faithfulness.erasure_curves(classifier, explanation)` runs it on any length.")
    curves = computed(("erasure", *checkpoint_key(path), doc_key, methods),
                      lambda progress: faithfulness.erasure_curves(classifier, ex, methods=methods, progress=progress),
                      "Removing words:", unit="steps")
    if curves is None:
        return None
    attributions = [m for m in faithfulness.ATTRIBUTIONS if m in curves.scores]
    if attributions:  # the attention shading and an attribution's, side by side, with their agreement
        with (shading.slot or st.empty()).container():
            keep_valid("attribution", attributions)
            alone = not shading.painted and comparing.importance(ex) is None  # no attention to set it beside
            method = st.radio("Attribution" if alone else "Beside the attention shading", attributions,
                              horizontal=True, key="attribution",
                              help="Gradient × input: |gradient · embedding| of the predicted class's logit. "
                                   "Integrated gradients (captum): that logit's gradient integrated from every word "
                                   "replaced by one the model does not know to the document, per word. "
                                   "Leave-one-out (captum's occlusion): the fall in its probability when the word "
                                   "alone is removed. A word that argues against the class is left unshaded.")
            rho = curves.agreement.get(method)
            received = None if shading.painted else comparing.importance(ex)
            left, right = st.columns(2)
            text = ex.text_view()
            if alone:
                left.markdown(f"**{method}**")
                left.html(viz.shaded_document_html(**text, part=shading.part, sentences=None,
                                                   words=faithfulness.by_sentence(curves.scores[method], ex.document)))
                right.info(f"{viz.md_text(classifier.display_name)} has no attention: the attribution shows where "
                           "the prediction comes from without one to compare it with.")
            elif shading.painted:
                left.markdown("**Attention**")
                left.html(viz.shaded_document_html(**text, **shading.options()))
            else:  # self-attention only: the attention each word receives, the ranking the curves use
                left.markdown(f"**Attention** ({viz.md_text(received.source)})")
                left.html(viz.shaded_document_html(**text, words=comparing.shading(ex, received), sentences=None,
                                                   part=shading.part))
            if shading.painted or received is not None:
                right.markdown(f"**{method}** · Spearman ρ with attention: "
                               + ("n/a" if rho is None else f"{rho:+.2f}"))
                attribution = faithfulness.by_sentence(curves.scores[method], ex.document)
                right.html(viz.shaded_document_html(**text, words=attribution, sentences=None, scale=shading.scale,
                                                    part=shading.part, legend=False))
            if method == INTEGRATED.name and curves.convergence is not None:
                converged = curves.convergence <= CONVERGED
                (right.caption if converged else right.warning)(
                    f"Convergence delta: the words' scores add up to the logit's change from the baseline within "
                    f"{curves.convergence:.1%} ({IG_STEPS} steps)"
                    + ("." if converged else f", more than {CONVERGED:.0%}: read the shading with care."))
    drawn, verdict = st.columns([3, 2])
    chart(viz.erasure_chart(curves.ks, curves.drops, curves.label, "words removed"), "erasure curves", drawn,
          figures=figures)
    verdict.markdown("\n".join(f"- {viz.md_text(line)}" for line in curves.verdicts()))
    if curves.agreement:  # one line: three metrics' labels are cut short in half a 1024-px page
        verdict.markdown("**Spearman ρ of the attention with** " + " · ".join(
            f"{method} {'n/a' if rho is None else f'{rho:+.2f}'}" for method, rho in curves.agreement.items()),
            help="Rank correlation of the words' attention and each attribution's, over this document.")
    sentence_attributions(classifier, path, ex, doc_key)
    return curves


def sentence_attributions(classifier: Classifier, path: Path, ex: Explanation, doc_key: str) -> None:
    """Each sentence's attention beside captum's sentence occlusion and the sentences' Shapley values,
    on request (one forward pass per sentence, then up to 2^9 for exact Shapley values, or
    KernelSHAP's draws of SHAP_SAMPLES until their error is small)."""
    if len(ex.document.sentences) < 2:
        return
    if not st.toggle("Sentence attributions: occlusion and Shapley values beside the sentence attention",
                     key="sentence_attributions",
                     help="Occlusion: the fall in P(predicted class) when the sentence alone is removed. "
                          "Shapley value: each sentence's fair share of that probability over every subset of the "
                          f"sentences, exact up to {EXACT_SENTENCES} sentences (every subset read); for longer "
                          f"documents KernelSHAP estimates it (captum), in draws of {SHAP_SAMPLES} subsets until its "
                          "measured error is under half a point, and says that error. In the background."):
        return
    table = computed(("sentence-attributions", *checkpoint_key(path), doc_key),
                     lambda progress: sentence_table(classifier, ex, progress), "Attributing the sentences:",
                     unit="steps")
    if table is None:
        return
    st.dataframe(table["rows"], hide_index=True, width="stretch",
                 column_config={"sentence": st.column_config.TextColumn(width="medium")})
    st.caption(table["caption"])


def split_erasure(classifier: Classifier, path: Path, name: str, dataset: str, split: str, texts: list[str]) -> None:
    """Dataset statistics' erasure over documents spread evenly through a split, on request."""
    st.subheader("Is the attention faithful? Erasure over the split")
    st.caption("For each document: remove the top words by attention, by gradient × input, by Integrated "
               "Gradients (captum), by leave-one-out "
               "occlusion, by the sentence attention spread evenly over each sentence's words (a hierarchical model's "
               "null: what its sentence weights give with no word attention) and in "
               "random orders (1/40 up to half of its words), and measure the drop in the probability of the class "
               "the model predicted. Curves are means over documents; the area is the mean drop. Leave-one-out "
               "needs one forward pass per word: slow on long articles.")
    left, middle, right = st.columns([2, 3, 3])  # the toggle's label whole at 1024 px
    count = documents_count(left, "erasure", len(texts))
    slow = [m.name for m in faithfulness.WORD_METHODS if m.most_units is not None]  # a forward pass per word
    with_occlusion = middle.toggle(f"Include {' and '.join(slow)}", value=classifier.text_config.max_sentences <= 10,
                                   key="erasure_occlusion")
    if not asked_for(right, "erasure", "Compute the erasure curves", (name, dataset, split, count, with_occlusion)):
        return
    methods = faithfulness.METHODS if with_occlusion else tuple(m for m in faithfulness.METHODS if m not in slow)
    part = evenly_spaced(texts, count)  # a split may be sorted by class: its head is not a sample
    erasure = computed(("split-erasure", *checkpoint_key(path), dataset, split, count, methods),
                       lambda progress: faithfulness.split_erasure(classifier, part, methods=methods,
                                                                   progress=progress),
                       f"Erasure, {name} on {dataset} ({split}):")
    if erasure is None:
        return
    if not erasure.documents:
        st.info("No document of this split has enough words.")
        return
    drawn, numbers = st.columns([3, 2])
    chart(viz.erasure_chart(erasure.shares, erasure.drops, "predicted class", "share of words removed",
                            percent_x=True), "Erasure curves: the probability's drop as words are removed", drawn,
          figures=Figures(f"{name} · {dataset}, {split} split · {erasure.documents:,} documents"))
    base = erasure.auc.get("random", 0.0)
    numbers.dataframe({"method": list(erasure.auc), "mean drop (points)": [round(100 * v,
                                                                                 1) for v in erasure.auc.values()],
                       "vs random (points)": [round(100 * (v - base), 1) for v in erasure.auc.values()]},
                      hide_index=True)
    numbers.caption(f"{erasure.documents} documents. Mean Spearman correlation with attention: "
                    + ", ".join(f"{m} {r:+.2f}" for m, r in erasure.agreement.items()) + ".")
