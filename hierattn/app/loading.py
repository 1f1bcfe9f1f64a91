"""Checkpoints for the pages: where they are, loaded once per process and shared read-only,
explained once per document, and what a page shows when one cannot be loaded."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from hierattn import viz
from hierattn.analysis.explain import Explanation, explain
from hierattn.checkpoint import CheckpointError, Classifier, checkpoint_root, list_checkpoints, load_classifier


def _stamp(path: Path) -> float:
    return max((f.stat().st_mtime for f in path.iterdir()), default=0.0)


def available_checkpoints() -> dict[str, Path]:
    return {p.name: p for p in list_checkpoints(checkpoint_root())}


def plugin_warnings() -> None:
    """One sidebar warning per plug-in that was named or installed but could not be loaded."""
    from hierattn.models import plugin_problems

    for problem in plugin_problems():
        problem = problem[0].upper() + problem[1:]
        st.sidebar.warning(f"{viz.md_text(problem)}. The built-in models and every other checkpoint work as usual.",
                           icon=":material/extension_off:")


def checkpoints_or_stop() -> dict[str, Path]:
    """The checkpoints, or an error on the page and a stop when there are none."""
    checkpoints = available_checkpoints()
    if not checkpoints:
        st.error(f"No checkpoints found in {viz.md_code(checkpoint_root())}. Train one with "
                 "`python -m hierattn train --preset bbc-news-hcan`.")
        st.stop()
    return checkpoints


def load_or_stop(path: Path, what: str = "This checkpoint") -> Classifier:
    """The loaded checkpoint, or a clear error on the page and a stop."""
    try:
        return load(path)
    except CheckpointError as exc:
        st.error(f"{what} cannot be loaded: {viz.md_text(exc)}")
        st.stop()


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


def loadable(checkpoints: dict[str, Path]) -> dict[str, Classifier]:
    """The checkpoints that load, by name (a corrupted one is left out, not an error here)."""
    out = {}
    for name, path in checkpoints.items():
        try:
            out[name] = load(path)
        except CheckpointError:
            continue
    return out


def checkpoint_options(checkpoints: dict[str, Path]) -> dict[str, str]:
    """Picker labels: 'name · model · data set', so two checkpoints of one type stay apart."""
    out = {}
    for name, path in checkpoints.items():
        try:
            c = load(path)
            out[name] = f"{name} · {c.display_name}"
        except CheckpointError:
            out[name] = f"{name} · (cannot be loaded)"
    return out


def checkpoint_key(path: Path) -> tuple[str, float]:
    """What a result computed from a checkpoint depends on: its path and its files' time stamp."""
    return str(path), _stamp(path)
