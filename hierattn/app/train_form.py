"""The Train page's helpers: reading an upload, guessing its columns, the defaults and run name
it suggests, and the process-wide job manager."""
from __future__ import annotations

import re

import streamlit as st

from hierattn.app.loading import available_checkpoints
from hierattn.app.process import process_wide


@process_wide  # holds the cap on runs: no client's clear_cache may drop it
def job_manager():
    """The training jobs of this app process, shared by every session; a run's owner is the visitor
    (``app.visitors``: a browser) who started it."""
    from hierattn.app.run_policy import JobManager
    from hierattn.app.visitors import present

    return JobManager(present=present)


def run_notice(job, who: str | None) -> str:
    """What the Train page says of a run its address names: yours, or another visitor's to watch."""
    from hierattn import viz

    if who is not None and who in job_manager().owners(job):
        return f"Your run {viz.md_code(job.name)} is {job.status}; it is shown at the bottom of this page."
    return (f"The run {viz.md_code(job.name)} of another visitor is {job.status}; it is shown at the bottom of this "
            "page to watch. Only the browser that started it can cancel it or replace its checkpoint.")


def duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


# One parsed upload, for the reruns of the page that uploaded it; it goes after 10 minutes, so a
# finished session's file does not stay in the server's memory (each is up to the upload limit).
@st.cache_data(max_entries=1, ttl=600, show_spinner="Reading the file…")
def parse_upload(raw: bytes, name: str) -> list[dict]:
    from hierattn.data.formats import read_rows

    return read_rows(raw, name)


def preview(rows: list[dict], columns: list[str], n: int = 10):
    import pandas as pd

    return pd.DataFrame([{c: r.get(c) for c in columns} for r in rows[:n]])


def guess_text_column(rows: list[dict], columns: list[str]) -> str:
    """A column named like text, else the one with the longest values."""
    for c in columns:
        if c.lower() in ("text", "document", "body", "content", "review", "tweet"):
            return c
    return max(columns, key=lambda c: sum(len(str(r.get(c) or "")) for r in rows[:200]))


def guess_label_column(rows: list[dict], columns: list[str], text_column: str) -> str:
    """A column named like a label, else the one with the fewest distinct values."""
    others = [c for c in columns if c != text_column] or columns
    for c in others:
        if c.lower() in ("label", "labels", "class", "category", "sentiment", "topic", "target"):
            return c
    return min(others, key=lambda c: len({str(r.get(c)) for r in rows[:2000]}))


def dataset_from_upload(rows: list[dict], text_column: str, label_column: str, name: str):
    from pathlib import PurePath

    from hierattn.data.tables import dataset_from_rows

    return dataset_from_rows(rows, text_column, label_column, PurePath(name).stem or "upload")


def dataset_summary(dataset):
    """(a table of documents per label, the split sizes)."""
    import pandas as pd

    counts = [0] * len(dataset.label_names)
    for y in dataset.labels:
        counts[y] += 1
    return pd.DataFrame({"label": dataset.label_names, "documents": counts}), _split_sizes(tuple(dataset.labels))


@st.cache_data(max_entries=8, show_spinner=False)
def _split_sizes(labels: tuple[int, ...]) -> dict[str, int]:  # every rerun of the Train page shows them
    from hierattn.data.split import stratified_split

    return {k: len(v) for k, v in stratified_split(list(labels)).items()}


def train_defaults(dataset_name: str) -> dict:
    """Short runs by default: the page is for looking, presets are for the shipped checkpoints."""
    from hierattn.data.text import TextConfig
    from hierattn.training.presets import DATASET_TEXT

    text = DATASET_TEXT.get(dataset_name, TextConfig())
    small = dataset_name == "bbc-news"
    return {"epochs": 3, "batch_size": 16 if small else 64, "max_sentences": text.max_sentences,
            "max_words": text.max_words}


def suggest_run_name(dataset_name: str, model_type: str) -> str:
    base = re.sub(r"[^A-Za-z0-9_-]+", "-", f"{dataset_name}-{model_type}").strip("-_") or "run"
    existing = set(available_checkpoints()) | {j.name for j in job_manager().running()}
    for n in range(1, 1000):
        if f"{base}-{n}" not in existing:
            return f"{base}-{n}"
    return base


def device_label() -> str:
    from hierattn.checkpoint.classifier import best_device
    from hierattn.training.loop import hardware

    device = best_device()
    return f"{'CUDA' if device.type == 'cuda' else 'CPU'} ({hardware()})"


def share_heldout_choice(dataset) -> bool:
    """Whether the checkpoint's held-out documents (of an uploaded file) may be shown to other
    visitors: off unless ticked, and the page says which it is. A server for one person shares."""
    from hierattn.app.run_policy import single_user
    from hierattn.data.builtin import BUILTIN

    if dataset.name in BUILTIN or single_user():
        return True
    share = st.checkbox("Let other visitors see its held-out documents", key="share_heldout",
                        help="The checkpoint keeps some of your file's validation and test documents, for its "
                             "samples, Evaluation and Dataset statistics. Unticked, only this browser session "
                             "sees them; everyone sees the model itself.")
    st.caption("Your file's held-out documents will be **shown to every visitor** of this server with the model."
               if share else "Your file's held-out documents will be shown **to you only** (this browser session); "
                             "other visitors see the model, not your documents.")
    return share


def keep_going_help() -> str:
    from hierattn.limits import RUN_AWAY_SECONDS

    return (f"Otherwise the run stops {RUN_AWAY_SECONDS.value / 60:g} min after you close the tab (the best epoch so "
            "far is saved).")
