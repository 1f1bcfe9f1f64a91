"""Your own table (CSV / TSV / JSONL with a text and a label column) as a data set, checked
for what a stratified 80/10/10 split and a classifier need."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from hierattn.data.dataset import DataError, Dataset
from hierattn.data.files import read_bytes
from hierattn.data.formats import columns, decode_markup, labelled, read_rows
from hierattn.limits import CLASSES, UPLOAD_MB

MIN_PER_CLASS = 10  # a stratified 80/10/10 split needs a few documents of every label in each part


def dataset_from_rows(rows: list[dict], text_column: str, label_column: str, name: str) -> Dataset:
    """Validate and build a data set; the messages say what to fix."""
    if text_column == label_column:
        raise DataError("the text column and the label column must differ")
    missing = [c for c in (text_column, label_column) if c not in columns(rows)]
    if missing:
        raise DataError(f"{name} has no column named {', '.join(repr(c) for c in missing)}")
    kept = list(labelled(enumerate(rows, 1), text_column, label_column, name, unit="row"))
    if not kept:
        raise DataError(f"every row of {name} has an empty text or label")
    labels = [label for _, label in kept]
    counts = Counter(labels)
    if len(counts) < 2:
        raise DataError(f"{name} has only one label ({next(iter(counts))!r}); a classifier needs at least two")
    if CLASSES.exceeded(len(counts)):
        raise DataError(f"the label column {label_column!r}: {CLASSES.message(len(counts))}; is it a text column?")
    rare = sorted((c, n) for n, c in counts.items() if c < MIN_PER_CLASS)
    if rare:
        examples = ", ".join(f"{n!r} ({c})" for c, n in rare[:3])
        raise DataError(f"every label needs at least {MIN_PER_CLASS} documents for an 80/10/10 split; too few: "
                        f"{examples}")
    label_names = sorted(counts)
    index = {n: i for i, n in enumerate(label_names)}
    raw = (str(r.get(text_column) or "") for r in rows)
    decoded = sum(1 for text in raw if ("&" in text or "<" in text) and decode_markup(text) != text)
    return Dataset(name, [text for text, _ in kept], [index[y] for y in labels], label_names, decoded)


def load_table(path: str | Path, text_column: str = "text", label_column: str = "label") -> Dataset:
    """The user's own CSV / TSV / JSONL file with a text column and a label column."""
    path = Path(path)
    try:  # a regular file only, within the upload limit, as an upload is
        raw = read_bytes(path, UPLOAD_MB)
    except ValueError as exc:
        raise DataError(str(exc)) from None
    return dataset_from_rows(read_rows(raw, path.name), text_column, label_column, path.stem)
