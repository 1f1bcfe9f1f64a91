"""File formats read as rows: CSV / TSV with a header, JSONL; the bytes of an upload decoded
(UTF-8, UTF-16) or refused; and tables written back as CSV safe to open in a spreadsheet."""
from __future__ import annotations

import csv
import html
import io
import itertools
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from hierattn.data.dataset import DataError
from hierattn.limits import UPLOAD_COLUMNS, UPLOAD_HEADER_KB, UPLOAD_MB, UPLOAD_ROWS, UPLOAD_TEXT_MB, LimitExceeded

# One limit for every reader of tables (uploads and local corpora alike): long fields are real
# (Yahoo! Answers' pass the csv module's 128 KB default), and setting it here, where every table is
# read, means no upload passes or fails by what another module imported first.
csv.field_size_limit(2**31 - 1)

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


def table_rows(stream: Iterable[str], name: str, kind: str) -> Iterator[tuple[int, dict]]:
    """The rows of a table read one at a time, each with its line number: ``kind`` ``csv`` or ``tsv``
    (a header row names the fields) or ``jsonl`` (one JSON object per line; blank lines skipped).
    Uploads and local corpora both read through here, so the same file passes or fails the same
    way: a CSV row with more or fewer fields than its header, a line that is not a JSON object and
    a malformed CSV are refused, with the file and line named."""
    most = UPLOAD_COLUMNS.value
    if kind == "jsonl":
        # distinct keys across every line, not per line: 1,000 lines of 998 keys each read as 998,002
        # columns and kept a core busy 9 minutes after the visitor left
        keys: set[str] = set()
        for n, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{name} line {n} is not JSON: {exc.msg}") from None
            except RecursionError:
                raise DataError(f"{name} line {n} is nested too deeply to read") from None
            if not isinstance(row, dict):
                raise DataError(f"{name} line {n} is not a JSON object with named fields")
            if len(row) > most:
                raise DataError(UPLOAD_COLUMNS.message(len(row), f"{name} line {n}", "the number of fields"))
            keys.update(row)
            if len(keys) > most:
                raise DataError(UPLOAD_COLUMNS.message(f"more than {most:,}", f"{name} up to line {n}",
                                                       "the number of distinct fields"))
            yield n, row
        return
    separator = "\t" if kind == "tsv" else ","
    stream = iter(stream)
    header = next(stream, "")
    # Judged on the raw line, before the csv module builds a list of its fields: a 3-million-column
    # header took over 10 GB once it was split and made into every row's keys.
    if len(header) > UPLOAD_HEADER_KB.value * 1024:
        raise DataError(UPLOAD_HEADER_KB.message(len(header) / 1024, name, "its header line"))
    if header.count(separator) + 1 > most:
        raise DataError(UPLOAD_COLUMNS.message(header.count(separator) + 1, name))
    reader = csv.DictReader(itertools.chain([header], stream), delimiter=separator)
    try:
        for row in reader:
            if None in row or None in row.values():  # DictReader's marks for too many / too few fields
                fields = sum(v is not None for k, v in row.items() if k is not None) + len(row.get(None) or [])
                raise DataError(f"{name} line {reader.line_num} has {fields} field{'' if fields == 1 else 's'}; "
                                f"the header has {len(reader.fieldnames)} (a missing or extra separator, or an "
                                f"unquoted {'tab' if kind == 'tsv' else 'comma'})")
            yield reader.line_num, row
    except csv.Error as exc:
        raise DataError(f"{name} is not a valid {kind.upper()} file ({exc})") from None


# An HTML tag or comment, as web-scraped reviews carry them ("<br />", "<i>...</i>"); a "<" that
# starts no tag (a maths sign, "<3") is left alone.
_MARKUP = re.compile(r"<!--.*?-->|</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>", re.S)


def decode_markup(text: str) -> str:
    """``text`` with its HTML tags replaced by a space and its entities decoded, once (so
    "I&#039;ve" reads "I've", not the words "i039ve"; "&amp;lt;" becomes "&lt;", as typed)."""
    if "<" in text:
        text = _MARKUP.sub(" ", text)
    return html.unescape(text) if "&" in text else text


def unwrap_quotes(text: str) -> str:
    """``text`` without one pair of double quotes around all of it. Review dumps (UCI's drug reviews
    among them) store each review quoted inside its already-quoted field, so after the CSV or TSV
    reader removes the field's quotes the review still starts and ends with one; shown as a sample or
    a slide's subtitle it read ``"I've tried...``."""
    stripped = text.strip()
    # only with no other quote inside: '"Hello" she said "bye"' is a text that starts and ends quoted
    if len(stripped) >= 2 and stripped[0] == stripped[-1] == '"' and '"' not in stripped[1:-1]:
        return stripped[1:-1]
    return text


def labelled(rows: Iterable[tuple[int, dict]], text_column: str, label_column: str, name: str,
             unit: str = "line") -> Iterator[tuple[str, str]]:
    """(text, label) of each numbered row (``unit`` names the numbers in messages). A row without
    either field is refused; a row whose text or label is empty is skipped (it can be neither
    classified nor learnt from). Labels are stripped of surrounding space; texts and labels have
    their HTML markup and entities decoded (``decode_markup``); a text quoted whole loses the quotes
    (``unwrap_quotes``)."""
    for n, row in rows:
        missing = [c for c in (text_column, label_column) if c not in row]
        if missing:
            raise DataError(f"{name} {unit} {n} has no field {' or '.join(repr(c) for c in missing)}")
        text = unwrap_quotes(decode_markup(str(row[text_column] or "")))
        label = decode_markup(str(row[label_column] or "")).strip()
        if text.strip() and label:
            yield text, label


def read_rows(raw: bytes, name: str) -> list[dict]:
    """An uploaded CSV / TSV / JSONL file (``name`` gives the format) as row dicts, within the
    upload limits (``hierattn.limits``: its size, its decoded text's size, its rows), decoded by
    ``decode_text``, read by ``table_rows``."""
    try:
        UPLOAD_MB.check(len(raw) / 2**20, name)
    except LimitExceeded as exc:
        raise DataError(str(exc)) from None
    suffix = Path(name).suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise DataError(f"{name}: expected a .csv, .tsv or .jsonl file")
    content = decode_text(raw, name)
    del raw
    limit = UPLOAD_ROWS.value
    try:
        UPLOAD_TEXT_MB.check(len(content) / 2**20, name)  # characters: UTF-16 or compressed-looking text grows
        rows = []
        for _, row in table_rows(io.StringIO(content, newline=""), name, suffix[1:]):
            rows.append(row)
            if len(rows) > limit:  # stop reading: the rest would be held for nothing
                raise LimitExceeded(UPLOAD_ROWS.message(f"more than {limit:,}", name))
    except LimitExceeded as exc:
        raise DataError(str(exc)) from None
    if not rows:
        raise DataError(f"{name} has no rows (only a header, or nothing)")
    return rows


def columns(rows: list[dict]) -> list[str]:
    """Column names in file order (a CSV's header; a JSONL file's keys, first seen first)."""
    seen = {}
    for r in rows[:1000]:
        seen.update(dict.fromkeys(k for k in r if k is not None))
    return list(seen)


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
