"""Compare: two models, one document. Predictions, where each looks (one colour scale), how far
they agree, and their self-attention over the same sentence and for one word (HCAN Figures 5-8)."""
import streamlit as st

from hierattn import viz
from hierattn.analysis.explain import ExplainError
from hierattn.app import downloads, loading, url_state, widgets
from hierattn.app.panels import comparison
from hierattn.app.routing import run_through_app
from hierattn.checkpoint.classifier import WITHHELD

run_through_app()

st.title("Compare two models")
checkpoints = loading.checkpoints_or_stop()
names = list(checkpoints)
labels = loading.checkpoint_options(checkpoints)


def _default(preferred: str, fallback: int) -> int:
    return names.index(preferred) if preferred in names else min(fallback, len(names) - 1)


link_problem = url_state.apply_view_from_url(checkpoints, {"a": "compare_a", "b": "compare_b"}, "compare_document",
                                      "compare_sample", {})
if link_problem:
    st.warning(link_problem)
with st.sidebar:
    # HAN against HCAN on the same data is the classic comparison (HCAN paper Figures 6-8).
    name_a = st.selectbox("Model A", names, index=_default("bbc-news-han", 0), key="compare_a", format_func=labels.get)
    name_b = st.selectbox("Model B", names, index=_default("bbc-news-hcan", 1), key="compare_b", format_func=labels.get)
models = {slot: loading.load_or_stop(checkpoints[name], f"Model {slot} ({viz.md_code(name)})")
          for slot, name in (("A", name_a), ("B", name_b))}
with st.sidebar:
    for slot, c in models.items():
        accuracy = c.metrics.get("test_accuracy")
        st.caption(f"**{slot}: {c.display_name}** · {viz.md_code(c.dataset or '?')}"
                   + (f" · test accuracy {accuracy:.1%}" if accuracy is not None else ""))
    if models["A"].dataset != models["B"].dataset:
        st.warning("The two models were trained on different data sets, so their classes differ.")

text = widgets.document_input(models["A"].dataset, "compare_sample", "compare_document", 150,
                         "Paste a document to see both models read it…",
                         corpus=models["A"].metrics.get("corpus"), checkpoint=checkpoints[name_a])
if not text or not text.strip():
    st.info("Paste a document, or choose a sample above, to compare how the two models read it.")
    st.stop()
explanations = {}
names = {"A": name_a, "B": name_b}
for slot, name in names.items():
    try:
        explanations[slot] = loading.explain_cached(checkpoints[name], text)
    except ExplainError as exc:
        st.warning(f"Nothing to show: {viz.md_text(exc)}.")
        st.stop()
kind, document_ref = url_state.document_id(text, models["A"].dataset)
with st.sidebar:
    st.caption("Link to this comparison (the address bar follows it too):")
    # inline code: st.code would load its 1.5 MB syntax highlighter for this one line (see panels/share.py)
    st.markdown(viz.md_code(url_state.mirror_view({"a": name_a, "b": name_b, kind: document_ref})))
doc_key = widgets.document_key(text)
figures = downloads.Figures(f"A: {name_a} · B: {name_b} · “{widgets.opening(text)}”")
for slot, ex in explanations.items():
    if ex.document.truncation.truncated:
        st.caption(f"Model {slot} read part of this document: {ex.document.truncation.message}.")

# 1. Predictions
for column, (slot, ex) in zip(st.columns(2), explanations.items()):
    with column:
        st.markdown(f"#### {slot}: {models[slot].display_name}")
        if ex.withheld:  # a base encoder's random head, or an untrained one: no label, no chart of chance
            st.info(f"No prediction: {viz.md_code(names[slot])} is {viz.md_text(WITHHELD[ex.withheld])}.")
            continue
        st.metric("Prediction", viz.md_text(ex.label), help=f"Checkpoint {viz.md_text(ex.classifier_name)}")
        downloads.chart(viz.probability_chart(ex.labels, ex.probabilities),
                        f"Class probabilities, {slot}", key=f"probs_{slot}",
                        figures=downloads.Figures.of_document(names[slot], text, models[slot].display_name))

# 2. Where each model looks, and how far they agree; 3. their self-attention over one sentence and one word
comparison.where_each_looks(explanations, models, figures)
comparison.same_sentence(explanations, models, text, doc_key)
