"""Explore: one model, one document: prediction, target attention on the text, self-attention
heatmaps with their Gini and diagonality, and the attention distributions."""
import streamlit as st

from hierattn import viz
from hierattn.analysis.explain import ExplainError
from hierattn.app import loading, url_state, widgets
from hierattn.app.downloads import Figures, chart
from hierattn.app.panels import (
    domain,
    faithfulness,
    gates,
    head_importance,
    heads,
    self_attention,
    shading,
    share,
    trust,
    welcome,
    whatif,
)
from hierattn.app.routing import run_through_app

run_through_app()
st.title("Explore attention")
welcome.welcome()
checkpoints = loading.checkpoints_or_stop()

link_problem = url_state.apply_view_from_url(checkpoints)  # a shared link: model, document, head, level, sentence
url_state.take_explore_request(checkpoints)  # a document sent here from another page (Evaluation)
if link_problem:
    st.warning(link_problem)
with st.sidebar:
    if st.session_state.get("model") not in checkpoints:  # a shared link may have set it already
        # bbc-news-hcan shows every view; set here, not as the widget's index, which a link's value
        # would contradict (Streamlit warns of both)
        st.session_state["model"] = "bbc-news-hcan" if "bbc-news-hcan" in checkpoints else next(iter(checkpoints))
    name = st.selectbox("Model", list(checkpoints), key="model", help="Every checkpoint directory under checkpoints/.")
classifier = loading.load_or_stop(checkpoints[name])
with st.sidebar:
    st.caption(f"**{classifier.display_name}** · "
               + (f"from the {viz.md_text(classifier.plugin)} · " if classifier.plugin else "")
               + (f"trained on {viz.md_code(classifier.dataset)} · " if classifier.dataset
                  else "data set not recorded · ") + f"{classifier.num_parameters:,} parameters")
    if "test_accuracy" in classifier.metrics:
        st.caption(f"Test accuracy {classifier.metrics['test_accuracy']:.1%} · classes: "
                   f"{viz.md_text(', '.join(classifier.labels))}")
    st.caption((f"Reads up to {classifier.window:,} subword tokens, its window" if classifier.window else
                f"Reads up to {classifier.text_config.max_sentences} sentences × "
                f"{classifier.text_config.max_words} words")
               + "." + loading.untested_length(classifier) + loading.window_cut(classifier))

text = widgets.document_input(classifier.dataset, "sample", "document", 180, "Paste a news article, a review or a "
                                                                             "tweet…",
                              corpus=classifier.metrics.get("corpus"), checkpoint=checkpoints[name])
if not text or not text.strip():
    st.info("Paste a document, or choose a sample above, to see how the model attends to it.")
    st.stop()
try:
    ex = loading.explain_cached(checkpoints[name], text)
except ExplainError as exc:
    st.warning(f"Nothing to show: {viz.md_text(exc)}.")
    st.stop()
doc_key = widgets.document_key(text)  # sentence pickers reset per document
if ex.document.truncation.truncated:
    st.warning(f"Long document: {ex.document.truncation.message}. The views below cover what the model read; "
               "the text it did not read is greyed and struck through in the shading.")
if ex.mostly_unknown():
    st.warning(f"Most of this document is unknown to {viz.md_text(name)}: {ex.unknown_count:,} of its "
               f"{ex.word_count():,} words are not in its vocabulary and reach it as `<unk>`, so the prediction "
               "rests on the few words it knows. Is the text in the language and domain the model was trained on "
               f"({viz.md_code(classifier.dataset or '?')})? Unknown words are underlined in red.")
words = [t.text for s in ex.document.sentences for t in s.tokens]  # the document as the model read it
sentence_labels = [f"S{i + 1}: {' '.join(t.text for t in s.tokens[:6])}" for i, s in enumerate(ex.document.sentences)]
# every figure drawn below: its slide's second line (this model, this document), and the report's figures
figures = Figures(f"{name} ({classifier.display_name}) · “{widgets.opening(text)}”")

# 1. Prediction (none from a base encoder or a head never trained: its attention still shows)
if headless := loading.no_prediction(classifier, name):
    st.info(headless, icon=":material/visibility_off:")
else:
    col_label, col_chart = st.columns([1, 2])
    col_label.metric("Prediction", viz.md_text(ex.label))
    col_label.caption(f"{max(ex.probabilities):.1%} probability · {viz.counted(len(ex.document.sentences), 'sentence')}"
                      f" · {viz.counted(ex.document.num_tokens, 'token')} read"
                      + (f" · {ex.unknown_count:,} unknown to the model" if ex.unknown_count else ""))
    chart(ex.remembered("probability chart", lambda: viz.probability_chart(ex.labels, ex.probabilities)),
          "class probabilities", col_chart, figures=figures)
    domain.domain_signal(st.container(), classifier, checkpoints[name], ex)  # full width: a sentence or two

# 2. The document shaded by target attention; does the shading drive the prediction? what if it changes?
view = shading.document_shading(ex, classifier.display_name, classifier.spec.maps, doc_key)
curves = None
if not headless and faithfulness.offered(classifier, ex, view) and st.toggle(
        "Test the shading: remove the top words and watch the prediction", key="faithfulness",
        help="Erasure curves: attention against gradient × input, Integrated Gradients, leave-one-out and random "
             "orders, and each attribution's shading beside the attention's. One forward pass per word, in the "
             "background."):
    curves = faithfulness.document_erasure(classifier, checkpoints[name], ex, view, doc_key, figures)
if not headless and st.toggle("Can I trust this shading? The standard tests, for this document", key="trust",
             help="ERASER comprehensiveness and sufficiency, Kendall tau with gradient and leave-one-out, the "
                  "permutation, uniform and adversarial tests, each beside its baseline; rollout or "
                  "gradient-weighted self-attention beside the raw maps."):
    trust.trust_panel(classifier, checkpoints[name], ex, doc_key, figures)
if not headless and st.toggle("What if? Drop or reorder sentences, replace a word", key="whatif"):
    whatif.what_if(checkpoints[name], ex, view, sentence_labels, doc_key)

# 3. Every head at a glance (layers of heads); self-attention heatmaps and their metrics; MahNN's channels;
# 4. target-attention distributions
heads.head_overview(ex, name, figures)
head_importance.which_heads_matter(classifier, checkpoints[name], ex, doc_key, figures)
self_view = self_attention.self_attention(ex, words, sentence_labels, doc_key, name, figures)
hidden = self_attention.channels(ex, words, figures) or gates.gates(ex, words, figures)
if not ex.self_attention_names and ex.attentions and view.painted and not hidden and not view.coverage:
    st.info(f"{classifier.display_name} has no self-attention (no word or sentence attends to another); its only "
            f"attention is {classifier.spec.maps}, shown above and below.")
shading.distributions(ex, view, sentence_labels, doc_key, figures)

# 5. Share and export
notes = curves.verdicts() if curves is not None else []
share.share_and_export(ex, name, classifier.dataset, text, doc_key, view, self_view, figures, notes)
