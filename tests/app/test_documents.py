"""Pasted documents kept by content for links (issue 30): bounded by count, size and age, read
back only by a key, written whole."""
import os
import time

import pytest

from hierattn.app import documents
from hierattn.app.widgets import document_key


@pytest.fixture
def kept(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERATTN_DOCUMENTS", str(tmp_path / "kept"))
    return tmp_path / "kept"


def _keep(text: str) -> str:
    key = document_key(text)
    assert documents.keep(text, key)
    return key


def test_a_kept_document_is_found_by_its_key(kept):
    key = _keep("Ünïcode text — with an emoji 🙂 and <b>markup</b>.")
    assert documents.find(key) == "Ünïcode text — with an emoji 🙂 and <b>markup</b>."
    assert documents.find("0" * 12) is None
    assert not list(kept.glob("*.part"))  # written whole, nothing left over


@pytest.mark.parametrize("key", ["../../etc/passwd", "ABCDEF012345", "0123", "0123456789abc", "/tmp/x"])
def test_a_key_is_never_a_path(kept, key):
    assert documents.find(key) is None and not documents.keep("text", key)


def test_the_oldest_go_beyond_the_count(kept, monkeypatch):
    monkeypatch.setenv("HIERATTN_KEPT_DOCUMENTS", "3")
    keys = []
    for i in range(5):
        keys.append(_keep(f"document {i}"))
        os.utime(kept / f"{keys[-1]}.txt", (time.time() - 100 + i, time.time() - 100 + i))  # in order of use
    assert [documents.find(k) is not None for k in keys] == [False, False, True, True, True]


def test_the_oldest_go_beyond_the_total_size(kept, monkeypatch):
    monkeypatch.setenv("HIERATTN_KEPT_DOCUMENTS_MB", "0.01")  # 10 KB
    first = _keep("a" * 6000)
    os.utime(kept / f"{first}.txt", (time.time() - 50, time.time() - 50))
    second = _keep("b" * 6000)
    assert documents.find(first) is None and documents.find(second) == "b" * 6000


def test_a_document_too_long_to_keep_is_not_kept(kept, monkeypatch):
    monkeypatch.setenv("HIERATTN_KEPT_DOCUMENT_KB", "1")
    text = "word " * 300  # 1.5 KB
    assert not documents.keepable(text) and not documents.keep(text, document_key(text))


def test_an_old_document_is_not_found(kept, monkeypatch):
    key = _keep("an old document")
    old = time.time() - 31 * 86_400
    os.utime(kept / f"{key}.txt", (old, old))
    assert documents.find(key) is None
