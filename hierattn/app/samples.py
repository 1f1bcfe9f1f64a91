"""Documents for the pages: test-split samples of the built-in data sets (and of a local corpus
a checkpoint was trained on), and whole splits for the statistics, read once per process."""
from __future__ import annotations

import json

import streamlit as st

from hierattn.checkpoint.classifier import Classifier
from hierattn.checkpoint.reading import read_heldout
from hierattn.data.builtin import BUILTIN, sample_documents
from hierattn.data.dataset import DataError
from hierattn.home import checkpoint_root


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
    from hierattn.data.corpora import corpus_roots, from_settings, test_samples

    try:
        corpus = from_settings(dataset, json.loads(settings), corpus_roots(checkpoint_root()))
        return [(dataset, label, text) for label, text in test_samples(corpus)]
    except (DataError, OSError, KeyError, ValueError):
        return []


@st.cache_resource(show_spinner="Reading the data set…")
def builtin_dataset(name: str):
    from hierattn.data.builtin import load_builtin

    return load_builtin(name)


CORPUS_DOCUMENTS = 20_000  # of a local corpus's test file, read for the Dataset statistics page


@st.cache_resource(max_entries=8, show_spinner=False)  # every rerun of Statistics asks; shared, read-only
def split_part(dataset_name: str, split: str, corpus: dict | None = None,
               own: str | None = None) -> tuple[list[str], list[str], list[int]]:
    """(texts, true class names, indices) of one split of a built-in data set; with ``corpus``
    (a checkpoint's ``metrics["corpus"]``), the first ``CORPUS_DOCUMENTS`` of its test file; with
    ``own`` (a checkpoint's folder), the documents of the split it kept of its own data set."""
    if own is not None:
        rows = read_heldout(own).get(split, [])
        return [t for t, _ in rows], [label for _, label in rows], list(range(len(rows)))
    if corpus is not None:
        texts, names = _corpus_test_part(dataset_name, json.dumps(corpus, sort_keys=True))
        return texts, names, list(range(len(texts)))
    from hierattn.data.split import stratified_split

    ds = builtin_dataset(dataset_name)
    indices = stratified_split(ds.labels)[split]
    return [ds.texts[i] for i in indices], [ds.label_names[ds.labels[i]] for i in indices], indices


@st.cache_data(show_spinner="Reading the corpus's test file…", max_entries=4)
def _corpus_test_part(dataset_name: str, settings: str) -> tuple[list[str], list[str]]:
    from hierattn.data.corpora import corpus_roots, from_settings, test_documents

    try:
        corpus = from_settings(dataset_name, json.loads(settings), corpus_roots(checkpoint_root()))
        return test_documents(corpus, CORPUS_DOCUMENTS)
    except (DataError, OSError, KeyError, ValueError):
        return [], []


def corpus_with_test_file(classifier: Classifier) -> dict | None:
    """The local corpus a checkpoint was trained on, when its test file is still there to read."""
    corpus = classifier.metrics.get("corpus")
    if not corpus or "test" not in corpus.get("files", {}):
        return None
    return corpus if split_part(classifier.dataset, "test", corpus)[0] else None


OWN = "held out with the model"  # how the pages name a checkpoint's own held-out documents


def own_name(classifier: Classifier) -> str:
    """The data set picker's name for the documents a checkpoint keeps of its own data set."""
    return f"{classifier.dataset or classifier.name} ({OWN})"


@st.cache_data(max_entries=16, show_spinner=False)
def _heldout(path: str, stamp: float) -> tuple[dict[str, list[tuple[str, str]]], bool]:
    """The kept documents, and whether they are their visitor's own (``"private": true``)."""
    from pathlib import Path

    from hierattn.data.files import read_bytes
    from hierattn.limits import JSON_MB

    try:
        private = json.loads(read_bytes(Path(path) / "heldout.json", JSON_MB)).get("private") is True
    except (OSError, ValueError, AttributeError, RecursionError):
        private = True  # unreadable: shown to no one
    return read_heldout(path), private


def heldout(path) -> dict[str, list[tuple[str, str]]]:
    """{split: [(text, label), ...]} kept with a checkpoint trained on your own data ({} for others).
    A Train-page run's documents are its visitor's (``"private": true``, unless they shared them):
    another session gets {} (a visitor's patient records were offered in everyone's Explore)."""
    from pathlib import Path

    folder = Path(path)
    kept = folder / "heldout.json"
    if not kept.is_file():
        return {}
    rows, private = _heldout(str(folder), kept.stat().st_mtime)
    if private:
        from hierattn.app.train_form import job_manager
        from hierattn.app.visitors import visitor

        if not job_manager().made_by(folder, visitor()):
            return {}
    return rows


def heldout_samples(path, dataset: str | None, per_class: int = 2) -> list[tuple[str, str, str]]:
    """(data set, label, text): the first ``per_class`` test documents of each class the checkpoint kept."""
    out, seen = [], {}
    for text, label in heldout(path).get("test", []):
        if seen.get(label, 0) < per_class:
            seen[label] = seen.get(label, 0) + 1
            out.append((dataset or OWN, label, text))
    return out


def heldout_dataset(path, name: str):
    """The kept documents as a data set (validation, then test) and each split's indices into it."""
    from hierattn.data.dataset import Dataset

    kept = heldout(path)
    rows = kept.get("validation", []) + kept.get("test", [])
    names = sorted({label for _, label in rows})
    dataset = Dataset(name, [t for t, _ in rows], [names.index(label) for _, label in rows], names)
    first = len(kept.get("validation", []))
    return dataset, {"validation": list(range(first)), "test": list(range(first, len(rows)))}
