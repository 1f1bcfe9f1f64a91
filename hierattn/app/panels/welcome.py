"""The first thing a visitor reads: what the app is, three things to try, and the Tour."""
from __future__ import annotations

import streamlit as st
from streamlit.errors import StreamlitAPIException

HIDDEN = "welcome_hidden"


def welcome() -> None:
    """A short welcome above Explore, until the visitor hides it (for the rest of the session)."""
    if st.session_state.get(HIDDEN):
        return
    with st.container(border=True):
        st.markdown("#### Welcome to hierattn\n"
                    "Where does a text classifier look when it decides? Each model here reads a document word by "
                    "word and sentence by sentence and weighs them with **attention**; the app paints those weights "
                    "on the text and tests whether they explain the prediction.")
        left, middle, right = st.columns(3)
        left.markdown("**1 · Read a document**  \nPick a sample below, or paste your own text: the prediction, and "
                      "every word shaded by how much the model weighs it.")
        middle.markdown("**2 · Change the model**  \nPick another in the sidebar (HAN, HCAN, SANet, …), or put two "
                        "side by side on **Compare**.")
        right.markdown("**3 · Doubt the shading**  \nSwitch on *Test the shading* and *Can I trust this shading?* "
                       "below: each figure beside the baseline it must beat.")
        tour, hide = st.columns([3, 1])
        try:
            tour.page_link("pages/tour.py", label="New to attention? Take the six-step Tour", icon=":material/school:")
        except StreamlitAPIException:  # the page run on its own, outside the app's navigation (tests)
            tour.markdown("New to attention? Take the six-step **Tour** (in the sidebar).")
        hide.button("Hide this", key="welcome_hide", on_click=lambda: st.session_state.update({HIDDEN: True}))
