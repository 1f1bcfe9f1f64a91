"""A Tour step's check on the document shown, as every step says it."""
from __future__ import annotations

import streamlit as st


def show_verdict(shown: bool, markdown: str, what: str = "the claim") -> None:
    """A step's check on the document shown: whether the claim holds here, in a sentence of its own,
    then the figures it rests on (green where it holds beyond the baselines, else a warning)."""
    head = f"**On this document, {what} holds.** " if shown else f"**On this document, {what} does not hold.** "
    (st.success if shown else st.warning)(head + markdown,
                                          icon=":material/check_circle:" if shown else ":material/info:")
