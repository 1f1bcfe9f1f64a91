"""How a page joins the app: every page file calls ``run_through_app`` first."""
from __future__ import annotations

import base64
from functools import cache
from pathlib import Path

import streamlit as st


@cache
def page_icon() -> str:
    """The browser tab's icon (our own file, not a ":material/..." icon: the browser fetches those
    from a font server, which an offline classroom does not reach), as a data URL, which Streamlit
    passes on as it is. Given as a file, it was read, checked and registered again in every page
    run of every session (1.3 ms of a paste in a sampling profile)."""
    return "data:image/png;base64," + base64.b64encode((Path(__file__).parent / "icon.png").read_bytes()).decode()


def run_through_app() -> None:
    """Call first in every page file. On a fresh server, a first visitor who opens a page's URL
    (a shared link) gets that file run on its own, in Streamlit's old ``pages/``-folder mode,
    because app.py's ``st.navigation`` has not run yet (streamlit issues 9624 and 9992): no
    navigation, no wide layout. Switch that mode off and rerun; app.py then routes the same URL
    (a page's hash is that of its URL path in both modes). Only a session's first run is rerun:
    it carries no click that a rerun could swallow. (AppTest switches the mode back on before
    every run; its later runs go on in the old mode, as they always did.)"""
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        if "_routed" not in st.session_state:
            st.session_state["_routed"] = True
            st.rerun()
