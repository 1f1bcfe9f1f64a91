"""Every head at a glance (a model with stacked layers of heads over subword tokens): a layers x
heads grid of what each head does beside an even spread, a click opening that head's map below."""
from __future__ import annotations

import numpy as np
import streamlit as st

from hierattn import viz
from hierattn.analysis import clark, heads
from hierattn.analysis.explain import ExplainError, Explanation
from hierattn.app.downloads import Figures, chart, table_downloads
from hierattn.app.widgets import asked_for, documents_count

# the overview table's columns at 1024 px: each share, and the even spread's in brackets
SHORT = {"special": "special (even)", "previous": "previous (even)", "next": "next (even)",
         "same word": "same word (even)", "diagonality_b1": "b=1 (even)"}
LABELS = {"special": "special tokens", "previous": "previous token", "next": "next token",
          "same word": "same word's pieces", "gini": "Gini", "diagonality_b1": "b=1",
          "special (even)": "special tokens (even)", "previous (even)": "previous token (even)",
          "next (even)": "next token (even)", "same word (even)": "same word's pieces (even)",
          "diagonality_b1 (even)": "b=1 (even)"}


def head_overview(ex: Explanation, name: str, figures: Figures) -> None:
    """The section; nothing for a model without layers of heads over subword tokens."""
    rows = heads.overview(ex)
    if not rows:
        return
    st.subheader("Every head at a glance")
    st.caption("Per layer and head, over the tokens the model read: the share of attention each head gives special "
               "tokens, the previous token, the next token and the other pieces of the same word, each beside "
               f"what an even spread gives. A head is labelled with a pattern when its share is at least "
               f"{heads.MARGIN:.0%} above the even spread's (a random map stays within 1%); darker = further "
               "above. Click a head to open its map below.")
    values, labels = heads.grid(rows)
    layers, count = values.shape
    clicked = chart(viz.head_grid(values, labels, [f"layer {i + 1}" for i in range(layers)],
                                  [f"head {h + 1}" for h in range(count)]),
                    "every head at a glance", key=f"head_grid_{name}", figures=figures, select=True)
    points = clicked.selection.points if clicked else []
    if points and points[0].get("x") is not None and points[0].get("y") is not None:
        picked = (int(points[0]["y"]), int(points[0]["x"]))
        if st.session_state.get("head_grid_opened") != picked:  # open it once; the pickers stay the reader's
            st.session_state["head_grid_opened"] = picked
            st.session_state["self_level"] = "subword"
            st.session_state["self_layer"] = picked[0]
            st.session_state["self_head"] = f"head {picked[1] + 1}"
    table = viz.head_table(rows)
    # each share beside its even-spread value in one cell, so that every column fits at 1024 px; in
    # percent with a decimal, so that small shares (0.4%) do not all print as 0.00; heads that show
    # something first
    shown = table[["layer", "head", "finding"]].copy()
    for column in ("special", "previous", "next", "same word", "diagonality_b1"):
        shown[SHORT[column]] = [("—" if v != v or v is None else f"{100 * v:.1f}% ({100 * e:.1f}%)")
                                for v, e in zip(table[column], table[f"{column} (even)"])]
    shown["Gini"] = table["gini"].map(lambda v: f"{v:.2f}")
    shown = shown.iloc[sorted(range(len(shown)), key=lambda i: (shown["finding"].iloc[i] == "no finding", i))]
    st.dataframe(shown, hide_index=True, width="stretch",
                 column_config={c: st.column_config.NumberColumn(width="small") for c in ("layer", "head")})
    table_downloads(table, f"heads-{name}", "heads_table")
    layer_by_layer(ex, name, figures)


def layer_by_layer(ex: Explanation, name: str, figures: Figures) -> None:
    """Clark et al.'s view of this document: per layer, the heads' mean share to each kind of token
    and their entropy, each beside an even spread's."""
    rows = clark.profile(ex)
    if not rows:
        return
    layers = clark.by_layer(rows)
    first = rows[0]["first_special"]
    st.markdown("**Layer by layer: what the heads look at** (Clark et al. 2019, \"What does BERT look at?\")")
    st.caption(f"Per layer, averaged over its heads: the share of each token's attention that goes to "
               f"{viz.md_code(first) if first else 'the first special token'}, to the other special tokens, to "
               "punctuation, to the token itself and to its neighbours; dotted (and the table's even "
               f"column), what an even spread over the same {rows[0]['size']} tokens gives. Clark et al. find "
               "BERT's middle layers resting on [SEP]; a model that parks its attention on one token shows a line "
               "far above its dotted one.")
    chart(viz.clark_layers(layers, first), "what the heads look at, layer by layer", key=f"clark_layers_{name}",
          figures=figures)
    st.dataframe(viz.clark_layer_table(layers, first), hide_index=True, width="stretch")


def split_heads(classifier, path, name: str, dataset: str, split: str, texts: list[str]) -> None:
    """Dataset statistics: every head over documents spread evenly through the split, on request, in
    the background; each pattern's mean share above an even spread with its bootstrap 95% interval."""
    from hierattn.analysis.battery_split import evenly_spaced
    from hierattn.app.loading import checkpoint_key, explain_cached
    from hierattn.app.tasks import computed

    if not texts:
        return
    try:  # the model's maps, from an explanation the page keeps (no pass of its own on each rerun)
        probe = explain_cached(path, texts[0])
    except ExplainError:
        return
    if heads.layered_map(probe) is None:
        return
    st.subheader("Every head over the split")
    st.caption("Explore's head overview for each document, then per head the mean share above an even spread "
               f"with a bootstrap 95% interval over documents. A head's finding: a pattern at least "
               f"{heads.MARGIN:.0%} above an even spread in the mean, its interval above 0.")
    left, right = st.columns([1, 3])
    count = documents_count(left, "heads", len(texts))
    if not asked_for(right, "heads", "Measure every head over the split", (name, dataset, split, count)):
        return
    part = evenly_spaced(texts, count)
    found = computed(("split-heads", *checkpoint_key(path), dataset, split, count),
                     lambda progress: clark.over_split(classifier, part, progress), f"Heads, {name} on {dataset}:")
    if not found or not found[0]:
        return
    rows, layers_over = found
    layers, count_heads = max(r["layer"] for r in rows) + 1, max(r["head"] for r in rows) + 1
    values = np.zeros((layers, count_heads))
    labels = [[""] * count_heads for _ in range(layers)]
    for r in rows:
        best = r["finding"]
        values[r["layer"], r["head"]] = max([r[p][0] for p in heads.PATTERNS if r[p] is not None] + [0.0])
        labels[r["layer"]][r["head"]] = f"{best} +{r[best][0]:.0%}" if best else "no finding"
    over = Figures(f"{name} · {dataset}, {split} split · {rows[0]['documents']:,} documents")
    chart(viz.head_grid(values, labels, [f"layer {i + 1}" for i in range(layers)],
                        [f"head {h + 1}" for h in range(count_heads)]), "Every head over the split",
          key=f"split_head_grid_{name}", figures=over)
    st.dataframe([{"layer": r["layer"] + 1, "head": r["head"] + 1, "finding": r["finding"] or "no finding",
                   **{LABELS[p]: _cell(r[p]) for p in heads.PATTERNS}} for r in rows],
                 hide_index=True, width="stretch")
    if layers_over:
        first = layers_over[0]["first_special"]
        st.markdown("**Layer by layer over the split** (Clark et al. 2019, Figures 1-2)")
        chart(viz.clark_layers(layers_over, first), "What the heads look at over the split, layer by layer",
              key=f"split_clark_{name}", figures=over)
        st.dataframe(viz.clark_layer_table(layers_over, first), hide_index=True, width="stretch")
    st.caption(f"{rows[0]['documents']} documents spread evenly through the split. The command line prints the "
               f"same: `python -m hierattn stats --checkpoint checkpoints/{name} --dataset {dataset} --split {split} "
               f"--documents {count}`.")


def _cell(value) -> str:
    return "—" if value is None else f"{value[0]:+z.2f} [{value[1]:+z.2f}, {value[2]:+z.2f}]"
