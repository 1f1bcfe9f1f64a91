"""File formats read as rows: CSV / TSV with a header, JSONL; the bytes of an upload decoded
(UTF-8, UTF-16) or refused; and tables written back as CSV safe to open in a spreadsheet."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from hierattn.data.dataset import DataError

MAX_UPLOAD_MB = 50  # also Streamlit's maxUploadSize in .streamlit/config.toml
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
