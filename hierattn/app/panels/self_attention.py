"""Self-attention heatmaps per level, map, head and sentence (or time step) with their Gini and
diagonality beside an even spread's (Explore), and MahNN's per-channel and hidden-dimension views."""
from __future__ import annotations

import streamlit as st

from hierattn import viz
from hierattn.analysis.explain import Explanation, head_axis, map_title
from hierattn.analysis.metric_tables import metrics_view
from hierattn.analysis.metrics import GROUP_AXES, column_labels
from hierattn.app.downloads import Figures, chart, table_downloads
from hierattn.app.url_state import pending_view
from hierattn.app.widgets import head_picker, keep_valid, opening
from hierattn.contract import ATTENTION

MAX_HEATMAP = 60  # rows and columns drawn at once: every word named on both axes
LEVEL_NAMES = {"word": "words attending to words", "sentence": "sentences attending to sentences",
               "subword": "tokens attending to tokens (as the model reads them)"}
MAX_BLOCKS = 100  # an overview of a longer matrix has at most this many blocks a side


def self_attention(ex: Explanation, words: list[str], sentence_labels: list[str], doc_key: str, name: str,
                   figures: Figures) -> dict:
    """The self-attention section; returns the view for the address bar (empty without self-attention)."""
    maps = ex.self_attention_names
    if not maps:
        return {}
    st.subheader("Self-attention")
    levels = sorted({ex.describe(n).level for n in maps}, key=list(LEVEL_NAMES).index)
    keep_valid("self_level", levels)
    level = st.radio("Level", levels, horizontal=True, key="self_level", format_func=LEVEL_NAMES.__getitem__,
                     help="A transformer reads subword tokens (its special tokens included); its words and sentences "
                          "sum the attention a word's pieces receive and average what they give, special tokens "
                          "left out." if "subword" in levels else None)
    names = [n for n in maps if ex.describe(n).level == level]
    # the map and head side by side, the sentence (or layer) under them at full width: three across
    # cut both names at 1024 px ("word self-attention, branch a (E", "S1: Pernod takeov")
    c1, c2 = st.columns([3, 2])
    if (linked := pending_view("branch")) in names:
        st.session_state[f"branch_{level}"] = linked
    branch = c1.selectbox("Self-attention", names, key=f"branch_{level}", format_func=map_title,
                          help="HCAN with two parallel self-attentions has branches a (ELU values) and b (tanh "
                               "values); SANet has one map per block.")
    axes = ex.describe(branch).axes
    heads = ex.heads(branch)
    head = head_picker(c2, "Head", heads, "self_head") if heads > 1 else None
    head_name = "single head" if heads == 1 else "mean of heads" if head is None else f"head {head + 1}"
    group, labels = _group(ex, axes, level, branch, words, sentence_labels, doc_key, st.container())
    if "layer" in axes:
        head_name += f" · layer {group + 1}"
    shown = slice(0, len(labels))
    if len(labels) > MAX_HEATMAP:  # a document-wide matrix over many words: an overview in blocks, then zoom
        block = -(-len(labels) // MAX_BLOCKS)
        full = ex.self_attention(branch, group, head)
        block_names = [f"{a + 1}–{min(a + block, len(labels))}: {labels[a]}" for a in range(0, len(labels), block)]
        chart(viz.attention_heatmap(viz.block_overview(full, block), block_names,
                                    f"overview: {len(labels)} positions in blocks of {block}"),
              f"{map_title(branch)} · {head_name} · overview", figures=figures)
        first = st.slider("Zoom: first position shown at full resolution", 1, len(labels) - MAX_HEATMAP + 1, 1,
                          key="self_window",
                          help=f"The matrix has {len(labels)} rows; {MAX_HEATMAP} are shown at full resolution "
                               "below. The overview above shows all of it in blocks.") - 1
        shown = slice(first, first + MAX_HEATMAP)
    if _specials_kept(ex, branch, axes, level, group, head, head_name, labels, name, figures):
        return {"level": level, "branch": branch, "selfhead": st.session_state.get("self_head") if heads > 1 else None,
                "sentence": None, "layer": group}
    matrix = ex.self_attention(branch, group, head)[shown, shown]
    subtitle = None  # a slide of one sentence's matrix names that sentence, not the document's opening
    if level == "word" and "sentence" in axes and group is not None:
        said = " ".join(t.text for t in ex.document.sentences[group].tokens)
        subtitle = (f"{name} · sentence {group + 1} of {len(ex.document.sentences)}: “{opening(said)}”"
                    + (f" · words {shown.start + 1}–{shown.start + len(labels[shown])}" if shown.start else ""))
    picked = f"attends_{doc_key}_{level}_{group}_{shown.start}"
    note = viz.unknown_note([str(label).endswith(viz.UNKNOWN_MARK) for label in labels[shown]])
    title = f"{map_title(branch)} · {head_name}{note}"
    heatmap = ex.remembered(f"heatmap {branch} {group} {head} {shown.start}:{shown.stop} {title}",
                            lambda: viz.attention_heatmap(matrix, labels[shown], title, clickable=True))
    clicked = chart(heatmap,
                    f"{map_title(branch)} · {head_name}", figures=figures, key=f"self_heat_{picked}", select=True,
                    subtitle=subtitle)
    points = clicked.selection.points if clicked else []
    if points and points[0].get("y") is not None:  # a click on a row of the heatmap picks its word
        st.session_state[picked] = int(points[0]["y"])
    _attends(ex, branch, group, labels[shown], shown, heads, picked)
    if heads > 1 and st.toggle("Show every head side by side", key="all_heads"):
        matrices = [ex.self_attention(branch, group, h)[shown, shown] for h in range(heads)]
        per_row = min(heads, 2)  # readable at 1024 px as at 1920 px
        chart(viz.heads_grid(matrices, labels[shown], [f"head {h + 1}" for h in range(heads)], per_row),
              f"{map_title(branch)} · every head", key="head_grid", figures=figures, subtitle=subtitle)
        st.caption(f"Every head of {viz.md_text(map_title(branch))} on one colour scale (0 to the largest weight of "
                   "any head); hover a cell for its words and weight.")
    if "time" in axes:
        lookback = ex.lookback(branch)  # (time, window): mean attention each slot receives
        chart(viz.matrix_heatmap(
            lookback, [f"{t + 1}: {w}" for t, w in enumerate(words)],
                [f"{w + 1} back" for w in range(lookback.shape[1])],
            "Where each step looks back (attention each window slot receives, mean over the window's queries)",
            "time step (word read)"), f"{map_title(branch)} · where each step looks back", key="lookback",
            figures=figures)
    group_axis = next((a for a in GROUP_AXES if a in axes), None)
    table = ex.remembered(f"metrics_view {level} {group_axis} {group} {heads}",
                          lambda: metrics_view(ex, level, group_axis, group, heads))
    st.caption("Gini coefficient (sparsity) and diagonality at bandwidth b (share of weight within b positions "
               "of the diagonal), per the SANet paper §5.3, for " + {"sentence": "this sentence.",
                                                                      "time": "this time step.",
                                                                      "layer": "this layer."}.get(group_axis,
                                                                                                  "the document-wide "
                                                                                                  "matrix.")
               + " Beside each diagonality (even): what attention spread evenly over the same n words gives; a "
               "short sentence is mostly 'diagonal' by construction, so only the excess says the model looks near. "
               "An even spread has Gini 0.")
    labels = column_labels()
    shares = [labels[c] for c in table if c in labels]

    def readable():
        # percentages as numbers in points with a column format, not a pandas Styler: the Styler's
        # formatting and marshalling cost a share of every paste's server time on every rerun. One
        # new frame from its columns: assign, rename and assign again took 3-4 ms of a new paste
        import pandas as pd

        return pd.DataFrame({labels.get(c, c): table[c].map(map_title) if c == "map" else
                             table[c] * 100 if c in labels else table[c] for c in table})

    st.dataframe(ex.remembered(f"metrics_shown {level} {group_axis} {group} {heads}", readable), hide_index=True,
                 width="stretch", column_config={c: st.column_config.NumberColumn(format="%.1f%%") for c in shares})
    table_downloads(table, f"metrics-{name}-{level}", "metrics_table")
    return {"level": level, "branch": branch, "selfhead": st.session_state.get("self_head") if heads > 1 else None,
            "sentence": group if "sentence" in axes else None, "layer": group if "layer" in axes else None}


def _specials_kept(ex: Explanation, branch: str, axes, level: str, group: int | None, head: int | None,
                   head_name: str, labels: list[str], name: str, figures: Figures) -> bool:
    """A transformer's word map with its special tokens kept as columns (Clark et al.'s rule), when
    asked for; whether it was drawn (then in place of the map without them)."""
    if level != "word" or ex.describe(branch).source is None or "layer" not in axes or group is None:
        return False
    if not st.toggle("Keep the special tokens as columns", key="keep_specials",
                     help="Off (the default): attention to [CLS], [SEP] and the like is left out and each word's "
                          "row renormalised over the words, so every view of words compares with the other models. "
                          "On: those tokens are columns of their own, as Clark et al. (2019) read BERT, and a word "
                          "that rests on [CLS] or [SEP] shows it."):
        return False
    from hierattn.analysis.clark import words_with_specials

    matrix, keys = words_with_specials(ex, group, head)
    words = len(labels)
    kept = float(matrix[:, words:].sum(-1).mean())
    chart(viz.matrix_heatmap(matrix, labels, keys, f"{map_title(branch)} · {head_name} · special tokens kept",
                             "word (query)", "word or special token (key)"),
          f"{map_title(branch)} · {head_name} · special tokens kept", figures=figures,
          key=f"specials_{name}_{group}_{head}")
    st.caption(f"Each row sums to 1 over the words and the special tokens: on average {kept:.0%} of a word's "
               "attention in this layer goes to special tokens, which the view without them spreads over the words.")
    return True


def _attends(ex: Explanation, branch: str, group: int | None, labels: list[str], shown: slice, heads: int,
             key: str) -> None:
    """What one word (or sentence) attends to, as BertViz shows it: pick it (here, or by clicking its
    row in the heatmap), and see its row of every head and of their mean, shaded over the words."""
    if len(labels) < 2:
        return
    chosen = st.pills("What does a word attend to? Click one (or a row of the heatmap)", range(len(labels)),
                      format_func=lambda i: viz.md_text(labels[i]), key=key)
    if chosen is None:
        return
    lines = [("mean of heads" if heads > 1 else "weights", ex.self_attention(branch, group)[shown, shown][chosen])]
    lines += [(f"head {h + 1}", ex.self_attention(branch, group, h)[shown, shown][chosen]) for h in range(heads)
              if heads > 1]
    st.html(viz.word_attention_html(labels, [(label, row.tolist()) for label, row in lines], chosen))
    st.caption(f"Each line: how “{viz.md_text(labels[chosen])}” (outlined) spreads its attention over the others in "
               f"{map_title(branch)}; darkest = that line's largest weight, exact weights on hover.")


def _group(ex, axes, level, branch, words, sentence_labels, doc_key, where) -> tuple[int | None, list[str]]:
    """The sentence (or time step) whose matrix is shown, and the labels of its rows."""
    if "sentence" in axes:
        if (linked := pending_view("sentence")) and linked.isdigit() and int(linked) < len(sentence_labels):
            st.session_state[f"self_sentence_{doc_key}"] = int(linked)
        group = where.selectbox("Sentence", range(len(sentence_labels)), format_func=sentence_labels.__getitem__,
                                key=f"self_sentence_{doc_key}")
        return group, viz.marked_words([t.text for t in ex.document.sentences[group].tokens],
                                       ex.unknown[group] if group < len(ex.unknown) else [])
    if "time" in axes:  # a recurrent cell's attention over its window of past states (HA-LSTM)
        group = st.select_slider("Time step (the word being read)", range(len(words)), value=len(words) - 1,
                                 key=f"self_step_{doc_key}", format_func=lambda t: f"{t + 1}: {words[t]}",
                                 help="Starts at the last word: the state the classifier reads.")
        window = ex.describe(branch).weights.shape[-1]
        return group, [f"h(t−{w + 1})" + (f" {words[group - 1 - w]}" if group - 1 - w >= 0 else " (zeros)")
                       for w in range(window)]
    labels = [token for token, _ in ex.subwords] if level == "subword" else \
        viz.marked_words(words, ex.word_unknown()) if level == "word" else sentence_labels
    if "layer" in axes:  # a transformer: one matrix per layer
        layers = ex.layers(branch)
        if (linked := pending_view("layer")) and linked.isdigit() and int(linked) < layers:
            st.session_state["self_layer"] = int(linked)
        keep_valid("self_layer", list(range(layers)), default=layers - 1)
        group = where.selectbox("Layer", range(layers), format_func=lambda i: f"layer {i + 1}"
                                + (" (last)" if i == layers - 1 else ""), key="self_layer")
        return group, labels
    return None, labels


def channels(ex: Explanation, words: list[str], figures: Figures) -> bool:
    """MahNN: one strip per channel (its Figure 3) and the semantical attention over hidden
    dimensions. True when the model has the hidden-dimension view."""
    word_map = ex.target_name("word")
    if word_map and head_axis(ex.describe(word_map)) == "channel":
        st.subheader("Syntactical attention per channel")
        st.caption("One row per channel (MahNN Figure 3): each channel's attention over the words, on one scale.")
        strips = ex.channel_strips(word_map)
        chart(viz.matrix_heatmap(strips, [f"channel {c + 1}" for c in range(strips.shape[0])], words,
                                 row_title="channel", height=140 + 30 * strips.shape[0]),
              "Syntactical attention per channel", key="channel_strips", figures=figures)
    hidden = [n for n in ex.attentions if ex.describe(n).level == "hidden" and ex.describe(n).kind == ATTENTION]
    if not hidden:
        return False
    st.subheader("Semantical attention over hidden dimensions")
    channel = st.selectbox("Channel", range(ex.heads(hidden[0])), format_func=lambda c: f"channel {c + 1}",
                           key="semantic_channel")
    grid = ex.hidden_attention(hidden[0], channel)
    st.caption("Rows: the document's words; columns: the BiLSTM's hidden dimensions. Each row is a distribution "
               "over the dimensions (sums to 1): which latent features the channel keeps for that word.")
    chart(viz.matrix_heatmap(grid, words, [f"dim {i + 1}" for i in range(grid.shape[1])],
                             row_title="word", column_title="hidden dimension"),
          f"Semantical attention over hidden dimensions, channel {channel + 1}", key="hidden_grid", figures=figures)
    return True
