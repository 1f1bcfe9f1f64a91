"""Pasted documents kept for links (``hierattn.app.documents``): keys that cannot collide or be
guessed, bounded by count, size and age, a share per visitor, opened links kept longest, recent
ones held whatever identities paste after them, on every worker and after a restart, read back only
by a key, written whole."""
import hashlib
import os
import sqlite3
import subprocess
import sys
import time

import pytest

from hierattn.app import documents


@pytest.fixture
def kept(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERATTN_DOCUMENTS", str(tmp_path / "kept"))
    monkeypatch.setenv("HIERATTN_RUNTIME", str(tmp_path / "runtime"))  # the app store: the visitors' shares
    return tmp_path / "kept"


PAST_THE_HOLD = 4 * 3600  # seconds: older than KEPT_DOCUMENT_HOLD_MINUTES' default of 3 hours


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
        _age(kept, keys[-1], PAST_THE_HOLD - i)  # in order of use
    assert [documents.find(k) is not None for k in keys] == [False, False, True, True, True]


def test_the_oldest_go_beyond_the_total_size(kept, monkeypatch):
    monkeypatch.setenv("HIERATTN_KEPT_DOCUMENTS_MB", "0.01")  # 10 KB
    first = _keep("a" * 6000)
    _age(kept, first, PAST_THE_HOLD)
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
    assert documents.find(shared) is not None  # a student opened it
    _age(kept, shared, PAST_THE_HOLD + 100)
    for i in range(6):
        _age(kept, _keep(f"a paste {i}"), PAST_THE_HOLD)
    assert documents.find(shared) == "the link the teacher sent"


def test_a_document_too_long_to_keep_is_not_kept(kept, monkeypatch):
    monkeypatch.setenv("HIERATTN_KEPT_DOCUMENT_KB", "1")
    text = "word " * 300  # 1.5 KB
    assert not documents.keepable(text) and documents.keep(text) is None


def test_an_old_document_is_not_found(kept):
    key = _keep("an old document")
    _age(kept, key, 31 * 86_400)
    assert documents.find(key) is None


def test_a_recent_link_holds_whatever_twenty_cookie_less_identities_paste(kept, monkeypatch):
    """A client that sends no cookie is a new visitor per connection: twenty of them, each within its
    share, filled the store and pushed the teacher's link of a minute ago out. A document used within
    the hold now stays; once the store is full of such documents a new paste is not kept (its link
    says so), and once the hold has passed they go as before."""
    monkeypatch.setenv("HIERATTN_KEPT_DOCUMENTS", "16")  # a share of 2 each
    teacher = _keep("the school board approved the curriculum", "teacher")
    kept_keys = [documents.keep(f"flood {i} from {who}", f"anonymous-{who}") for who in range(20) for i in range(3)]
    assert documents.find(teacher) == "the school board approved the curriculum"
    assert len(list(kept.rglob("*.txt"))) <= 16
    refused = [k for k in kept_keys if k is None]
    assert refused and all(not documents.is_kept(documents.link_key(f"flood {i} from 19")) for i in range(3))
    for path in kept.rglob("*.txt"):  # the lecture is over
        os.utime(path, (time.time() - PAST_THE_HOLD, time.time() - PAST_THE_HOLD))
    later = _keep("next week's text", "teacher")
    assert documents.is_kept(later) and len(list(kept.rglob("*.txt"))) <= 16


WORKER = """
import sys
from hierattn.app import documents
for line in sys.argv[1:]:
    writer, text = line.split(":", 1)
    print(documents.keep(text, writer) or "-")
"""


def _worker(*pastes: str) -> list[str]:
    """Pastes in a process of their own, as another worker of the app (or the same one restarted)."""
    done = subprocess.run([sys.executable, "-c", WORKER, *pastes], capture_output=True, text=True, check=True,
                          env=os.environ)
    return done.stdout.split()


def test_a_visitors_share_and_the_hold_are_the_same_on_every_worker_and_after_a_restart(kept, monkeypatch):
    """The shares were counted in each process's memory: a visitor kept its share on every worker,
    and a restart forgot them. They are in the app store now, the hold in the shared folder."""
    monkeypatch.setenv("HIERATTN_KEPT_DOCUMENTS", "16")  # a share of 2
    first = _worker("visitor:one")[0]
    _worker("visitor:two")  # worker 1
    assert documents.is_kept(first)
    _worker("visitor:three")  # worker 0, restarted: the share counts all three, its oldest goes
    assert not documents.is_kept(first)
    assert [documents.is_kept(documents.link_key(t)) for t in ("two", "three")] == [True, True]
    teacher = _worker("teacher:the school board approved the curriculum")[0]
    flood = [f"anonymous-{who}:flood {i} from {who}" for who in range(10) for i in range(2)]
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, *flood[half::2]], stdout=subprocess.DEVNULL,
                                env=os.environ) for half in (0, 1)]  # two workers at once
    assert [w.wait(60) for w in workers] == [0, 0]
    assert _worker("visitor:after the restart")  # a restarted server
    assert documents.find(teacher) == "the school board approved the curriculum"
    assert len(list(kept.rglob("*.txt"))) <= 16


def test_a_sweep_lets_go_of_expired_documents_and_stale_partial_writes(kept, monkeypatch):
    """A sweep (a keep that reads the folder, ``_prune``): a document unused for longer than its days
    goes, and so does a write cut short over an hour ago; a recent partial write (another worker's,
    under way) and a recent document stay."""
    monkeypatch.setattr(documents, "SWEEP_SECONDS", 0.0)  # every keep sweeps
    old, recent = documents.keep("an old note nobody opened"), documents.keep("a recent note")
    month = time.time() - (documents.KEPT_DOCUMENT_DAYS.value + 1) * 86_400
    os.utime(kept / f"{old}.txt", (month, month))
    stale, fresh = kept / "stale.part", kept / "fresh.part"
    stale.write_text("cut short")
    fresh.write_text("being written")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    assert documents.keep("a new note")
    assert not (kept / f"{old}.txt").exists() and (kept / f"{recent}.txt").exists()
    assert not stale.exists() and fresh.exists()


def _sweeps(monkeypatch) -> list[str]:
    """The folders read by keeps from now on."""
    read = []
    scandir = os.scandir
    monkeypatch.setattr(documents.os, "scandir", lambda path: read.append(str(path)) or scandir(path))
    return read


def test_a_keep_reads_the_folder_only_over_a_bound_and_then_makes_room_for_the_next(kept, monkeypatch):
    """Every keep read the whole folder: 11-15 ms a paste once it held its 2,000 documents. The app
    store counts them now; a keep sweeps when the count is over a bound, and lets go down to 1/20
    below it, so the next pastes do not sweep; a sweep finds what was deleted by hand."""
    monkeypatch.setenv("HIERATTN_KEPT_DOCUMENTS", "40")  # room after a sweep: 2
    keys = [_keep(f"document {i}") for i in range(40)]
    for age, key in enumerate(reversed(keys)):
        _age(kept, key, PAST_THE_HOLD + age)  # the first kept is the least recently used
    read = _sweeps(monkeypatch)
    _keep("the 41st")
    assert read  # over the bound: the folder is read
    assert [documents.is_kept(k) for k in keys[:3]] == [False, False, False] and documents.is_kept(keys[3])
    assert len(list(kept.glob("*.txt"))) == 38
    read.clear()
    _keep("the 42nd")
    _keep("the 43rd")
    assert not read and len(list(kept.glob("*.txt"))) == 40  # within the bound: not read
    (kept / f"{keys[10]}.txt").unlink()  # deleted by hand: counted until a sweep
    _keep("the 44th")
    assert read and len(list(kept.glob("*.txt"))) == 40 and documents.is_kept(keys[11])


def test_a_sweep_drops_the_store_rows_of_documents_let_go(kept, monkeypatch):
    """Each visitor's kept documents are rows of the app store; those of documents let go for the
    folder's bound (not for the visitor's share) stayed, one per paste, over a whole course."""
    monkeypatch.setenv("HIERATTN_KEPT_DOCUMENTS", "20")
    for i in range(60):
        _age(kept, _keep(f"paste {i}", f"visitor-{i}"), PAST_THE_HOLD - i)
    opened = _keep("a link the teacher sent", "teacher")
    documents.find(opened)
    monkeypatch.setattr(documents, "SWEEP_SECONDS", 0.0)
    _keep("the last paste", "teacher")
    on_disk = {p.stem for p in kept.glob("*.txt")}
    with sqlite3.connect(kept.parent / "runtime" / "app-store.sqlite3") as store:
        rows = {key for (key,) in store.execute("SELECT key FROM kept_documents")}
    assert len(on_disk) <= 20 and rows == on_disk  # the opened one counts in no share


def test_a_keep_sweeps_after_the_sweep_interval_within_the_bounds(kept, monkeypatch):
    _keep("the first document")  # the first keep of a folder sweeps it
    read = _sweeps(monkeypatch)
    _keep("a second one")
    assert not read
    monkeypatch.setattr(documents, "SWEEP_SECONDS", 0.0)
    _keep("a third one")
    assert read
