"""Shareable views: the state of a page that matters, mirrored in the address bar, and documents
handed from one page to another."""
from __future__ import annotations

import streamlit as st

from hierattn import viz
from hierattn.app import documents
from hierattn.app.samples import samples
from hierattn.app.widgets import SAMPLE_PROMPT
from hierattn.data.builtin import BUILTIN
from hierattn.limits import KEPT_DOCUMENT_DAYS, KEPT_DOCUMENTS

PASTED = "pasted_documents"  # session_state: short hash -> pasted text, for links within the session
# every page's view parameters: a page writes its own and drops the others', keeping the rest (a job id)
PASTES_PER_SESSION = 8  # distinct pasted documents a session holds in memory
VIEW_PARAMS = {"model", "sample", "doc", "head", "scale", "level", "branch", "selfhead", "sentence", "layer", "a", "b",
               "data", "split"}
VIEW_KEYS = {"head": "target_head", "scale": "shade_scale", "level": "self_level",
             "selfhead": "self_head"}  # URL -> key


def document_id(text: str, dataset: str | None) -> tuple[str, str]:
    """("sample", "<data set>:<i>") for a built-in sample, else ("doc", <its 32-hex key>), the text
    kept on the server (``documents``) and in this session, so that a refresh, a shared link or
    another session reopens it."""
    for name, _, sample in samples(dataset):
        if sample == text:
            same = [t for n, _, t in samples(name) if n == name]
            return "sample", f"{name}:{same.index(text)}"
    from hierattn.app.visitors import visitor

    pasted = st.session_state.setdefault(PASTED, {})
    digest = next((key for key, kept in pasted.items() if kept == text), None)
    if digest is None:  # kept on the server once per session, not on every rerun of the page
        digest = documents.keep(text, visitor()) or documents.link_key(text)
        pasted[digest] = text
        while len(pasted) > PASTES_PER_SESSION:  # the older ones stay on disk (``documents``), not in memory
            pasted.pop(next(iter(pasted)))
    return "doc", digest


def document_from_id(kind: str, value: str) -> str | None:
    if kind == "sample":  # "<built-in data set>:<index>", anything else from the address bar is no sample
        name, _, index = value.partition(":")
        if name not in BUILTIN or not index.isdigit() or len(index) > 6:
            return None
        docs = [t for n, _, t in samples(name) if n == name]
        return docs[int(index)] if int(index) < len(docs) else None
    return st.session_state.get(PASTED, {}).get(value) or documents.find(value)


def apply_view_from_url(checkpoints: dict, models: dict[str, str] | None = None, document_key: str = "document",
                        sample_key: str = "sample", widgets: dict[str, str] | None = None) -> str | None:
    """On a session's first visit to a page, set its widgets from ``st.query_params``; returns a
    message when the link cannot be followed in full (the caller shows it). ``models``: URL
    parameter -> checkpoint picker key (Explore: ``model``; Compare: ``a`` and ``b``);
    ``widgets``: URL parameter -> widget key."""
    models = {"model": "model"} if models is None else models
    widgets = VIEW_KEYS if widgets is None else widgets
    flag = f"_view_applied_{document_key}"
    if st.session_state.get(flag):
        return None
    st.session_state[flag] = True
    params = st.query_params
    problems = []
    for param, key in models.items():
        if param in params:
            if params[param] in checkpoints:
                st.session_state[key] = params[param]
            else:
                problems.append(f"there is no checkpoint {viz.md_code(params[param])} here")
    for kind in ("sample", "doc"):
        if kind in params:
            text = document_from_id(kind, params[kind])
            if text is None:
                problems.append("the linked document is no longer kept on this server (pasted documents are kept "
                                f"for {KEPT_DOCUMENT_DAYS.value:g} days after their last use, the most recent "
                                f"{KEPT_DOCUMENTS.value:,}): paste it again" if kind == "doc" else
                                f"there is no sample {viz.md_code(params[kind])}")
            else:
                st.session_state[document_key] = text
                st.session_state[sample_key] = SAMPLE_PROMPT
    for name, key in widgets.items():
        if name in params:
            st.session_state[key] = params[name]
    if document_key == "document":  # Explore's widgets whose keys depend on the document
        for name in ("branch", "sentence", "layer"):
            if name in params:
                st.session_state[f"_pending_{name}"] = params[name]
    return ("This link could not be followed in full: " + "; ".join(problems) + ".") if problems else None


def pending_view(name: str):
    """A value from the link for a widget whose key is only known later (it depends on the document)."""
    return st.session_state.pop(f"_pending_{name}", None)


def mirror_view(view: dict) -> str:
    """Write ``view`` (None values left out) to the address bar; returns the full link."""
    from urllib.parse import urlencode

    clean = {k: str(v) for k, v in view.items() if v is not None}
    # parameters that are not views (the Train page's job id) stay; view parameters are this page's
    others = {k: v for k, v in st.query_params.to_dict().items() if k not in VIEW_PARAMS}
    if st.query_params.to_dict() != {**others, **clean}:
        st.query_params.from_dict({**others, **clean})
    base = (st.context.url or "").split("?")[0]
    return f"{base}?{urlencode(clean)}"


EXPLORE_REQUEST = "explore_request"


def open_in_explore(checkpoint: str, text: str) -> None:
    """Hand a checkpoint and a document to the Explore page and go there."""
    st.session_state[EXPLORE_REQUEST] = {"checkpoint": checkpoint, "text": text}
    st.switch_page("pages/explore.py")


def take_explore_request(checkpoints: dict) -> None:
    """Open the checkpoint and document another page left for Explore (once)."""
    request = st.session_state.pop(EXPLORE_REQUEST, None)
    if request and request["checkpoint"] in checkpoints:
        st.session_state.model = request["checkpoint"]
        st.session_state.document = request["text"]
        st.session_state.sample = SAMPLE_PROMPT
