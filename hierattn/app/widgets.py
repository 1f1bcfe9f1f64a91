"""Widgets several pages share: the document picker, the head picker, and keeping a remembered
value valid."""
from __future__ import annotations

import hashlib
import json

import streamlit as st

from hierattn.app.samples import corpus_samples, heldout_samples, samples
from hierattn.limits import CHARACTERS

SAMPLE_PROMPT = "— write or paste your own —"


def document_input(dataset: str | None, sample_key: str, document_key: str, height: int, placeholder: str,
                   corpus: dict | None = None, checkpoint=None) -> str:
    """A sample picker (test-split documents, the model's data set first: for a model trained on
    a local corpus, its test file's; for one trained on your own file, the test documents kept with
    it) above a text box that holds the document; the first visit shows the first sample, not an
    empty page. Returns the text."""
    docs = ((heldout_samples(checkpoint, dataset) if checkpoint else [])
            + (corpus_samples(dataset, json.dumps(corpus, sort_keys=True)) if corpus else []) + samples(dataset))
    # the first 70 characters of the text with its spaces closed up: 70 words are more than enough,
    # and splitting no further than them spares splitting each whole document in every page run
    options = [SAMPLE_PROMPT] + [f"{ds} · {label} · {' '.join(text.split(None, 70)[:70])[:70]}…"
                                 for ds, label, text in docs]

    def use_sample():
        i = options.index(st.session_state[sample_key])
        if i:
            st.session_state[document_key] = docs[i - 1][2]

    def own_text():
        st.session_state[sample_key] = SAMPLE_PROMPT  # the box no longer holds the chosen sample

    if document_key not in st.session_state and docs:
        st.session_state[document_key] = docs[0][2]
        st.session_state[sample_key] = options[1]
    current = st.session_state.get(document_key)
    if current and st.session_state.get(sample_key, SAMPLE_PROMPT) == SAMPLE_PROMPT:
        # a sample that came from a link or another page: the picker names it, not "write your own"
        match = next((i for i, (_, _, text) in enumerate(docs) if text == current), None)
        if match is not None:
            st.session_state[sample_key] = options[match + 1]
    st.selectbox("Sample document (test split)", options, key=sample_key, on_change=use_sample)
    text = st.text_area("Document", key=document_key, height=height, on_change=own_text, placeholder=placeholder,
                        max_chars=CHARACTERS.value)  # what the model would read at most; the box takes no more
    if len(text or "") >= CHARACTERS.value:  # a longer paste was cut by the box itself: say so
        st.warning(f"The box holds at most {CHARACTERS.value:,} characters ({CHARACTERS.variable} on the server): "
                   "a longer paste was cut there, and the model reads its first sentences up to its caps.")
    return text


def opening(text: str, limit: int = 60) -> str:
    """The first words of a document, up to ``limit`` characters, to name it in a title."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rsplit(" ", 1)[0] + "…"


def keep_valid(key: str, options, default=None) -> None:
    """Before the picker ``key`` is drawn: its value becomes ``default`` (else the first option) when
    it is missing or not among ``options`` (a link's, or another model's: a layer the next model
    lacks). Set, never deleted, as ``own_choice`` does: a deleted value let the browser keep showing
    the old choice and send it back on the next click. The picker takes no ``index`` of its own:
    its starting value is this ``default``."""
    options = list(options)
    if options and st.session_state.get(key) not in options:
        st.session_state[key] = options[0] if default is None else default


def own_choice(key: str, options, default, owner: str = "", link: str | None = None) -> None:
    """Before the picker ``key`` is drawn: its value becomes ``default`` when it is missing, not
    among ``options``, or was chosen for another ``owner`` (the model a data set picker belongs
    to), so a page opens on the chosen model's own data set and split.

    The value is set, never deleted: a deleted value let Streamlit's browser side keep showing the
    last model's data set, and the next click on anything sent that back, so the page computed a
    model's statistics over another data set. ``link``: on the page's first run in a session (a
    new visit or a reload), the address bar's parameter of that name, when it names an option; the
    page mirrors its choices there (``url_state.mirror_view``)."""
    options = options if isinstance(options, range) else list(options)
    owned, linked = f"_{key}_owner", f"_{key}_linked"
    if link and not st.session_state.get(linked):
        st.session_state[linked] = True
        wanted = st.query_params.get(link)
        match = next((o for o in options if str(o) == wanted), None)
        if wanted is not None and match is not None:
            st.session_state[key], st.session_state[owned] = match, owner
            return
    if st.session_state.get(key) not in options or st.session_state.get(owned, owner) != owner:
        st.session_state[key] = default
    st.session_state[owned] = owner


def document_key(text: str) -> str:
    """A short stable key for a document's text (12 hex digits of its SHA-1): widgets whose choices
    depend on the document carry it in their keys, and exported files in their names. Not a link's
    key (``documents.link_key``): 48 bits collide."""
    return hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()[:12]


def head_picker(where, label: str, count: int, key: str, axis: str = "head", radio: bool = False) -> int | None:
    """A picker of one head (or MahNN channel) of ``count``, or their mean: returns the head's index,
    or None for the mean. The options are the labels a reader sees ("mean of heads", "head 1", ...);
    the index is the chosen option's position, never read back out of its label."""
    options = [f"mean of {axis}s"] + [f"{axis} {h + 1}" for h in range(count)]
    keep_valid(key, options)
    pick = (where.radio(label, options, horizontal=True, key=key) if radio
            else where.selectbox(label, options, key=key))
    position = options.index(pick)
    return None if position == 0 else position - 1


def documents_count(where, key: str, total: int) -> int:
    """How many documents of a split a split-level computation reads (at most 100 by default)."""
    return int(where.number_input("Documents", min(10, total), total, min(100, total), step=10,
                                  key=f"{key}_documents"))


def asked_for(where, key: str, label: str, asked: tuple) -> bool:
    """True once ``label``'s button was clicked for ``asked`` (the settings of the computation), and
    on every later rerun while they stay the same: a split-level result stays on the page."""
    if not (where.button(label, key=f"{key}_go") or st.session_state.get(f"{key}_shown") == asked):
        return False
    st.session_state[f"{key}_shown"] = asked
    return True
