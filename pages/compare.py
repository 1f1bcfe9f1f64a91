"""Compare: two models, one document. Predictions, where each looks (one colour scale), how far
they agree, and their self-attention over the same sentence and for one word (HCAN Figures 5-8)."""
import hashlib

import streamlit as st

from hierattn import viz
from hierattn.analysis import compare
from hierattn.analysis.explain import ExplainError
from hierattn.app import ui

ui.run_through_app()

st.title("Compare two models")
checkpoints = ui.checkpoints_or_stop()
names = list(checkpoints)
labels = ui.checkpoint_options(checkpoints)


def _default(preferred: str, fallback: int) -> int:
    return names.index(preferred) if preferred in names else min(fallback, len(names) - 1)


link_problem = ui.apply_view_from_url(checkpoints, {"a": "compare_a", "b": "compare_b"}, "compare_document",
                                      "compare_sample", {})
if link_problem:
    st.warning(link_problem)
with st.sidebar:
    # HAN against HCAN on the same data is the classic comparison (HCAN paper Figures 6-8).
    name_a = st.selectbox("Model A", names, index=_default("bbc-news-han", 0), key="compare_a", format_func=labels.get)
    name_b = st.selectbox("Model B", names, index=_default("bbc-news-hcan", 1), key="compare_b", format_func=labels.get)
models = {slot: ui.load_or_stop(checkpoints[name], f"Model {slot} ({viz.md_code(name)})")
          for slot, name in (("A", name_a), ("B", name_b))}
with st.sidebar:
    for slot, c in models.items():
        accuracy = c.metrics.get("test_accuracy")
        st.caption(f"**{slot}: {c.display_name}** · {viz.md_code(c.dataset or '?')}"
                   + (f" · test accuracy {accuracy:.1%}" if accuracy is not None else ""))
    if models["A"].dataset != models["B"].dataset:
        st.warning("The two models were trained on different data sets, so their classes differ.")

text = ui.document_input(models["A"].dataset, "compare_sample", "compare_document", 150,
                         "Paste a document to see both models read it…",
                         corpus=models["A"].metrics.get("corpus"))
if not text or not text.strip():
    st.info("Paste a document, or choose a sample above, to compare how the two models read it.")
    st.stop()
explanations = {}
for slot, name in (("A", name_a), ("B", name_b)):
    try:
        explanations[slot] = ui.explain_cached(checkpoints[name], text)
    except ExplainError as exc:
        st.warning(f"Nothing to show: {viz.md_text(exc)}.")
        st.stop()
ex_a, ex_b = explanations["A"], explanations["B"]
kind, document_ref = ui.document_id(text, models["A"].dataset)
with st.sidebar:
    st.caption("Link to this comparison (the address bar follows it too):")
    st.code(ui.mirror_view({"a": name_a, "b": name_b, kind: document_ref}), language=None)
doc_key = hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()[:12]
for slot, ex in explanations.items():
    if ex.document.truncation.truncated:
        st.caption(f"Model {slot} read part of this document: {ex.document.truncation.message}.")

# 1. Predictions
columns = st.columns(2)
for column, (slot, ex) in zip(columns, explanations.items()):
    with column:
        st.markdown(f"#### {slot}: {models[slot].display_name}")
        st.metric("Prediction", ex.label, help=f"Checkpoint `{ex.classifier_name}`")
        ui.chart(viz.probability_chart(ex.labels, ex.probabilities), f"probabilities {slot}", key=f"probs_{slot}")

# 2. Where each model looks, on one colour scale
st.subheader("Where each model looks")
importances = {slot: compare.importance(ex) for slot, ex in explanations.items()}
present = {slot: imp for slot, imp in importances.items() if imp is not None}
for slot, imp in importances.items():
    if imp is None:
        st.info(f"Model {slot} ({models[slot].display_name}) has no attention: nothing to shade.")
if present:
    peak = max(max(imp.words.values()) for imp in present.values())
    sentence_peak = max(max(imp.sentences.values()) for imp in present.values())
    view = st.segmented_control("View", ["side by side", "A", "B", "difference"], default="side by side",
                                key="compare_view", help="The difference map needs both models' attention.")
    view = view or "side by side"
    st.caption("Each word is shaded by its share of the document's attention, on one scale for both models "
               "(darkest = the largest share of either); orange bars: sentence weights. "
               + " ".join(f"{slot}: {imp.source}." for slot, imp in present.items()))

    def _document(slot):
        ex, imp = explanations[slot], importances[slot]
        if imp is None:
            st.caption(f"{slot} has no attention.")
            return
        spans = [(s.start, s.end, [(t.start, t.end) for t in s.tokens]) for s in ex.document.sentences]
        st.html(viz.document_html(ex.document.text, spans, compare.shading(ex, imp),
                                  [imp.sentences[s.start] for s in ex.document.sentences], "document",
                                  peak=peak, sentence_peak=sentence_peak))

    if view == "side by side":
        left, right = st.columns(2)
        for column, slot in ((left, "A"), (right, "B")):
            with column:
                st.markdown(f"**{slot}: {models[slot].display_name}**")
                _document(slot)
    elif view in ("A", "B"):
        _document(view)
    elif len(present) < 2:
        st.info("The difference map needs attention from both models.")

    # 3. Agreement
    if len(present) == 2:
        agree = compare.agreement(importances["A"], importances["B"])
        if view == "difference":
            base = ex_a if ex_a.document.num_tokens >= ex_b.document.num_tokens else ex_b
            spans = [(s.start, s.end, [(t.start, t.end) for t in s.tokens]) for s in base.document.sentences]
            diffs = [[agree.difference.get((t.start, t.end)) for t in s.tokens] for s in base.document.sentences]
            st.html(viz.difference_html(base.document.text, spans, diffs))
            st.caption("Orange: A gives the word a larger share than B; purple: B gives it more; grey: only one "
                       "model read it. Shares are renormalised over the words both read.")
        st.subheader("Agreement")
        table = agree.table()
        st.dataframe(table.style.format({c: "{:.2f}" for c in table.columns[1:]}, na_rep="—"), hide_index=True,
                     width="stretch")
        ui.table_downloads(table, "agreement", "agreement_table")
        st.caption("Spearman: rank correlation of the two models' importance over the words (sentences) both read; "
                   "1 = the same order. Top-k overlap: share of A's k most important words (sentences) that are "
                   "among B's k most important. Beside each, what two unrelated rankings give: agreement means "
                   "clearly above it. — : too few to compute.")

# 4. Self-attention over the same sentence
def _word_maps(ex):
    return [n for n in ex.self_attention_names if ex.attentions[n].level == "word" and "time" not in ex.attentions[n].axes]


maps = {slot: _word_maps(ex) for slot, ex in explanations.items()}
if any(maps.values()):
    st.subheader("Self-attention over the same sentence")
    common_words = {(t.start, t.end) for s in ex_a.document.sentences for t in s.tokens} & \
                   {(t.start, t.end) for s in ex_b.document.sentences for t in s.tokens}
    starts = [s.start for s in ex_a.document.sentences if compare.sentence_index(ex_b, s.start) is not None]
    if not starts:
        st.info("The two models share no sentence of this document.")
    else:
        first_words = {s.start: " ".join(t.text for t in s.tokens[:8]) for s in ex_a.document.sentences}
        start = st.selectbox("Sentence", starts, key=f"compare_sentence_{doc_key}",
                             format_func=lambda st_: f"S{starts.index(st_) + 1}: {first_words[st_]}…")
        chosen = {}
        columns = dict(zip(explanations, st.columns(2)))
        for slot, ex in explanations.items():
            with columns[slot]:
                st.markdown(f"**{slot}: {models[slot].display_name}**")
                if not maps[slot]:
                    st.caption("No word self-attention in this model.")
                    continue
                c1, c2 = st.columns(2)
                name = c1.selectbox("Map", maps[slot], key=f"compare_map_{slot}", format_func=compare.map_label)
                heads = ex.heads(name)
                head = None
                if heads > 1:
                    pick = c2.selectbox("Head", ["mean of heads"] + [f"head {h + 1}" for h in range(heads)],
                                        key=f"compare_head_{slot}")
                    head = None if pick.startswith("mean") else int(pick.split()[1]) - 1
                chosen[slot] = (name, head, compare.sentence_self_attention(ex, name, start, head, common_words))
        shared = len(chosen) == 2 and st.toggle("One colour scale for both", value=True, key="compare_shared_scale",
                           help="Off: each heatmap's darkest cell is its own largest weight. A flat model spreads "
                                "each row over the whole document, so its block for one sentence is pale on a "
                                "shared scale.")
        zmax = max((float(m.max()) for _, _, (m, _) in chosen.values() if m.numel()), default=None) if shared else None
        for slot, (name, head, (matrix, spans)) in chosen.items():
            words = [text[a:b] for a, b in spans]
            title = f"{compare.map_label(name)} · " + ("mean of heads" if head is None else f"head {head + 1}")
            ui.chart(viz.attention_heatmap(matrix, words, title, zmax=zmax), f"self-attention {slot}", columns[slot],
                     key=f"compare_heat_{slot}")
            if len(words) >= 2:
                shape = compare.locality(matrix)
                columns[slot].caption(f"This matrix: Gini {shape['gini']:.0%}; {shape['diagonality_b3']:.0%} of its "
                                      f"weight within 3 words of the diagonal, against {shape['even_diagonality_b3']:.0%}"
                                      " for attention spread evenly over these words (a short sentence is mostly "
                                      "'diagonal' whatever the model does).")
            if "sentence" not in explanations[slot].attentions[name].axes:
                columns[slot].caption("A flat model attends across the whole document: this is the block of its "
                                      "document-wide matrix for this sentence (rows sum to the share kept inside it).")
        if len(chosen) == 2:
            st.caption("Both heatmaps use the words both models read" + (" and one colour scale (darkest = the "
                       "largest weight of either)." if shared else "; each has its own colour scale."))

        # 5. One word's self-attention, per map and head (HCAN Figures 5 and 8)
        st.subheader("What one word attends to")
        sentence = ex_a.document.sentences[compare.sentence_index(ex_a, start)]
        tokens = [t for t in sentence.tokens if (t.start, t.end) in common_words]
        if tokens:
            w = 0 if len(tokens) == 1 else st.select_slider(
                "Word", range(len(tokens)), key=f"compare_word_{doc_key}_{start}", format_func=lambda i: tokens[i].text,
                value=0)
            word = (tokens[w].start, tokens[w].end)
            st.caption("Each line: the self-attention the chosen word (outlined) gives the words of its sentence, "
                       "for one map and head; darkest = that line's largest weight. HCAN's two branches are shown "
                       "separately, as in its Figure 5.")
            columns = st.columns(2)
            for column, (slot, ex) in zip(columns, explanations.items()):
                with column:
                    st.markdown(f"**{slot}: {models[slot].display_name}**")
                    rows = compare.word_self_attention(ex, start, word)
                    if not rows:
                        st.caption("No word self-attention in this model.")
                        continue
                    own = compare.sentence_index(ex, start)
                    words = [t.text for t in ex.document.sentences[own].tokens]
                    index = next(i for i, t in enumerate(ex.document.sentences[own].tokens) if (t.start, t.end) == word)
                    lines = [(compare.map_label(r["map"]) + (f" · head {r['head'] + 1}" if ex.heads(r["map"]) > 1 else "")
                              + (f" · {r['elsewhere']:.1%} to other sentences" if r["elsewhere"] > 0.0005 else ""),
                              r["weights"]) for r in rows]
                    st.html(viz.word_attention_html(words, lines, index))
