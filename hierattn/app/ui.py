"""Streamlit glue shared by the pages: where checkpoints live, cached loading, cached explaining.

Kept apart from ``viz`` (which never imports Streamlit) so figures stay usable in notebooks.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import streamlit as st

from hierattn import viz
from hierattn.analysis.explain import Explanation, explain, head_axis
from hierattn.checkpoint import CheckpointError, Classifier, checkpoint_root, list_checkpoints, load_classifier
from hierattn.data.builtin import BUILTIN, sample_documents
from hierattn.data.dataset import DataError


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


def _stamp(path: Path) -> float:
    return max((f.stat().st_mtime for f in path.iterdir()), default=0.0)


def available_checkpoints() -> dict[str, Path]:
    return {p.name: p for p in list_checkpoints(checkpoint_root())}


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


SAMPLE_PROMPT = "— write or paste your own —"


def document_input(dataset: str | None, sample_key: str, document_key: str, height: int, placeholder: str,
                   corpus: dict | None = None) -> str:
    """A sample picker (test-split documents, the model's data set first: for a model trained on
    a local corpus, its test file's) above a text box that holds the document; the first visit
    shows the first sample, not an empty page. Returns the text."""
    docs = (corpus_samples(dataset, json.dumps(corpus, sort_keys=True)) if corpus else []) + samples(dataset)
    options = [SAMPLE_PROMPT] + [f"{ds} · {label} · {' '.join(text.split())[:70]}…" for ds, label, text in docs]

    def use_sample():
        i = options.index(st.session_state[sample_key])
        if i:
            st.session_state[document_key] = docs[i - 1][2]

    def own_text():
        st.session_state[sample_key] = SAMPLE_PROMPT  # the box no longer holds the chosen sample

    if document_key not in st.session_state and docs:
        st.session_state[document_key] = docs[0][2]
        st.session_state[sample_key] = options[1]
    st.selectbox("Sample document (test split)", options, key=sample_key, on_change=use_sample)
    return st.text_area("Document", key=document_key, height=height, on_change=own_text, placeholder=placeholder)


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


@st.cache_data(show_spinner=False, max_entries=16)
def corpus_samples(dataset: str, settings: str) -> list[tuple[str, str, str]]:
    """(data set, label, text) from the test file of the local corpus a checkpoint was trained on;
    none when the files are gone or unreadable (the built-in samples remain)."""
    from hierattn.data.corpora import from_settings, test_samples

    try:
        return [(dataset, label, text) for label, text in test_samples(from_settings(dataset, json.loads(settings)))]
    except (DataError, OSError, KeyError, ValueError):
        return []


@st.cache_resource
def job_manager():
    """The training jobs of this app process, shared by every session."""
    from hierattn.training.jobs import JobManager

    return JobManager()


# -- the Train page -------------------------------------------------------------------------------
def duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


@st.cache_resource(show_spinner="Reading the data set…")
def builtin_dataset(name: str):
    from hierattn.data.builtin import load_builtin

    return load_builtin(name)


@st.cache_data(max_entries=4, show_spinner="Reading the file…")
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
    from hierattn.training.loop import DATASET_TEXT

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
    from hierattn.checkpoint import best_device
    from hierattn.training.loop import hardware

    device = best_device()
    return f"{'CUDA' if device.type == 'cuda' else 'CPU'} ({hardware()})"


# -- Compare, Statistics, Evaluation --------------------------------------------------------------
class _Task:
    """One computation running in a background thread; the page polls ``done`` and ``total``."""

    def __init__(self, compute):
        import threading

        self.done, self.total, self.result, self.error = 0, 0, None, None
        self.thread = threading.Thread(target=self._run, args=(compute,), daemon=True)

    def _run(self, compute):
        try:
            self.result = compute(self._progress)
        except Exception as exc:  # handed to the page that asked, which shows it
            self.error = exc

    def _progress(self, done: int, total: int):
        self.done, self.total = done, total

    @property
    def finished(self) -> bool:
        return not self.thread.is_alive()


class _ResultStore:
    """Results of long computations over a split, shared by every session and keyed by everything
    they depend on (checkpoint files' time stamp included); the oldest are dropped beyond
    ``capacity``. Each runs in a background thread, so a rerun (any click) does not abort it."""

    def __init__(self, capacity: int = 32):
        import threading
        from collections import OrderedDict

        self.capacity, self.lock, self.items = capacity, threading.Lock(), OrderedDict()
        self.running: dict[tuple, _Task] = {}

    def get(self, key):
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
            return self.items.get(key)

    def task(self, key, compute) -> _Task:
        """The task computing ``key``, started if none is running."""
        with self.lock:
            task = self.running.get(key)
            if task is None:
                task = self.running[key] = _Task(compute)
                task.thread.start()
            return task

    def finish(self, key, task: _Task) -> None:
        """File a finished task's result (a failed one is dropped, so the next request retries)."""
        with self.lock:
            if self.running.get(key) is task:
                del self.running[key]
            if task.error is None:
                self.items[key] = task.result
                self.items.move_to_end(key)
                while len(self.items) > self.capacity:
                    self.items.popitem(last=False)


@st.cache_resource
def _results() -> _ResultStore:
    return _ResultStore()


@st.fragment(run_every=1.0)
def _watch(key: tuple, label: str):
    task = _results().running.get(key)
    if task is None or task.finished:
        st.rerun()  # the whole page, which now finds the result
    fraction = task.done / task.total if task.total else 0.0
    label = viz.md_text(label)  # names a checkpoint and a data set: shown as typed
    st.progress(fraction, text=f"{label} {task.done:,} / {task.total:,} documents" if task.total else label)


def computed(key: tuple, compute, label: str):
    """The result of ``compute(progress)`` for ``key``, computed once for the whole app in a
    background thread; ``progress(done, total)`` is what the library functions call after each
    batch. While it runs: a progress bar here, and None (the page skips what depends on it).
    An exception raised by ``compute`` is raised here, once; the next call tries again."""
    store = _results()
    value = store.get(key)
    if value is not None:
        return value
    task = store.task(key, compute)
    if task.finished:
        store.finish(key, task)
        if task.error is not None:
            raise task.error
        return task.result
    _watch(key, label)
    return None


def is_computed(key: tuple) -> bool:
    return _results().get(key) is not None


def result(key: tuple):
    """A computed result, or None."""
    return _results().get(key)


def is_running(key: tuple) -> bool:
    return key in _results().running


def checkpoint_key(path: Path) -> tuple[str, float]:
    """What a result computed from a checkpoint depends on: its path and its files' time stamp."""
    return str(path), _stamp(path)


CORPUS_DOCUMENTS = 20_000  # of a local corpus's test file, read for the Dataset statistics page


@st.cache_resource(max_entries=8, show_spinner=False)  # every rerun of Statistics asks; shared, read-only
def split_part(dataset_name: str, split: str, corpus: dict | None = None) -> tuple[list[str], list[str], list[int]]:
    """(texts, true class names, indices) of one split of a built-in data set; with ``corpus``
    (a checkpoint's ``metrics["corpus"]``), the first ``CORPUS_DOCUMENTS`` of its test file."""
    if corpus is not None:
        texts, names = _corpus_test_part(dataset_name, json.dumps(corpus, sort_keys=True))
        return texts, names, list(range(len(texts)))
    from hierattn.data.split import stratified_split

    ds = builtin_dataset(dataset_name)
    indices = stratified_split(ds.labels)[split]
    return [ds.texts[i] for i in indices], [ds.label_names[ds.labels[i]] for i in indices], indices


@st.cache_data(show_spinner="Reading the corpus's test file…", max_entries=4)
def _corpus_test_part(dataset_name: str, settings: str) -> tuple[list[str], list[str]]:
    from hierattn.data.corpora import from_settings, test_documents

    try:
        return test_documents(from_settings(dataset_name, json.loads(settings)), CORPUS_DOCUMENTS)
    except (DataError, OSError, KeyError, ValueError):
        return [], []


def corpus_with_test_file(classifier: Classifier) -> dict | None:
    """The local corpus a checkpoint was trained on, when its test file is still there to read."""
    corpus = classifier.metrics.get("corpus")
    if not corpus or "test" not in corpus.get("files", {}):
        return None
    return corpus if split_part(classifier.dataset, "test", corpus)[0] else None


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


EXPLORE_REQUEST = "explore_request"


def open_in_explore(checkpoint: str, text: str) -> None:
    """Hand a checkpoint and a document to the Explore page and go there."""
    st.session_state[EXPLORE_REQUEST] = {"checkpoint": checkpoint, "text": text}
    st.switch_page("pages/explore.py")


def take_explore_request() -> dict | None:
    """The request another page left for Explore (once)."""
    return st.session_state.pop(EXPLORE_REQUEST, None)


__all__ = ["head_axis", "job_manager", "CheckpointError", "available_checkpoints", "checkpoint_root", "explain_cached", "load", "samples"]


def chart(fig, name: str, container=None, key: str | None = None, collect: dict | None = None) -> None:
    """A plotly figure with an Export popover under it: PNG, SVG and standalone HTML, each drawn
    only when its button is clicked. ``collect``: a dict that gathers the page's figures by name
    (for the one-click report)."""
    from hierattn.viz import export

    where = container or st
    where.plotly_chart(fig, width="stretch", key=key)
    if collect is not None:
        collect[name] = fig
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-").lower() or "figure"
    with where.popover("Export", icon=":material/download:"):
        for fmt, mime in (("png", "image/png"), ("svg", "image/svg+xml"), ("html", "text/html")):
            st.download_button(fmt.upper(), lambda fmt=fmt: export.figure_bytes(fig, fmt), f"{slug}.{fmt}", mime,
                               key=f"export_{key or slug}_{fmt}", on_click="ignore")


# ---- shareable views: the Explore state that matters, mirrored in the address bar -----------
PASTED = "pasted_documents"  # session_state: short hash -> pasted text, for links within the session
# every page's view parameters: a page writes its own and drops the others', keeping the rest (a job id)
VIEW_PARAMS = {"model", "sample", "doc", "head", "scale", "level", "branch", "selfhead", "sentence", "a", "b"}
VIEW_KEYS = {"head": "target_head", "scale": "shade_scale", "level": "self_level", "selfhead": "self_head"}  # URL -> key


def document_id(text: str, dataset: str | None) -> tuple[str, str]:
    """("sample", "<data set>:<i>") for a built-in sample (any session can open it), else
    ("doc", <12-hex hash>), the text kept in this session so a link reopens it here."""
    import hashlib

    for name, _, sample in samples(dataset):
        if sample == text:
            same = [t for n, _, t in samples(name) if n == name]
            return "sample", f"{name}:{same.index(text)}"
    digest = hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()[:12]
    st.session_state.setdefault(PASTED, {})[digest] = text
    return "doc", digest


def document_from_id(kind: str, value: str) -> str | None:
    if kind == "sample":
        name, _, index = value.partition(":")
        docs = [t for n, _, t in samples(name) if n == name]
        return docs[int(index)] if index.isdigit() and int(index) < len(docs) else None
    return st.session_state.get(PASTED, {}).get(value)


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
                problems.append("the linked document is not here (a pasted document is kept only in the browser "
                                "session that pasted it: paste it again)" if kind == "doc" else
                                f"there is no sample {viz.md_code(params[kind])}")
            else:
                st.session_state[document_key] = text
                st.session_state[sample_key] = SAMPLE_PROMPT
    for name, key in widgets.items():
        if name in params:
            st.session_state[key] = params[name]
    if document_key == "document":  # Explore's widgets whose keys depend on the document
        for name in ("branch", "sentence"):
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


def keep_valid(key: str, options) -> None:
    """Forget a widget value (from a link, or from another model) that is not among ``options``."""
    if key in st.session_state and st.session_state[key] not in list(options):
        del st.session_state[key]


def table_downloads(frame, stem: str, key: str, container=None) -> None:
    """A table's CSV (formula cells neutralised) and JSON (one object per row), built on click."""
    from hierattn.data.formats import csv_bytes

    where = container or st
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", stem).strip("-").lower() or "table"
    with where.popover("Download table", icon=":material/table:"):
        st.download_button("CSV", lambda: csv_bytes(frame), f"{slug}.csv", "text/csv", key=f"{key}_csv",
                           on_click="ignore")
        st.download_button("JSON", lambda: frame.to_json(orient="records", force_ascii=False, indent=1).encode(),
                           f"{slug}.json", "application/json", key=f"{key}_json", on_click="ignore")
