"""Compare's sections: where two models look on one colour scale and how far they agree, their
self-attention over the same sentence, and what one word attends to (HCAN Figures 5-8)."""
from __future__ import annotations

import streamlit as st

from hierattn import viz
from hierattn.analysis import compare
from hierattn.analysis.explain import Explanation
from hierattn.app.downloads import Figures, chart, slide_of, table_downloads
from hierattn.app.widgets import head_picker
from hierattn.checkpoint.classifier import Classifier


def where_each_looks(explanations: dict[str, Explanation], models: dict[str, Classifier], figures: Figures) -> None:
    """Both documents shaded by each model's word importance on one scale, a difference map, and
    the agreement of the two rankings beside what unrelated rankings give."""
    st.subheader("Where each model looks")
    importances = {slot: compare.importance(ex) for slot, ex in explanations.items()}
    present = {slot: imp for slot, imp in importances.items() if imp is not None}
    for slot, imp in importances.items():
        if imp is None:
            st.info(f"Model {slot} ({models[slot].display_name}) has no attention: nothing to shade.")
    if not present:
        return
    peak = max(max(imp.words.values()) for imp in present.values())
    sentence_peak = max(max(imp.sentences.values()) for imp in present.values())
    view = st.segmented_control("View", ["side by side", "A", "B", "difference"], default="side by side",
                                key="compare_view", help="The difference map needs both models' attention.")
    view = view or "side by side"
    st.caption("Each word is shaded by its share of the document's attention, on one scale for both models "
               "(darkest = the largest share of either); orange bars: sentence weights. "
               + " ".join(f"{slot}: {imp.source}." for slot, imp in present.items()))

    def document(slot):
        ex, imp = explanations[slot], importances[slot]
        if imp is None:
            st.caption(f"{slot} has no attention.")
            return
        st.html(viz.document_html(ex.document.text, ex.document.spans(), compare.shading(ex, imp),
                                  [imp.sentences[s.start] for s in ex.document.sentences], "document",
                                  peak=peak, sentence_peak=sentence_peak, unknown=ex.unknown))

    if view == "side by side":
        for column, slot in zip(st.columns(2), ("A", "B")):
            with column:
                st.markdown(f"**{slot}: {models[slot].display_name}**")
                document(slot)
        panels = [(f"{slot}: {explanations[slot].classifier_name} ({models[slot].display_name})",
                   explanations[slot].sentence_words, compare.shading(explanations[slot], imp),
                   explanations[slot].unknown) for slot, imp in present.items()]
        slide_of(lambda: viz.shaded_text(panels, peak), "Where each model looks", key="compare_shading",
                 figures=figures)
    elif view in ("A", "B"):
        document(view)
    elif len(present) < 2:
        st.info("The difference map needs attention from both models.")
    if len(present) < 2:
        return
    agree = compare.agreement(importances["A"], importances["B"])
    if view == "difference":
        ex_a, ex_b = explanations["A"], explanations["B"]
        base = ex_a if ex_a.document.num_tokens >= ex_b.document.num_tokens else ex_b
        diffs = [[agree.difference.get((t.start, t.end)) for t in s.tokens] for s in base.document.sentences]
        st.html(viz.difference_html(base.document.text, base.document.spans(), diffs))
        st.caption("Orange: A gives the word a larger share than B; purple: B gives it more; grey: only one "
                   "model read it. Shares are renormalised over the words both read.")
    st.subheader("Agreement")
    table = agree.table()
    # each figure beside what unrelated rankings give, in one cell: five columns were cut at 1024 px
    shown = table[["measure"]].copy()
    for figure, chance in ((table.columns[1], table.columns[2]), (table.columns[3], table.columns[4])):
        shown[f"{figure} (if unrelated)"] = [("—" if v != v else f"{v:.2f}") + ("" if c != c else f" ({c:.2f})")
                                             for v, c in zip(table[figure], table[chance])]
    st.dataframe(shown, hide_index=True, width="stretch")
    table_downloads(table, "agreement", "agreement_table")
    st.caption("Spearman: rank correlation of the two models' importance over the words (sentences) both read; "
               "1 = the same order. Top-k overlap: share of A's k most important words (sentences) that are "
               "among B's k most important. Beside each, what two unrelated rankings give: agreement means "
               "clearly above it. — : too few to compute.")


def _word_maps(ex: Explanation) -> list[str]:
    return [n for n in ex.self_attention_names if ex.describe(n).level == "word" and "time" not in ex.describe(n).axes]


def same_sentence(explanations: dict[str, Explanation], models: dict[str, Classifier], text: str,
                  doc_key: str) -> None:
    """Both models' word self-attention over one sentence on the same axes (and scale), then what
    one chosen word attends to, one line per branch and head."""
    maps = {slot: _word_maps(ex) for slot, ex in explanations.items()}
    if not any(maps.values()):
        return
    ex_a, ex_b = explanations["A"], explanations["B"]
    st.subheader("Self-attention over the same sentence")
    common_words = {(t.start, t.end) for s in ex_a.document.sentences for t in s.tokens} & \
                   {(t.start, t.end) for s in ex_b.document.sentences for t in s.tokens}
    starts = [s.start for s in ex_a.document.sentences if compare.sentence_index(ex_b, s.start) is not None]
    if not starts:
        st.info("The two models share no sentence of this document.")
        return
    first_words = {s.start: " ".join(t.text for t in s.tokens[:8]) for s in ex_a.document.sentences}
    start = st.selectbox("Sentence", starts, key=f"compare_sentence_{doc_key}",
                         format_func=lambda st_: f"S{starts.index(st_) + 1}: {first_words[st_]}…")
    unknown = {slot: ex.unknown_spans() for slot, ex in explanations.items()}
    chosen, layers, columns = {}, {}, dict(zip(explanations, st.columns(2)))
    for slot, ex in explanations.items():
        with columns[slot]:
            st.markdown(f"**{slot}: {models[slot].display_name}**")
            if not maps[slot]:
                st.caption("No word self-attention in this model.")
                continue
            # one above the other: two pickers side by side in half a 1024 px page were cut
            name = st.selectbox("Map", maps[slot], key=f"compare_map_{slot}", format_func=compare.map_label)
            heads = ex.heads(name)
            head = head_picker(st, "Head", heads, f"compare_head_{slot}") if heads > 1 else None
            last = compare.last_layer(ex, name)
            layer = None if last is None else st.selectbox(
                "Layer", range(last + 1), index=last, key=f"compare_layer_{slot}",
                format_func=lambda i, last=last: f"layer {i + 1}" + (" (last)" if i == last else ""))
            layers[slot] = layer
            chosen[slot] = (name, head, compare.sentence_self_attention(ex, name, start, head, common_words, layer))
    shared = len(chosen) == 2 and st.toggle(
        "One colour scale for both", value=True, key="compare_shared_scale",
        help="Off: each heatmap's darkest cell is its own largest weight. A flat model spreads each row over the "
             "whole document, so its block for one sentence is pale on a shared scale.")
    zmax = max((float(m.max()) for _, _, (m, _) in chosen.values() if m.numel()), default=None) if shared else None
    sentence = f"sentence {starts.index(start) + 1}: “{first_words[start]}…”"
    # each model's map under its own column, also when the other model has none (HAN against HCAN):
    # drawn below both columns, B's map stood under A's heading
    for slot, (name, head, (matrix, spans)) in chosen.items():
        place = columns[slot]
        words = [text[a:b] for a, b in spans]
        title = f"{compare.map_label(name)} · " + ("mean of heads" if head is None else f"head {head + 1}") + (
            "" if layers.get(slot) is None else f" · layer {layers[slot] + 1}")
        flags = [(a, b) in unknown[slot] for a, b in spans]
        chart(viz.attention_heatmap(matrix, viz.marked_words(words, flags), title + viz.unknown_note(flags),
                                    zmax=zmax, fluid=True),
              f"Self-attention of {slot}: {title}", place, key=f"compare_heat_{slot}",
              figures=Figures(f"{slot}: {explanations[slot].classifier_name} ({models[slot].display_name}) · "
                              f"{sentence}"))
        if len(words) >= 2:
            shape = compare.locality(matrix)
            place.caption(f"This matrix: Gini {shape['gini']:.0%}; {shape['diagonality_b3']:.0%} of its "
                          f"weight within 3 words of the diagonal, against {shape['even_diagonality_b3']:.0%}"
                          " for attention spread evenly over these words (a short sentence is mostly "
                          "'diagonal' whatever the model does).")
        if "sentence" not in explanations[slot].describe(name).axes:
            place.caption("A flat model attends across the whole document: this is the block of its "
                          "document-wide matrix for this sentence (rows sum to the share kept inside it).")
    if len(chosen) == 2:
        st.caption("Both heatmaps use the words both models read" + (" and one colour scale (darkest = the "
                   "largest weight of either)." if shared else "; each has its own colour scale."))
    _one_word(explanations, models, start, common_words, doc_key, layers)


def _one_word(explanations, models, start: int, common_words: set, doc_key: str, layers: dict) -> None:
    st.subheader("What one word attends to")
    ex_a = explanations["A"]
    sentence = ex_a.document.sentences[compare.sentence_index(ex_a, start)]
    tokens = [t for t in sentence.tokens if (t.start, t.end) in common_words]
    if not tokens:
        return
    w = 0 if len(tokens) == 1 else st.select_slider(
        "Word", range(len(tokens)), key=f"compare_word_{doc_key}_{start}", format_func=lambda i: tokens[i].text,
        value=0)
    word = (tokens[w].start, tokens[w].end)
    st.caption("Each line: the self-attention the chosen word (outlined) gives the words of its sentence, "
               "for one map and head; darkest = that line's largest weight. HCAN's two branches are shown "
               "separately, as in its Figure 5.")
    for column, (slot, ex) in zip(st.columns(2), explanations.items()):
        with column:
            st.markdown(f"**{slot}: {models[slot].display_name}**")
            rows = compare.word_self_attention(ex, start, word, layers.get(slot))
            if not rows:
                st.caption("No word self-attention in this model.")
                continue
            own = ex.document.sentences[compare.sentence_index(ex, start)].tokens
            index = next(i for i, t in enumerate(own) if (t.start, t.end) == word)
            lines = [(compare.map_label(r["map"]) + (f" · head {r['head'] + 1}" if ex.heads(r["map"]) > 1 else "")
                      + (f" · {r['elsewhere']:.1%} to other sentences" if r["elsewhere"] > 0.0005 else ""),
                      r["weights"]) for r in rows]
            st.html(viz.word_attention_html([t.text for t in own], lines, index))
