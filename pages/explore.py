"""Explore: one model, one document: prediction, target attention on the text, self-attention
heatmaps with their Gini and diagonality, and the attention distributions."""
import hashlib

import streamlit as st

from hierattn import ui, viz
from hierattn.explain import ExplainError, metrics_table

SAMPLE_PROMPT = "— write or paste your own —"
MAX_HEATMAP = 120  # rows and columns drawn at once

st.title("Explore attention")

checkpoints = ui.available_checkpoints()
if not checkpoints:
    st.error(f"No checkpoints found in `{ui.checkpoint_root()}`. Train one with "
             "`python -m hierattn train --preset bbc-news-hcan`.")
    st.stop()

with st.sidebar:
    name = st.selectbox("Model", list(checkpoints), key="model",
                        help="Every checkpoint directory under checkpoints/.")
try:
    classifier = ui.load(checkpoints[name])
except ui.CheckpointError as exc:
    st.error(f"This checkpoint cannot be loaded: {exc}")
    st.stop()

with st.sidebar:
    m = classifier.metrics
    st.caption(f"**{classifier.model_type.upper()}** · trained on `{classifier.dataset or '?'}` · "
               f"{classifier.num_parameters:,} parameters")
    if "test_accuracy" in m:
        st.caption(f"Test accuracy {m['test_accuracy']:.1%} · classes: {', '.join(classifier.labels)}")
    st.caption(f"Reads up to {classifier.text_config.max_sentences} sentences × "
               f"{classifier.text_config.max_words} words.")

samples = ui.samples(classifier.dataset)
options = [SAMPLE_PROMPT] + [f"{ds} · {label} · {' '.join(text.split())[:70]}…" for ds, label, text in samples]


def _use_sample():
    i = options.index(st.session_state.sample)
    if i:
        st.session_state.document = samples[i - 1][2]


def _own_text():
    st.session_state.sample = SAMPLE_PROMPT  # the box no longer holds the chosen sample


if "document" not in st.session_state and samples:  # first visit: show a sample, not an empty page
    st.session_state.document = samples[0][2]
    st.session_state.sample = options[1]
st.selectbox("Sample document (test split)", options, key="sample", on_change=_use_sample)
text = st.text_area("Document", key="document", height=180, on_change=_own_text,
                    placeholder="Paste a news article, a review or a tweet…")

if not text or not text.strip():
    st.info("Paste a document, or choose a sample above, to see how the model attends to it.")
    st.stop()
try:
    ex = ui.explain_cached(checkpoints[name], text)
except ExplainError as exc:
    st.warning(f"Nothing to show: {exc}.")
    st.stop()
doc_key = hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()[:12]  # sentence pickers reset per document
if ex.document.truncation.truncated:
    st.warning(f"Long document: {ex.document.truncation.message}. The views below cover what the model read.")

sentence_labels = [f"S{i + 1}: {' '.join(t.text for t in s.tokens[:6])}" for i, s in enumerate(ex.document.sentences)]

# 1. Prediction
col_label, col_chart = st.columns([1, 2])
col_label.metric("Prediction", ex.label)
col_label.caption(f"{max(ex.probabilities):.1%} probability · {len(ex.document.sentences)} sentences · "
                  f"{ex.document.num_tokens} tokens read")
col_chart.plotly_chart(viz.probability_chart(ex.labels, ex.probabilities), width="stretch")

# 2. The document shaded by target attention
st.subheader("Where the model looks")
target_heads = max((ex.heads(n) for n, a in ex.attentions.items() if not a.is_self_attention), default=1)
head_choice = None
if target_heads > 1:
    pick = st.radio("Target-attention head", ["mean of heads"] + [f"head {h + 1}" for h in range(target_heads)],
                    horizontal=True, key="target_head")
    head_choice = None if pick.startswith("mean") else int(pick.split()[1]) - 1
word_weights = ex.target_attention("word", head_choice)
sentence_weights = ex.target_attention("sentence", head_choice)
if word_weights is None and sentence_weights is None:
    st.info("This model pools with max-pooling, not target attention: it has no word or sentence weights to paint.")
spans = [(s.start, s.end, [(t.start, t.end) for t in s.tokens]) for s in ex.document.sentences]
scale = "document"
if word_weights is not None:
    scale = st.radio("Word shading", ["document", "sentence"], horizontal=True, key="shade_scale",
                     format_func={"document": "one scale for the document",
                                  "sentence": "relative to each sentence's top word"}.get)
    st.caption("Orange bars: sentence attention (relative to the top sentence, weight beside it). Blue: word "
               "attention within its sentence, darkest = " + ("the document's largest weight" if scale == "document"
                                                            else "the sentence's top word") + "; hover for the weight.")
st.html(viz.document_html(ex.document.text, spans, word_weights, sentence_weights, scale))

# 3. Self-attention heatmaps and 4. their metrics
st.subheader("Self-attention")
self_maps = ex.self_attention_names
if not self_maps:
    st.info(f"{classifier.model_type.upper()} has no self-attention: its words and sentences are read by "
            "recurrent layers, and its only attention is the target attention shown above and below.")
else:
    levels = sorted({ex.attentions[n].level for n in self_maps}, key=["word", "sentence"].index)
    level = st.radio("Level", levels, horizontal=True, key="self_level",
                     format_func=lambda lv: "words attending to words" if lv == "word" else "sentences attending to sentences")
    names = [n for n in self_maps if ex.attentions[n].level == level]
    c1, c2, c3 = st.columns(3)
    branch = c1.selectbox("Self-attention", names, key=f"branch_{level}",
                          help="HCAN with two parallel self-attentions has branches a (ELU values) and b (tanh values).")
    heads = ex.heads(branch)
    head_pick = c2.selectbox("Head", ["mean of heads"] + [f"head {h + 1}" for h in range(heads)], key="self_head")
    head = None if head_pick.startswith("mean") else int(head_pick.split()[1]) - 1
    per_sentence = "sentence" in ex.attentions[branch].axes
    sentence = None
    if per_sentence:
        sentence = c3.selectbox("Sentence", range(len(sentence_labels)), format_func=sentence_labels.__getitem__,
                                key=f"self_sentence_{doc_key}")
        labels = [t.text for t in ex.document.sentences[sentence].tokens]
    elif level == "word":
        labels = [t.text for s in ex.document.sentences for t in s.tokens]
    else:
        labels = sentence_labels
    window = slice(0, len(labels))
    if len(labels) > MAX_HEATMAP:  # a flat model's document-wide matrix: show a window of it
        first = st.slider("First position shown", 1, len(labels) - MAX_HEATMAP + 1, 1, key="self_window",
                          help=f"The matrix has {len(labels)} rows; {MAX_HEATMAP} are shown at a time.") - 1
        window = slice(first, first + MAX_HEATMAP)
    matrix = ex.self_attention(branch, sentence, head)[window, window]
    st.plotly_chart(viz.attention_heatmap(matrix, labels[window], f"{branch} · {head_pick}"), width="stretch")
    if heads > 1 and st.toggle("Show every head side by side", key="all_heads"):
        columns = st.columns(min(heads, 4))
        for h in range(heads):
            fig = viz.attention_heatmap(ex.self_attention(branch, sentence, h)[window, window], labels[window],
                                        f"head {h + 1}", compact=True)
            columns[h % len(columns)].plotly_chart(fig, width="stretch", key=f"head_grid_{h}")
    table = metrics_table(ex, sentence=sentence)
    table = table[table["level"] == level].drop(columns=["level"] + ([] if per_sentence else ["sentence"]))
    table["head"] = table["head"] + 1
    if per_sentence:
        table["sentence"] = table["sentence"] + 1  # S1, S2, … as in the selectors
    st.caption("Gini coefficient (sparsity) and diagonality at bandwidth b (share of weight within b positions "
               "of the diagonal), per the SANet paper §5.3, for every head of the matrices at this level"
               + (" for this sentence." if per_sentence else "."))
    st.dataframe(table.style.format({c: "{:.1%}" for c in table.columns if c == "gini" or c.startswith("diag")}),
                 hide_index=True, width="stretch")

# 5. Target-attention distributions
st.subheader("Target-attention distributions")
left, right = st.columns(2)
if word_weights is not None:
    s_idx = left.selectbox("Sentence", range(len(ex.document.sentences)), key=f"dist_sentence_{doc_key}",
                           format_func=sentence_labels.__getitem__)
    left.plotly_chart(viz.distribution_chart(word_weights[s_idx], [t.text for t in ex.document.sentences[s_idx].tokens],
                                             "over the words of the sentence"), width="stretch")
if sentence_weights is not None:
    right.plotly_chart(viz.distribution_chart(sentence_weights, [f"S{i + 1}" for i in range(len(sentence_weights))],
                                              "over the sentences of the document", "sentence"), width="stretch")
