"""Every head at a glance (a model with stacked layers of heads over subword tokens): a layers x
heads grid of what each head does beside an even spread, a click opening that head's map below."""
from __future__ import annotations

import streamlit as st

from hierattn import viz
from hierattn.analysis import heads
from hierattn.analysis.explain import Explanation
from hierattn.app.downloads import chart, table_downloads

LABELS = {"special": "special tokens", "previous": "previous token", "next": "next token",
          "same word": "same word's pieces", "gini": "Gini", "diagonality_b1": "b=1",
          "special (even)": "special tokens (even)", "previous (even)": "previous token (even)",
          "next (even)": "next token (even)", "same word (even)": "same word's pieces (even)",
          "diagonality_b1 (even)": "b=1 (even)"}


def head_overview(ex: Explanation, name: str, figures: dict) -> None:
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
                    "every head at a glance", key=f"head_grid_{name}", collect=figures, select=True)
    points = clicked.selection.points if clicked else []
    if points and points[0].get("x") is not None and points[0].get("y") is not None:
        picked = (int(points[0]["y"]), int(points[0]["x"]))
        if st.session_state.get("head_grid_opened") != picked:  # open it once; the pickers stay the reader's
            st.session_state["head_grid_opened"] = picked
            st.session_state["self_level"] = "subword"
            st.session_state["self_layer"] = picked[0]
            st.session_state["self_head"] = f"head {picked[1] + 1}"
    table = viz.head_table(rows)
    st.dataframe(table.rename(columns=LABELS).style.format(precision=3, na_rep="—"), hide_index=True,
                 width="stretch")
    table_downloads(table, f"heads-{name}", "heads_table")
