"""Streamlit glue shared by the pages: where checkpoints live, cached loading, cached explaining.

Kept apart from ``viz`` (which never imports Streamlit) so figures stay usable in notebooks.
"""
from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from .checkpoint import CheckpointError, Classifier, list_checkpoints, load_classifier
from .data import BUILTIN, DataError, sample_documents
from .explain import Explanation, explain

ROOT = Path(__file__).resolve().parent.parent


def checkpoint_root() -> Path:
    """``$HIERATTN_CHECKPOINTS`` when set (tests use it), else ``checkpoints/`` beside app.py."""
    return Path(os.environ.get("HIERATTN_CHECKPOINTS", ROOT / "checkpoints"))


def _stamp(path: Path) -> float:
    return max((f.stat().st_mtime for f in path.iterdir()), default=0.0)


def available_checkpoints() -> dict[str, Path]:
    return {p.name: p for p in list_checkpoints(checkpoint_root())}


@st.cache_resource(max_entries=8, show_spinner="Loading model…")
def _load(path: str, stamp: float) -> Classifier:  # stamp: reload when the files change
    return load_classifier(path)


def load(path: Path) -> Classifier:
    """The loaded classifier (eval mode, shared read-only across sessions); raises CheckpointError."""
    return _load(str(path), _stamp(path))


@st.cache_data(max_entries=64, show_spinner="Reading the document…")
def _explain(path: str, stamp: float, text: str) -> Explanation:
    return explain(_load(path, stamp), text)


def explain_cached(path: Path, text: str) -> Explanation:
    return _explain(str(path), _stamp(path), text)


@st.cache_data(show_spinner=False)
def samples(dataset: str | None) -> list[tuple[str, str, str]]:
    """(data set, label, text) samples; every built-in data set, the checkpoint's own first."""
    names = ([dataset] if dataset in BUILTIN else []) + [n for n in BUILTIN if n != dataset]
    out = []
    for name in names:
        try:
            out += [(name, label, text) for label, text in sample_documents(name, per_class=2)]
        except DataError:
            continue
    return out


__all__ = ["CheckpointError", "available_checkpoints", "checkpoint_root", "explain_cached", "load", "samples"]
