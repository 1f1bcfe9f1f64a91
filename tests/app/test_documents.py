"""Pasted documents kept for links (``hierattn.app.documents``): keys that cannot collide or be
guessed, bounded by count, size and age, a share per visitor, opened links kept longest, read back
only by a key, written whole."""
import hashlib
import os
import time

import pytest

from hierattn.app import documents


@pytest.fixture
def kept(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERATTN_DOCUMENTS", str(tmp_path / "kept"))
    monkeypatch.setattr(documents, "_written", {})
    return tmp_path / "kept"


def _keep(text: str, writer: str | None = None) -> str:
    key = documents.keep(text, writer)
    assert key is not None
    return key


def _age(kept, key: str, seconds: float) -> None:
    path = documents._path(key)
    os.utime(path, (time.time() - seconds, time.time() - seconds))


def test_a_kept_document_is_found_by_its_key(kept):
    key = _keep("Ünïcode text — with an emoji 🙂 and <b>markup</b>.")
    assert documents.find(key) == "Ünïcode text — with an emoji 🙂 and <b>markup</b>."
    assert documents.find("0" * 32) is None
    assert not list(kept.glob("*.part"))  # written whole, nothing left over
    assert _keep("Ünïcode text — with an emoji 🙂 and <b>markup</b>.") == key  # the same text, the same key


def test_a_key_is_128_bits_and_not_the_texts_plain_hash(kept, tmp_path, monkeypatch):
    """12 hex digits of a SHA-1 collided in 219 s of one core (a teacher's link opened another text),
    and anyone could test whether a known text was pasted by asking for its hash."""
    text = "the school board approved the curriculum"
    key = _keep(text)
    assert len(key) == 32 and documents.KEY.fullmatch(key)
    assert key not in (hashlib.sha1(text.encode()).hexdigest()[:32], hashlib.sha256(text.encode()).hexdigest()[:32])
    assert oct((kept / ".secret").stat().st_mode & 0o777) == "0o600"
    monkeypatch.setenv("HIERATTN_DOCUMENTS", str(tmp_path / "another-server"))
    assert documents.link_key(text) != key  # another server's secret, another key


def test_a_stored_file_is_compared_with_the_text_before_its_key_is_reused(kept):
    key = _keep("every exam is cancelled")
    documents._path(key).write_text("something else", encoding="utf-8")
    assert documents.keep("every exam is cancelled") is None  # never another text under this key


@pytest.mark.parametrize("key", ["../../etc/passwd", "ABCDEF012345" * 3, "0123", "0" * 12, "/tmp/x", ".secret"])
def test_a_key_is_never_a_path(kept, key):
    _keep("text")
    assert documents.find(key) is None


def test_the_oldest_go_beyond_the_count(kept, monkeypatch):
    monkeypatch.setenv("HIERATTN_KEPT_DOCUMENTS", "3")
    keys = []
    for i in range(5):
        keys.append(_keep(f"document {i}"))
        _age(kept, keys[-1], 100 - i)  # in order of use
    assert [documents.find(k) is not None for k in keys] == [False, False, True, True, True]


def test_the_oldest_go_beyond_the_total_size(kept, monkeypatch):
    monkeypatch.setenv("HIERATTN_KEPT_DOCUMENTS_MB", "0.01")  # 10 KB
    first = _keep("a" * 6000)
    _age(kept, first, 50)
    second = _keep("b" * 6000)
    assert documents.find(first) is None and documents.find(second) == "b" * 6000


def test_one_visitor_flooding_the_store_evicts_only_its_own(kept, monkeypatch):
    """One visitor with 2 tabs pasted 140 long documents and evicted every other visitor's links."""
    monkeypatch.setenv("HIERATTN_KEPT_DOCUMENTS", "80")  # a share of 10 each
    teacher = [_keep(f"lecture document {i}", "teacher") for i in range(5)]
    for i in range(140):
        _keep(f"flood {i} " + "x" * 100, "attacker")
    assert all(documents.find(k) is not None for k in teacher)
    assert len(list(kept.glob("*.txt"))) == 10  # the attacker's own share; the teacher's moved to opened/


def test_an_opened_link_outlives_the_unopened_ones(kept, monkeypatch):
    monkeypatch.setenv("HIERATTN_KEPT_DOCUMENTS", "3")
    shared = _keep("the link the teacher sent")
    _age(kept, shared, 1000)
    assert documents.find(shared) is not None  # a student opened it
    _age(kept, shared, 1000)
    for i in range(6):
        _keep(f"a paste {i}")
    assert documents.find(shared) == "the link the teacher sent"


def test_a_document_too_long_to_keep_is_not_kept(kept, monkeypatch):
    monkeypatch.setenv("HIERATTN_KEPT_DOCUMENT_KB", "1")
    text = "word " * 300  # 1.5 KB
    assert not documents.keepable(text) and documents.keep(text) is None


def test_an_old_document_is_not_found(kept):
    key = _keep("an old document")
    _age(kept, key, 31 * 86_400)
    assert documents.find(key) is None
