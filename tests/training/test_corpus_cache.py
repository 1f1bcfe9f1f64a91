"""The streaming preprocessing cache: exactly what the tokenizer reads, reused, rebuilt, bounded."""
import json

import pytest
import torch

from hierattn.data.batches import encode_documents
from hierattn.data.corpora import open_corpus
from hierattn.data.text import TextConfig, Vocab, tokenize_many
from hierattn.training.corpus_cache import CachedCorpus, build_cache
from tests.conftest import CORPORA


@pytest.mark.parametrize("processes", [1, 2])
def test_the_cache_holds_exactly_what_the_tokenizer_reads(cache_root, processes, monkeypatch):
    import hierattn.training.corpus_cache as cc

    monkeypatch.setattr(cc, "OFFSET_BLOCK", 7)  # offsets summed across many blocks
    corpus = open_corpus(CORPORA / "ag_news_csv")
    config = TextConfig(max_sentences=2, max_words=5)  # caps are part of what is cached
    report = build_cache(corpus, config, processes=processes, chunk_docs=7)
    assert not report.reused and report.documents == 120
    cache = CachedCorpus(report.path)
    records = list(corpus.records("train")) + list(corpus.records("test"))
    expected = tokenize_many([t for t, _ in records], config)
    for i, document in enumerate(expected):
        assert cache.words(i) == [[t.norm for t in s.tokens] for s in document.sentences]
    names = cache.label_names
    assert [names[y] for y in cache.labels] == [corpus.label_names[int(y) - 1] for _, y in records]
    assert list(cache.part("train")) == list(range(96)) and list(cache.part("test")) == list(range(96, 120))
    # the batch a cache makes is the batch the in-memory path makes from the same documents
    vocab = Vocab.build(expected[:96], 1)
    built, lookup = cache.vocabulary(["train"], 1, None)
    assert built.itos == vocab.itos
    batch = cache.batch([0, 5, 100], lookup)
    reference = encode_documents([expected[i] for i in (0, 5, 100)], vocab)
    assert torch.equal(batch.word_ids, reference.word_ids) and torch.equal(batch.word_mask, reference.word_mask)
    assert batch.labels.tolist() == [int(cache.labels[i]) for i in (0, 5, 100)]
    assert (cache.counts_of(range(96)) == cache.counts("train")).all()


def test_a_second_run_reuses_the_cache_and_a_change_rebuilds_it(cache_root, tmp_path):
    source = tmp_path / "reviews.jsonl"
    source.write_bytes((CORPORA / "reviews.jsonl").read_bytes())
    first = build_cache(open_corpus(source), TextConfig(), processes=1)
    again = build_cache(open_corpus(source), TextConfig(), processes=1)
    assert again.reused and again.path == first.path
    assert build_cache(open_corpus(source), TextConfig(max_words=3), processes=1).path != first.path
    with open(source, "a") as f:
        f.write(json.dumps({"text": "One more review.", "label": "sports"}) + "\n")
    changed = build_cache(open_corpus(source), TextConfig(), processes=1)
    assert not changed.reused and changed.documents == 5
    assert not [p for p in cache_root.iterdir() if p.name.startswith(".")]  # no temporaries left


def test_labels_are_sorted_whatever_order_they_first_appear_in(cache_root, tmp_path):
    source = tmp_path / "t.jsonl"
    source.write_text("".join(json.dumps({"text": f"word {y}", "label": y}) + "\n" for y in ["zeta", "alpha", "mid"]))
    cache = CachedCorpus(build_cache(open_corpus(source), TextConfig(), processes=1).path)
    assert cache.label_names == ["alpha", "mid", "zeta"] and cache.labels.tolist() == [2, 0, 1]


def test_preprocessing_streams_with_a_bounded_window(cache_root, monkeypatch):
    """The reader is never more than 2 x processes chunks ahead of the writer: the corpus is not
    held in memory. The records are counted as they are pulled and as they are written."""
    import hierattn.training.corpus_cache as cc

    corpus = open_corpus(CORPORA / "yelp_polarity.csv")
    pulled, written, ahead = [0], [0], []
    records = corpus.records

    def counting(part):
        for record in records(part):
            pulled[0] += 1
            ahead.append(pulled[0] - written[0])
            yield record

    monkeypatch.setattr(corpus, "records", counting)
    real = cc._tokenize_chunk

    def tokenize_and_count(job):
        written[0] += len(job[0])
        return real(job)

    monkeypatch.setattr(cc, "_tokenize_chunk", tokenize_and_count)
    build_cache(corpus, TextConfig(), processes=1, chunk_docs=4)
    assert pulled[0] == 60 and max(ahead) <= 4  # one chunk at a time in-process
    # with workers: the window of pending chunks is bounded by 2 x processes
    pending = []

    class Pool:
        def __init__(self, n):
            self.n = n

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

        def apply_async(self, fn, args):
            pending.append(pulled[0])

            class Result:
                def get(_self):
                    written[0] += len(args[0][0])
                    return real(args[0])
            return Result()

    class Context:
        Pool = staticmethod(lambda n: Pool(n))

    monkeypatch.setattr(cc.multiprocessing, "get_context", lambda method: Context())
    pulled[0] = written[0] = 0
    ahead.clear()
    build_cache(corpus, TextConfig(max_words=4), processes=2, chunk_docs=4)
    assert pulled[0] == 60 and max(ahead) <= 4 * (2 * 2 + 1)


def test_a_cache_without_its_meta_file_is_not_used(cache_root, tmp_path):
    report = build_cache(open_corpus(CORPORA / "reviews.tsv"), TextConfig(), processes=1)
    (report.path / "meta.json").unlink()
    with pytest.raises(FileNotFoundError, match="not a complete corpus cache"):
        CachedCorpus(report.path)
    assert not build_cache(open_corpus(CORPORA / "reviews.tsv"), TextConfig(), processes=1).reused  # rebuilt


def test_a_process_started_by_a_large_parent_reports_its_own_peak_memory():
    """``ru_maxrss`` survives exec: a child of a 400 MB parent used to report 400 MB."""
    import subprocess
    import sys
    from pathlib import Path

    ballast = bytearray(400 * 2**20)
    ballast[::4096] = b"x" * len(ballast[::4096])  # touched, so resident
    code = "from hierattn.training.corpus_cache import peak_memory_mb; print(peak_memory_mb()['main'])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert float(done.stdout) < 300, done.stdout
    del ballast
