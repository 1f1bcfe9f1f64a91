"""The papers' data sets from local files, read as streams of (text, label) records.

Formats (``FORMATS``):

- ``zhang``: the CSVs of Zhang et al. (2015), used by AG News, DBPedia, Yelp, Amazon and Yahoo!
  Answers: no header, the label first (1-based), then one to three text fields (``label,text``,
  ``label,title,text``, Yahoo's ``label,title,question,answer``). Fields are joined with a line
  break, so a title is a sentence of its own (a line break ends a sentence in ``text.py``), and
  the files' escaped line breaks (a literal backslash-n) become real ones. Label names come from
  the ``classes.txt`` beside the file (line k names label k), else they are the numbers.
- ``trec``: the TREC question-classification files (Li and Roth 2002; ``train_5500.label``,
  ``TREC_10.label``): one question per line after ``COARSE:fine``; the label is the coarse class
  (6 classes), or ``COARSE:fine`` (50) with ``fine_labels``. The files are Latin-1.
- ``csv`` / ``tsv``: a header row naming a text column and a label column (``text``, ``label`` by
  default; any other names with ``text_column`` / ``label_column``).
- ``jsonl``: one JSON object per line with those two fields.

A corpus is one file, or a directory holding a training file and a test file, which is how the
data sets are distributed (``open_corpus`` says what it looks for). Records are read one at a time,
so a file of any size streams through ``corpus_cache`` without being held in memory.
"""
from __future__ import annotations

import csv
import io
import itertools
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from hierattn.data.dataset import DataError
from hierattn.data.files import open_regular, open_text
from hierattn.data.formats import labelled, table_rows
from hierattn.limits import UPLOAD_TEXT_MB, Limit

FORMATS = ("zhang", "trec", "csv", "tsv", "jsonl")
# Files a corpus directory may hold: (format, training file, test file), first match wins.
DIRECTORY_LAYOUTS = (
    ("zhang", "train.csv", "test.csv"),  # ag_news_csv/, dbpedia_csv/, yelp_review_full_csv/, ...
    ("trec", "train_5500.label", "TREC_10.label"),
    ("csv", "train.csv", "test.csv"),
    ("tsv", "train.tsv", "test.tsv"),
    ("jsonl", "train.jsonl", "test.jsonl"),
)
_TREC_LINE = re.compile(r"^([A-Z]+):(\S+)\s+(.*)$")


@dataclass
class Corpus:
    """Where a data set's files are and how to read them.

    ``parts``: part name ("train", "test", or "all" for one file to be split 80/10/10) -> path.
    """

    name: str
    format: str
    parts: dict[str, Path]
    text_column: str = "text"
    label_column: str = "label"
    fine_labels: bool = False  # TREC: the 50 fine classes instead of the 6 coarse ones
    label_names: list[str] | None = field(default=None)  # from classes.txt, when there is one
    limit: Limit | None = None  # what a read of one of its files may take (None: a corpus the user named)

    def records(self, part: str) -> Iterator[tuple[str, str]]:
        """(text, label) of each document of ``part``, in file order, one at a time."""
        path = self.parts[part]
        reader = {"zhang": _zhang, "trec": _trec, "csv": _table, "tsv": _table, "jsonl": _table}[self.format]
        return reader(self, path)

    def settings(self) -> dict:
        """What the records depend on: the files (path, size, modification time) and the options."""
        files = {}
        for part, path in sorted(self.parts.items()):
            stat = path.stat()
            files[part] = [str(path.resolve()), stat.st_size, stat.st_mtime_ns]
        return {"format": self.format, "files": files, "text_column": self.text_column,
                "label_column": self.label_column, "fine_labels": self.fine_labels, "label_names": self.label_names}


def open_corpus(path: str | Path, format: str | None = None, text_column: str = "text",
                label_column: str = "label", fine_labels: bool = False) -> Corpus:
    """A corpus from a file or a directory. A directory holds ``train.csv`` + ``test.csv`` (Zhang
    et al.'s layout, or a headed CSV), ``train_5500.label`` + ``TREC_10.label`` (TREC), or
    ``train.tsv`` / ``train.jsonl`` with their test files. ``format`` overrides the guess."""
    path = Path(path)
    if format is not None and format not in FORMATS:
        raise DataError(f"unknown format {format!r}; formats: {', '.join(FORMATS)}")
    if path.is_dir():
        for layout, train, test in DIRECTORY_LAYOUTS:
            if format not in (None, layout) or not (path / train).is_file():
                continue
            if layout in ("zhang", "csv") and format is None:
                layout = _csv_kind(path / train, text_column)
            parts = {"train": path / train}
            if (path / test).is_file():
                parts["test"] = path / test
            else:
                parts = {"all": path / train}
            return _corpus(path.name, layout, parts, text_column, label_column, fine_labels)
        raise DataError(f"{path} holds none of the expected files: " +
                        "; ".join(f"{a} + {b} ({f})" for f, a, b in DIRECTORY_LAYOUTS))
    if not path.is_file():
        raise DataError(f"{path} does not exist")
    if format is None:
        suffix = path.suffix.lower()
        format = {".jsonl": "jsonl", ".tsv": "tsv", ".label": "trec"}.get(suffix)
        if format is None and suffix in (".csv", ".txt", ""):
            format = _csv_kind(path, text_column)
        if format is None:
            raise DataError(f"{path.name}: cannot tell the format from the name; give one of {', '.join(FORMATS)}")
    return _corpus(path.stem, format, {"all": path}, text_column, label_column, fine_labels)


def _corpus(name, format, parts, text_column, label_column, fine_labels) -> Corpus:
    corpus = Corpus(name.removesuffix("_csv"), format, parts, text_column, label_column, fine_labels)
    if format == "zhang":
        classes = next(iter(parts.values())).parent / "classes.txt"
        if classes.is_file():
            corpus.label_names = [line.strip() for line in classes.read_text().splitlines() if line.strip()]
    first = next(corpus.records(next(iter(parts))), None)  # a malformed file fails here, not an hour later
    if first is None:
        raise DataError(f"{next(iter(parts.values())).name} has no documents")
    return corpus


def _csv_kind(path: Path, text_column: str) -> str:
    """``zhang`` when the first row starts with a number and is not a header naming ``text_column``."""
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        first = next(csv.reader(f), [])
    return "csv" if text_column in first or not first or not first[0].strip().isdigit() else "zhang"


def _open_text(corpus: Corpus, path: Path, encoding: str = "utf-8"):
    """A corpus file as text: a regular file only (never a device or a pipe), within the corpus's
    limit when it has one."""
    if corpus.limit is not None:
        return open_text(path, corpus.limit, encoding)
    return io.TextIOWrapper(open_regular(path), encoding=encoding, newline="")


def _zhang(corpus: Corpus, path: Path) -> Iterator[tuple[str, str]]:
    with _open_text(corpus, path) as f:
        for line, row in enumerate(csv.reader(_decoded(f, path.name)), 1):
            if not row:
                continue
            label = row[0].strip()
            if not label.isdigit() or int(label) < 1 or len(row) < 2:
                raise DataError(f"{path.name} line {line}: expected label,text with a 1-based number first, "
                                f"got {row[:2]!r}")
            text = "\n".join(field.replace("\\n", "\n").strip() for field in row[1:] if field.strip())
            yield text, label


def _trec(corpus: Corpus, path: Path) -> Iterator[tuple[str, str]]:
    with _open_text(corpus, path, "latin-1") as f:
        for line, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            match = _TREC_LINE.match(raw.strip())
            if not match:
                raise DataError(f"{path.name} line {line}: expected 'COARSE:fine question', got {raw.strip()[:60]!r}")
            coarse, fine, question = match.groups()
            yield question, f"{coarse}:{fine}" if corpus.fine_labels else coarse


def _table(corpus: Corpus, path: Path) -> Iterator[tuple[str, str]]:
    """CSV / TSV / JSONL through the same reader as uploads (``formats.table_rows``)."""
    with _open_text(corpus, path) as f:
        rows = table_rows(_decoded(f, path.name), path.name, corpus.format)
        if corpus.format != "jsonl":
            first = next(rows, None)
            header = list(first[1]) if first else []
            missing = [c for c in (corpus.text_column, corpus.label_column) if c not in header]
            if first is not None and missing:
                raise DataError(f"{path.name} has no column named {', '.join(repr(c) for c in missing)} "
                                f"(its header: {', '.join(header)})")
            rows = itertools.chain([first] if first else [], rows)
        yield from labelled(rows, corpus.text_column, corpus.label_column, path.name)


def _decoded(f, name: str) -> Iterator[str]:
    """A text file's lines; bytes that are not UTF-8 are refused with the file and line named (as
    an upload's are), not replaced."""
    n = 0
    try:
        for n, line in enumerate(f, 1):  # noqa: B007  (n names the line that fails to decode)
            yield line
    except UnicodeDecodeError as exc:
        raise DataError(f"{name} is not UTF-8 text ({exc.reason} after line {n}); save it as UTF-8") from None


def label_order(corpus: Corpus, seen: list[str]) -> list[str]:
    """The labels' final order: Zhang's by number, the others alphabetically."""
    if corpus.format == "zhang":
        return sorted(seen, key=int)
    return sorted(seen)


def label_names(corpus: Corpus, ordered: list[str]) -> list[str]:
    """Display names: ``classes.txt`` for Zhang's numbers where it has them, else the labels."""
    if corpus.format == "zhang" and corpus.label_names:
        return [corpus.label_names[int(y) - 1] if int(y) <= len(corpus.label_names) else y for y in ordered]
    return ordered


CORPORA_VARIABLE = "HIERATTN_CORPORA"  # folders (os.pathsep between them) whose corpora the app may read


def corpus_roots(*folders: Path) -> list[Path]:
    """The folders a checkpoint's ``corpus`` entry may point into: ``folders`` (the checkpoint
    root) and those named by HIERATTN_CORPORA."""
    named = [Path(p) for p in os.environ.get(CORPORA_VARIABLE, "").split(os.pathsep) if p.strip()]
    return [Path(f).resolve() for f in (*folders, *named)]


def from_settings(name: str, settings: dict, roots: list[Path]) -> Corpus:
    """The corpus a checkpoint was trained on, from the ``corpus`` entry of its metrics: its files
    only where they lie inside one of ``roots`` (a checkpoint's JSON names any path it likes), read
    as regular files within ``limits.UPLOAD_TEXT_MB``, as an upload is."""
    parts = {}
    for part, entry in settings["files"].items():
        path = Path(entry[0]).resolve()
        if not any(path.is_relative_to(root) for root in roots):
            raise DataError(f"{name}: its corpus file {path.name} is outside the checkpoints folder and "
                            f"{CORPORA_VARIABLE}; it is not read (set {CORPORA_VARIABLE} to the folder that holds it)")
        parts[part] = path
    return Corpus(name, settings["format"], parts, settings.get("text_column", "text"),
                  settings.get("label_column", "label"), settings.get("fine_labels", False),
                  settings.get("label_names"), limit=UPLOAD_TEXT_MB)


def label_name(corpus: Corpus, label: str) -> str:
    """One label's display name (``classes.txt`` for Zhang's numbers where it has them)."""
    return label_names(corpus, [label])[0]


def test_documents(corpus: Corpus, limit: int) -> tuple[list[str], list[str]]:
    """(texts, label names) of the first ``limit`` documents of the corpus's test file."""
    texts, names = [], []
    for text, label in corpus.records("test"):
        if len(texts) == limit:
            break
        texts.append(text)
        names.append(label_name(corpus, label))
    return texts, names


def test_samples(corpus: Corpus, per_class: int = 2, scan: int = 5000) -> list[tuple[str, str]]:
    """(label name, text) of the first ``per_class`` documents of each label in the corpus's test
    file, looking at its first ``scan`` records; none for a single-file corpus, whose test split
    is drawn at training time (its first records may be training documents)."""
    if "test" not in corpus.parts:
        return []
    picked: dict[str, list[str]] = {}
    for i, (text, label) in enumerate(corpus.records("test")):
        if i >= scan:
            break
        if len(picked.setdefault(label, [])) < per_class and text.strip():
            picked[label].append(text)
    ordered = label_order(corpus, list(picked))
    return [(name, text) for label, name in zip(ordered, label_names(corpus, ordered)) for text in picked[label]]
