"""Explore: one model, one document: prediction, target attention on the text, self-attention
heatmaps with their Gini and diagonality, and the attention distributions."""
import hashlib

import streamlit as st

from hierattn import viz
from hierattn.analysis import counterfactual, faithfulness
from hierattn.analysis.explain import ExplainError, metrics_table
from hierattn.app import ui
from hierattn.viz import export

ui.run_through_app()

MAX_HEATMAP = 120  # rows and columns drawn at once
MAX_BLOCKS = 100  # an overview of a longer matrix has at most this many blocks a side
PAGE = 40  # sentences of the document view per page

st.title("Explore attention")

checkpoints = ui.checkpoints_or_stop()

link_problem = ui.apply_view_from_url(checkpoints)  # a shared link: model, document, head, level, sentence
request = ui.take_explore_request()  # a document sent here from another page (Evaluation)
if request and request["checkpoint"] in checkpoints:
    st.session_state.model = request["checkpoint"]
    st.session_state.document = request["text"]
    st.session_state.sample = ui.SAMPLE_PROMPT
if link_problem:
    st.warning(link_problem)
with st.sidebar:
    name = st.selectbox("Model", list(checkpoints), key="model",
                        help="Every checkpoint directory under checkpoints/.")
classifier = ui.load_or_stop(checkpoints[name])

with st.sidebar:
    m = classifier.metrics
    st.caption(f"**{classifier.display_name}** · trained on {viz.md_code(classifier.dataset or '?')} · "
               f"{classifier.num_parameters:,} parameters")
    if "test_accuracy" in m:
        st.caption(f"Test accuracy {m['test_accuracy']:.1%} · classes: {viz.md_text(', '.join(classifier.labels))}")
    st.caption(f"Reads up to {classifier.text_config.max_sentences} sentences × "
               f"{classifier.text_config.max_words} words.")

text = ui.document_input(classifier.dataset, "sample", "document", 180,
                         "Paste a news article, a review or a tweet…",
                         corpus=classifier.metrics.get("corpus"))

if not text or not text.strip():
    st.info("Paste a document, or choose a sample above, to see how the model attends to it.")
    st.stop()
try:
    ex = ui.explain_cached(checkpoints[name], text)
except ExplainError as exc:
    st.warning(f"Nothing to show: {viz.md_text(exc)}.")
    st.stop()
doc_key = hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()[:12]  # sentence pickers reset per document
if ex.document.truncation.truncated:
    st.warning(f"Long document: {ex.document.truncation.message}. The views below cover what the model read.")

model_name = classifier.display_name
words = [t.text for s in ex.document.sentences for t in s.tokens]  # the document as the model read it
sentence_labels = [f"S{i + 1}: {' '.join(t.text for t in s.tokens[:6])}" for i, s in enumerate(ex.document.sentences)]

# 1. Prediction
figures = {}  # every figure drawn below, by name, for the report
curves = None
col_label, col_chart = st.columns([1, 2])
col_label.metric("Prediction", ex.label)
col_label.caption(f"{max(ex.probabilities):.1%} probability · {len(ex.document.sentences)} sentences · "
                  f"{ex.document.num_tokens} tokens read")
ui.chart(viz.probability_chart(ex.labels, ex.probabilities), "probabilities", col_chart, collect=figures)

# 2. The document shaded by target attention
st.subheader("Where the model looks")
word_map, sentence_map = ex.target_name("word"), ex.target_name("sentence")
painted = [ex.attentions[n] for n in (word_map, sentence_map) if n]
head_choice = None
if painted:
    axis = ui.head_axis(painted[0]) or "head"
    count = max(ex.heads(n) for n in (word_map, sentence_map) if n)
    if count > 1:
        noun = "Channel" if axis == "channel" else "Target-attention head"
        head_options = [f"mean of {axis}s"] + [f"{axis} {h + 1}" for h in range(count)]
        ui.keep_valid("target_head", head_options)
        pick = st.radio(noun, head_options, horizontal=True, key="target_head")
        head_choice = None if pick.startswith("mean") else int(pick.split()[1]) - 1
word_weights = ex.target_attention("word", head_choice)
sentence_weights = ex.target_attention("sentence", head_choice)
if not ex.attentions:
    st.info(f"{model_name} has no attention mechanism: it is one of the papers' baselines without attention, "
            "so only its prediction is shown.")
elif not painted:
    recurrent = any("time" in a.axes for a in ex.attentions.values())
    how = "it classifies from its last hidden state" if recurrent else "it pools with max-pooling, not target attention"
    st.info(f"{model_name} does not weigh words or sentences for the document as a whole ({how}). "
            "Its attention maps are below.")
coverage = word_map is not None and ex.attentions[word_map].kind == "coverage"  # a stand-in, not attention
if coverage:
    st.caption(f"{model_name} has no attention. The shading is {classifier.spec.maps}: where its features came "
               "from, not an attention distribution.")
spans = [(s.start, s.end, [(t.start, t.end) for t in s.tokens]) for s in ex.document.sentences]
scale = "document"
if word_weights is not None:
    ui.keep_valid("shade_scale", ["document", "sentence"])
    scale = st.radio("Word shading", ["document", "sentence"], horizontal=True, key="shade_scale",
                     format_func={"document": "one scale for the document",
                                  "sentence": "relative to each sentence's top word"}.get)
    st.caption(("Orange bars: sentence attention (relative to the top sentence, weight beside it). " if sentence_weights
                else "") + "Blue: word weight, darkest = " + ("the document's largest weight" if scale == "document"
                                                             else "the sentence's top word") + "; hover for the weight.")
part = slice(None)  # the sentences the document views show: all of them, or one page of a long document
if painted:
    pages = -(-len(spans) // PAGE)
    if pages > 1:  # a long document: the view pages by sentence, the scale stays the document's
        page = st.number_input(f"Page (sentences {PAGE} at a time, {len(spans)} in all)", 1, pages, 1, key=f"page_{doc_key}")
        part = slice((page - 1) * PAGE, page * PAGE)
    peak = max((w for ws in word_weights or [] for w in ws), default=None)
    top = max(sentence_weights, default=None) if sentence_weights else None
    shading = (ex.document.text, spans[part], word_weights[part] if word_weights else None,
               sentence_weights[part] if sentence_weights else None, scale, peak, top)
    attention_slot = st.empty()  # the shading alone, or beside an attribution's once one is computed
    attention_slot.html(viz.document_html(*shading))

# 2b. Does the shading drive the prediction? Erasure curves (computed in the background on request)
if painted and st.toggle("Test the shading: remove the top words and watch the prediction", key="faithfulness",
                         help="Erasure curves: attention against gradient × input, leave-one-out and random "
                              "orders, and the attribution shading beside the attention's. One forward pass per "
                              "word of the document, in the background."):
    checkpoint_key = ui.checkpoint_key(checkpoints[name])
    methods = faithfulness.interactive_methods(ex.document.num_tokens)
    if "leave-one-out" not in methods:
        st.caption(f"Leave-one-out is left out: it needs one forward pass per word, and this document has "
                   f"{ex.document.num_tokens:,} (the limit here is {faithfulness.LEAVE_ONE_OUT_MAX_WORDS:,}). "
                   "`hierattn.faithfulness.erasure_curves(classifier, explanation)` runs it on any length.")
    curves = ui.computed(("erasure", *checkpoint_key, doc_key, methods), lambda progress: faithfulness.erasure_curves(
        classifier, ex, methods=methods), "Removing words:")
    if curves is not None:
        attributions = [m for m in ("gradient × input", "leave-one-out") if m in curves.scores]
        if attributions:  # the attention shading and an attribution's, side by side, with their agreement
            with attention_slot.container():
                ui.keep_valid("attribution", attributions)
                method = st.radio("Beside the attention shading", attributions, horizontal=True, key="attribution",
                                  help="Gradient × input: |gradient · embedding| of the predicted class's logit. "
                                       "Leave-one-out: the fall in its probability when the word alone is removed "
                                       "(a word whose removal raises it is left unshaded).")
                rho = curves.agreement.get(method)
                left, right = st.columns(2)
                left.markdown("**Attention**")
                left.html(viz.document_html(*shading))
                right.markdown(f"**{method}** · Spearman ρ with attention: " + ("n/a" if rho is None else f"{rho:+.2f}"))
                attribution = faithfulness.by_sentence(curves.scores[method], ex.document)
                right.html(viz.document_html(ex.document.text, spans[part], attribution[part], None, scale,
                                             max((w for ws in attribution for w in ws), default=None)))
        chart, verdict = st.columns([3, 2])
        ui.chart(viz.erasure_chart(curves.ks, curves.drops, curves.label, "words removed"), "erasure curves", chart,
                 collect=figures)
        verdict.markdown("\n".join(f"- {viz.md_text(line)}" for line in curves.verdicts()))
        for method, rho in curves.agreement.items():
            verdict.metric(f"Spearman, attention vs {method}", "n/a" if rho is None else f"{rho:+.2f}",
                           help="Rank correlation of the words' attention and their attribution, over this document.")

# 2c. What if? Edit the document and see the prediction and the attention move
if st.toggle("What if? Drop or reorder sentences, replace a word", key="whatif"):
    order_key = f"whatif_order_{doc_key}"
    st.session_state.setdefault(order_key, list(range(len(ex.document.sentences))))

    def drop_sentence(i: int) -> None:
        st.session_state[order_key] = [j for j in st.session_state[order_key] if j != i]

    order = st.multiselect("Sentences, in the order the model reads them", range(len(ex.document.sentences)),
                           format_func=sentence_labels.__getitem__, key=order_key,
                           help="× on a sentence drops it; add it back and it goes to the end, which reorders.")
    kept = [i for i in range(len(ex.document.sentences))[part] if i in order]
    with st.expander("Drop this sentence: the document, one sentence per row" +
                     (f" (this page: S{part.start + 1}–S{min(part.stop, len(spans))})" if part.start is not None else ""),
                     expanded=len(ex.document.sentences) <= 20):
        for i in kept:
            row_button, row_text = st.columns([1, 9], vertical_alignment="center")
            row_button.button("Drop", key=f"drop_{doc_key}_{i}", on_click=drop_sentence, args=(i,),
                              help=f"Take S{i + 1} out of the document the model reads.")
            sentence = ex.document.sentences[i]
            words_of = ex.document.text[sentence.start:sentence.end].strip()
            row_text.markdown(f"**S{i + 1}** " + viz.md_text(words_of if len(words_of) <= 240 else words_of[:240] + "…"))
        if not kept:
            st.caption("Every sentence here is dropped; add them back above.")
    left, right = st.columns(2)
    word = left.text_input("Replace the word", key="whatif_word", placeholder="e.g. great")
    by = right.text_input("with", key="whatif_by", placeholder="e.g. awful")
    edit = counterfactual.Edit(list(order), [(word.strip(), by.strip())] if word.strip() else [])
    changes = edit.describe(len(ex.document.sentences))
    if not changes:
        st.caption("Drop a sentence (×), put one back (it goes to the end), or replace a word: the prediction and "
                   "the attention of the edited document appear here beside the original's.")
    elif not order:
        st.warning("Every sentence is dropped: there is nothing left to classify.")
    else:
        edited = counterfactual.apply(ex.document, edit)
        try:
            after = ui.explain_cached(checkpoints[name], edited.text)
        except ExplainError as exc:
            after = None
            st.warning(f"The edited document cannot be read: {viz.md_text(exc)}.")
        if after is not None:
            st.caption("Edit: " + viz.md_text("; ".join(changes)) + ".")
            before_p = ex.probabilities[ex.labels.index(ex.label)]
            now_p = after.probabilities[after.labels.index(ex.label)]
            m1, m2 = st.columns(2)
            m1.metric(f"Before · P({viz.md_text(ex.label)}) = {before_p:.1%}", ex.label)
            m2.metric(f"After · P({viz.md_text(ex.label)}) = {now_p:.1%}", after.label, f"{now_p - before_p:+.1%}")
            if painted:
                b1, b2 = st.columns(2)
                b1.html(viz.document_html(ex.document.text, spans, word_weights, sentence_weights, scale,
                                          struck=[i for i in range(len(ex.document.sentences)) if i not in order]))
                after_spans = [(s.start, s.end, [(t.start, t.end) for t in s.tokens]) for s in after.document.sentences]
                b2.html(viz.document_html(after.document.text, after_spans, after.target_attention("word", head_choice),
                                          after.target_attention("sentence", head_choice), scale, marked=edited.replaced))
                st.caption("Left: the original, dropped sentences struck through. Right: the edited document as the "
                           "model reads it, replaced words outlined; both shaded by the same head.")

# 3. Self-attention heatmaps and 4. their metrics
self_maps = ex.self_attention_names
if self_maps:
    st.subheader("Self-attention")
    levels = sorted({ex.attentions[n].level for n in self_maps}, key=["word", "sentence"].index)
    ui.keep_valid("self_level", levels)
    level = st.radio("Level", levels, horizontal=True, key="self_level",
                     format_func=lambda lv: "words attending to words" if lv == "word" else "sentences attending to sentences")
    names = [n for n in self_maps if ex.attentions[n].level == level]
    c1, c2, c3 = st.columns(3)
    if (linked := ui.pending_view("branch")) in names:
        st.session_state[f"branch_{level}"] = linked
    branch = c1.selectbox("Self-attention", names, key=f"branch_{level}",
                          help="HCAN with two parallel self-attentions has branches a (ELU values) and b (tanh "
                               "values); SANet has one map per block.")
    axes = ex.attentions[branch].axes
    heads = ex.heads(branch)
    head_pick, head = "single head", None
    if heads > 1:
        self_heads = ["mean of heads"] + [f"head {h + 1}" for h in range(heads)]
        ui.keep_valid("self_head", self_heads)
        head_pick = c2.selectbox("Head", self_heads, key="self_head")
        head = None if head_pick.startswith("mean") else int(head_pick.split()[1]) - 1
    group = None
    if "sentence" in axes:
        if (linked := ui.pending_view("sentence")) and linked.isdigit() and int(linked) < len(sentence_labels):
            st.session_state[f"self_sentence_{doc_key}"] = int(linked)
        group = c3.selectbox("Sentence", range(len(sentence_labels)), format_func=sentence_labels.__getitem__,
                             key=f"self_sentence_{doc_key}")
        labels = [t.text for t in ex.document.sentences[group].tokens]
    elif "time" in axes:  # a recurrent cell's attention over its window of past states (HA-LSTM)
        group = st.select_slider("Time step (the word being read)", range(len(words)), value=len(words) - 1,
                                 key=f"self_step_{doc_key}", format_func=lambda t: f"{t + 1}: {words[t]}",
                                 help="Starts at the last word: the state the classifier reads.")
        window = ex.attentions[branch].weights.shape[-1]
        labels = [f"h(t−{w + 1})" + (f" {words[group - 1 - w]}" if group - 1 - w >= 0 else " (zeros)")
                  for w in range(window)]
    elif level == "word":
        labels = words
    else:
        labels = sentence_labels
    shown = slice(0, len(labels))
    if len(labels) > MAX_HEATMAP:  # a document-wide matrix over many words: an overview in blocks, then zoom
        block = -(-len(labels) // MAX_BLOCKS)
        full = ex.self_attention(branch, group, head)
        starts = list(range(0, len(labels), block))
        block_names = [f"{a + 1}–{min(a + block, len(labels))}: {labels[a]}" for a in starts]
        ui.chart(viz.attention_heatmap(viz.block_overview(full, block), block_names,
                                       f"overview: {len(labels)} positions in blocks of {block}"),
                 f"self-attention overview {branch} {head_pick}", collect=figures)
        first = st.slider("Zoom: first position shown at full resolution", 1, len(labels) - MAX_HEATMAP + 1, 1,
                          key="self_window", help=f"The matrix has {len(labels)} rows; {MAX_HEATMAP} are shown at full "
                                                  "resolution below. The overview above shows all of it in blocks.") - 1
        shown = slice(first, first + MAX_HEATMAP)
    matrix = ex.self_attention(branch, group, head)[shown, shown]
    ui.chart(viz.attention_heatmap(matrix, labels[shown], f"{branch} · {head_pick}"), f"self-attention {branch} {head_pick}",
             collect=figures)
    if heads > 1 and st.toggle("Show every head side by side", key="all_heads"):
        columns = st.columns(min(heads, 4))
        for h in range(heads):
            fig = viz.attention_heatmap(ex.self_attention(branch, group, h)[shown, shown], labels[shown],
                                        f"head {h + 1}", compact=True)
            columns[h % len(columns)].plotly_chart(fig, width="stretch", key=f"head_grid_{h}")
    if "time" in axes:
        lookback = ex.lookback(branch)  # (time, window): mean attention each slot receives
        st.plotly_chart(viz.matrix_heatmap(
            lookback, [f"{t + 1}: {w}" for t, w in enumerate(words)], [f"{w + 1} back" for w in range(lookback.shape[1])],
            "Where each step looks back (attention each window slot receives, mean over the window's queries)",
            "time step (word read)"), width="stretch")
    table = metrics_table(ex)
    table = table[table["level"] == level]  # every branch at this level, to compare them
    group_column = "sentence" if "sentence" in axes else "time" if "time" in axes else None
    if group_column:
        table = table[table[group_column] == group]
    table = table.drop(columns=["level"] + [c for c in ("sentence", "time") if c != group_column and c in table])
    if heads > 1:
        table["head"] = table["head"] + 1
    else:
        table = table.drop(columns=["head"])
    if group_column:
        table[group_column] = table[group_column] + 1  # S1, S2, … as in the selectors
    st.caption("Gini coefficient (sparsity) and diagonality at bandwidth b (share of weight within b positions "
               "of the diagonal), per the SANet paper §5.3, for " + ("this sentence." if group_column == "sentence"
                                                                      else "this time step." if group_column
                                                                      else "the document-wide matrix.")
               + " Beside each diagonality (even): what attention spread evenly over the same n words gives; a "
               "short sentence is mostly 'diagonal' by construction, so only the excess says the model looks near. "
               "An even spread has Gini 0.")
    shown_names = {"gini": "Gini", **{c: "b=" + c.removeprefix("diagonality_b").replace("_even", " (even)")
                                      for c in table.columns if c.startswith("diagonality")}}
    st.dataframe(table.rename(columns=shown_names).style.format({shown_names[c]: "{:.1%}" for c in shown_names}),
                 hide_index=True, width="stretch")
    ui.table_downloads(table, f"metrics-{name}-{level}", "metrics_table")

# MahNN: one strip per channel (its Figure 3) and the semantical attention over hidden dimensions
if word_map and ui.head_axis(ex.attentions[word_map]) == "channel":
    st.subheader("Syntactical attention per channel")
    st.caption("One row per channel (MahNN Figure 3): each channel's attention over the words, on one scale.")
    strips = ex.channel_strips(word_map)
    st.plotly_chart(viz.matrix_heatmap(strips, [f"channel {c + 1}" for c in range(strips.shape[0])], words,
                                       row_title="channel", height=140 + 30 * strips.shape[0]), width="stretch")
hidden_maps = [n for n, a in ex.attentions.items() if a.level == "hidden"]
if hidden_maps:
    st.subheader("Semantical attention over hidden dimensions")
    name_h = hidden_maps[0]
    channel = st.selectbox("Channel", range(ex.heads(name_h)), format_func=lambda c: f"channel {c + 1}",
                           key="semantic_channel")
    grid = ex.hidden_attention(name_h, channel)
    st.caption("Rows: the document's words; columns: the BiLSTM's hidden dimensions. Each row is a distribution "
               "over the dimensions (sums to 1): which latent features the channel keeps for that word.")
    st.plotly_chart(viz.matrix_heatmap(grid, words, [f"dim {i + 1}" for i in range(grid.shape[1])],
                                       row_title="word", column_title="hidden dimension"), width="stretch")
if not self_maps and ex.attentions and painted and not hidden_maps and not coverage:
    st.info(f"{model_name} has no self-attention: its words and sentences are read by recurrent or convolutional "
            "layers, and its only weights are those shown above and below.")

# 5. Target-attention distributions
if word_weights is not None or sentence_weights is not None:
    st.subheader("Word weights" if coverage else "Target-attention distributions")
    left, right = st.columns(2)
    if word_weights is not None:
        s_idx = left.selectbox("Sentence", range(len(ex.document.sentences)), key=f"dist_sentence_{doc_key}",
                               format_func=sentence_labels.__getitem__)
        ui.chart(viz.distribution_chart(word_weights[s_idx], [t.text for t in ex.document.sentences[s_idx].tokens],
                                        "over the words of the sentence"), "word distribution", left, collect=figures)
    if sentence_weights is not None:
        ui.chart(viz.distribution_chart(sentence_weights, [f"S{i + 1}" for i in range(len(sentence_weights))],
                                        "over the sentences of the document", "sentence"), "sentence distribution", right,
                 collect=figures)

# 6. Share and export
kind, document_ref = ui.document_id(text, classifier.dataset)
self_state = {}
if self_maps:
    self_state = {"level": level, "branch": branch, "selfhead": st.session_state.get("self_head") if heads > 1 else None,
                  "sentence": group if "sentence" in axes else None}
link = ui.mirror_view({"model": name, kind: document_ref, "head": st.session_state.get("target_head"),
                       "scale": st.session_state.get("shade_scale"), **self_state})
st.subheader("Share and export")
st.caption("The address bar follows this view (model, document, heads, level, sentence); copy it, or the link below. "
           + ("A pasted document is kept only in this browser session: others who open the link are asked to paste it."
              if kind == "doc" else "The document is a built-in sample, so the link works for anyone using this app."))
st.code(link, language=None)
st.caption("Each figure has its own Export button (PNG, SVG, HTML). The report is one HTML file with the "
           "prediction, the shaded document, every figure shown above (interactive, works offline) and the metrics.")
stem = f"{name}-{doc_key}"
report_notes = curves.verdicts() if painted and st.session_state.get("faithfulness") and curves is not None else []
document_view = viz.document_html(ex.document.text, spans, word_weights, sentence_weights, scale) if painted else None
buttons = st.columns(4)
buttons[0].download_button("Report (HTML)", lambda: export.report_html(ex, dict(figures), document_view, report_notes),
                           f"{stem}-report.html", "text/html", key="export_report", type="primary", on_click="ignore")
buttons[1].download_button("Explanation (JSON)", lambda: export.explanation_json(ex), f"{stem}.json",
                           "application/json", key="export_json", on_click="ignore")
buttons[2].download_button("Attention maps (CSV)", lambda: export.attention_csv(ex), f"{stem}-attention.csv",
                           "text/csv", key="export_attention", on_click="ignore")
buttons[3].download_button("Metrics (CSV)", lambda: export.metrics_csv(ex), f"{stem}-metrics.csv", "text/csv",
                           key="export_metrics", on_click="ignore")
