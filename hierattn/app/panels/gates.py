"""ON-LSTM's master forget gate (Explore): how much of its ordered memory each word closes, and the
gate's distribution over the hidden units. Drawn for any map of kind ``gate``, and labelled as what
it is: a gate the model computes over its own units, not attention over the words."""
from __future__ import annotations

import streamlit as st

from hierattn import viz
from hierattn.analysis.explain import Explanation
from hierattn.app.downloads import Figures, chart


def gates(ex: Explanation, words: list[str], figures: Figures) -> bool:
    """The section, when the model has a gate map; True when it was drawn."""
    names = ex.gate_names()
    if not names:
        return False
    name = names[0]
    st.subheader("Ordered neurons: how much each word closes")
    st.info("Not attention: nothing is weighed by these numbers. ON-LSTM (Shen et al. 2019) orders its hidden "
            "units; at each word its master forget gate erases the units below a split point and keeps those above. "
            "A word that erases much of the memory ends a large constituent (the paper reads it as a syntactic "
            "boundary); a word that erases little continues one.")
    depth = ex.gate_depth(name)
    even = ex.gate_depth_if_even(name)
    chart(viz.distribution_chart(depth.tolist(), words, axis_title="word", value_title="share of the memory erased",
                                 reference=(even, f"even split: {even:.2f}")), "gate depth", figures=figures)
    spread = float(depth.max() - depth.min()) if len(depth) else 0.0
    st.caption(f"Dashed: what a gate with its split spread evenly over the units would erase ({even:.2f}). Here "
               f"the words range over {spread:.2f} of the memory; only words well away from the dashed line are "
               "boundaries or continuations the gate marks.")
    split = ex.attentions[name].weights[0][: ex.word_count()]
    st.caption("Where the split point falls at each word: a distribution over the hidden units in their order "
               "(the gate erases the units to the left of it). Rows: words; columns: hidden units.")
    units = [f"unit {i + 1}" for i in range(split.shape[-1])]
    chart(viz.matrix_heatmap(split, words, units, row_title="word", column_title="hidden unit (ordered)"),
          "gate split distribution", figures=figures)
    return True
