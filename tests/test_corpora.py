"""Local corpus loaders, the streaming preprocessing cache, corpus training, resuming, and a
2-process Gloo run against one process with the same global batch."""
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

from hierattn.data.batches import encode_documents
from hierattn.data.corpora import open_corpus
from hierattn.data.dataset import DataError
from hierattn.data.text import TextConfig, Vocab, tokenize_many
from hierattn.training.corpus_cache import CachedCorpus, build_cache

CORPORA = Path(__file__).parent / "corpora"
ROOT = Path(__file__).parent.parent


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("HIERATTN_CACHE", str(root))
    return root


@pytest.mark.parametrize("path, format, parts, first_label, count", [
    ("ag_news_csv", "zhang", ["train", "test"], "1", 96),
    ("yelp_polarity.csv", "zhang", ["all"], "1", 60),
    ("yahoo_answers_csv", "zhang", ["train", "test"], "3", 3),
    ("trec", "trec", ["train", "test"], "DESC", 8),
    ("reviews.csv", "csv", ["all"], "sports", 4),
    ("reviews.tsv", "tsv", ["all"], "sports", 4),
    ("reviews.jsonl", "jsonl", ["all"], "sports", 4),
])
def test_each_format_is_recognised_and_read(path, format, parts, first_label, count):
    corpus = open_corpus(CORPORA / path)
    assert corpus.format == format and list(corpus.parts) == parts
    records = list(corpus.records(parts[0]))
    assert len(records) == count and records[0][1] == first_label
    assert all(isinstance(t, str) and t.strip() for t, _ in records)


def test_zhang_fields_become_sentences_and_escaped_line_breaks_real_ones():
    corpus = open_corpus(CORPORA / "yahoo_answers_csv")
    assert corpus.label_names == ["Society & Culture", "Science & Mathematics", "Health"]  # classes.txt
    text, label = next(corpus.records("train"))
    assert label == "3" and text == "Why is the sky blue?\nRayleigh scattering.\nShort waves scatter more."
    ag = list(open_corpus(CORPORA / "ag_news_csv").records("train"))
    assert ag[3][0].count("\n") == 2 and '"quotes", and a comma.' in ag[3][0]  # title, body, its second line


def test_trec_coarse_and_fine_labels_and_latin1():
    coarse = list(open_corpus(CORPORA / "trec").records("train"))
    fine = list(open_corpus(CORPORA / "trec", fine_labels=True).records("train"))
    assert [y for _, y in coarse][:3] == ["DESC", "ENTY", "HUM"]
    assert [y for _, y in fine][:3] == ["DESC:manner", "ENTY:cremat", "HUM:ind"]
    assert any("Göthe" in t for t, _ in coarse)  # a Latin-1 byte decoded, not replaced


def test_headed_table_columns_and_bad_files(tmp_path):
    renamed = tmp_path / "r.csv"
    renamed.write_text("body,topic\nhello there,a\n")
    corpus = open_corpus(renamed, text_column="body", label_column="topic")
    assert list(corpus.records("all")) == [("hello there", "a")]
    with pytest.raises(DataError, match="no column named 'text'"):
        open_corpus(renamed, format="csv")
    bad = tmp_path / "bad.csv"
    bad.write_text('"x","no label number"\n')
    with pytest.raises(DataError, match="1-based number first"):
        open_corpus(bad, format="zhang")
    broken = tmp_path / "b.jsonl"
    broken.write_text('{"text": "a", "label": "b"}\n{oops\n')
    with pytest.raises(DataError, match="line 2 is not JSON"):
        list(open_corpus(broken).records("all"))
    with pytest.raises(DataError, match="none of the expected files"):
        open_corpus(tmp_path / "..")
    with pytest.raises(DataError, match="does not exist"):
        open_corpus(tmp_path / "missing.csv")


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


def _train_in_process(cache, out, batch_size=8, **kwargs):
    from hierattn.training.corpus import train_corpus
    from hierattn.training.loop import TrainConfig

    config = TrainConfig(epochs=2, batch_size=batch_size, lr=3e-3, patience=5, min_freq=1, seed=3)
    return train_corpus(cache, "han", {"dropout": 0.0, "hidden": 8, "embed_dim": 16}, config, out,
                        log=lambda *a: None, **kwargs)


def test_corpus_training_validates_every_n_documents_and_the_checkpoint_explains(cache_root, tmp_path):
    from hierattn.analysis.explain import explain
    from hierattn.checkpoint import load_classifier

    cache = CachedCorpus(build_cache(open_corpus(CORPORA / "ag_news_csv"), TextConfig(), processes=1).path)
    metrics = _train_in_process(cache, tmp_path / "ag", validate_every=40)
    documents = [row["documents"] for row in metrics["history"]]
    # 86 training documents in steps of 8 (the last of each epoch 6): 40, 80, then 86 + 40 = 126, 166
    assert documents == [40, 80, 126, 166]
    assert metrics["split_sizes"] == {"train": 86, "validation": 10, "test": 24}
    assert metrics["corpus"]["format"] == "zhang" and set(metrics["corpus"]["files"]) == {"train", "test"}  # provenance
    assert metrics["test_accuracy"] is not None and metrics["validation_accuracy"] >= 0.5
    classifier = load_classifier(tmp_path / "ag")
    assert classifier.labels == ["World", "Sports", "Business", "Sci/Tech"]
    assert explain(classifier, "The striker scored in the league match.").label in classifier.labels
    assert not list(tmp_path.glob(".ag.resume*"))  # the resume state goes once the checkpoint is written


def test_an_interrupted_run_resumes_to_the_same_weights(cache_root, tmp_path):
    cache = CachedCorpus(build_cache(open_corpus(CORPORA / "ag_news_csv"), TextConfig(), processes=1).path)
    _train_in_process(cache, tmp_path / "whole")
    stop = threading.Event()
    steps = []

    def stop_at_step_15(event):
        if event.kind == "batch":
            steps.append(event.step)
            if len(steps) == 15:  # in the second epoch, mid-way
                stop.set()

    assert _train_in_process(cache, tmp_path / "cut", on_event=stop_at_step_15, stop=stop) == {}
    assert (tmp_path / ".cut.resume.safetensors").is_file() and not (tmp_path / "cut").exists()
    with pytest.raises(ValueError, match="another batch size or vocabulary"):
        _train_in_process(cache, tmp_path / "cut", batch_size=16, resume=True)
    steps.clear()
    _train_in_process(cache, tmp_path / "cut", resume=True, on_event=lambda e: steps.append(e.step) if e.kind == "batch" else None)
    assert steps[0] == 5 and len(steps) == 7  # it went on from step 5 of 11 of the second epoch
    from safetensors.torch import load_file

    whole, resumed = load_file(str(tmp_path / "whole/model.safetensors")), load_file(str(tmp_path / "cut/model.safetensors"))
    assert all(torch.equal(whole[k], resumed[k]) for k in whole)


def _torchrun(args, processes, out, shards, env):
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}",
               "-m", "hierattn", "train", *args, "--out", str(out), "--log-shards", str(shards)]
    if processes == 1:
        command = [sys.executable, "-m", "hierattn", "train", *args, "--out", str(out), "--log-shards", str(shards)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_two_gloo_processes_match_one_process_with_the_same_global_batch(cache_root, tmp_path):
    """``torchrun --nproc_per_node=2`` on the CPU (Gloo): the ranks train on disjoint shards that
    together are the single run's documents, step by step, and the saved weights match."""
    env = {**os.environ, "HIERATTN_CACHE": str(cache_root), "OMP_NUM_THREADS": "1"}
    args = ["--corpus", str(CORPORA / "ag_news_csv"), "--model", "han", "--set", "dropout=0", "--set", "hidden=8",
            "--epochs", "1", "--batch-size", "8", "--min-freq", "1", "--processes", "1"]
    _torchrun(args, 1, tmp_path / "one", tmp_path / "shards-one", env)
    two = _torchrun(args, 2, tmp_path / "two", tmp_path / "shards-two", env)
    rank0, rank1 = (json.loads((tmp_path / f"shards-two/rank-{r}.json").read_text()) for r in (0, 1))
    single = json.loads((tmp_path / "shards-one/rank-0.json").read_text())
    assert len(rank0) == len(rank1) == 43 and not set(rank0) & set(rank1)  # disjoint halves of 86
    for step in range(len(single) // 8):  # each global batch of 8 is 4 from each rank
        assert sorted(rank0[4 * step: 4 * step + 4] + rank1[4 * step: 4 * step + 4]) == sorted(single[8 * step: 8 * step + 8])
    from safetensors.torch import load_file

    one, both = load_file(str(tmp_path / "one/model.safetensors")), load_file(str(tmp_path / "two/model.safetensors"))
    difference = max(float((one[k].float() - both[k].float()).abs().max()) for k in one)
    assert difference < 2e-3, difference  # fp16 weights; float rounding of two partial sums
    from hierattn.models import build_model

    torch.manual_seed(1234)
    vocab_size = len(json.loads((tmp_path / "one/vocab.json").read_text()))
    initial = build_model("han", {"vocab_size": vocab_size, "num_classes": 4, "dropout": 0, "hidden": 8}).state_dict()
    learned = max(float((one[k].float() - initial[k].float()).abs().max()) for k in one)
    assert learned > 20 * difference  # the match is of trained weights, not of two untouched ones
    metrics = json.loads((tmp_path / "two/metrics.json").read_text())
    assert metrics["processes"] == 2 and metrics["split_sizes"]["train"] == 86
    assert two.stdout.count("validation 1 after") == 1  # rank 0 alone logs
    assert not (tmp_path / "two").with_name(".two.resume.safetensors").exists()
    from hierattn.analysis.explain import explain
    from hierattn.checkpoint import load_classifier

    explained = explain(load_classifier(tmp_path / "two"), "The striker scored.\nThe coach smiled.")
    assert explained.label in ["World", "Sports", "Business", "Sci/Tech"] and len(explained.document.sentences) == 2


def test_command_line_preprocess_and_clear_errors(cache_root, tmp_path):
    env = {**os.environ, "HIERATTN_CACHE": str(cache_root)}
    run = lambda *args: subprocess.run([sys.executable, "-m", "hierattn", *args], cwd=ROOT, env=env,  # noqa: E731
                                       capture_output=True, text=True, timeout=300)
    done = run("preprocess", "--corpus", str(CORPORA / "trec"), "--processes", "1")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["documents"] == 10 and report["labels"] == ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]
    assert report["parts"] == {"train": [0, 8], "test": [8, 10]} and not report["reused"]
    assert report["peak_memory_mb"]["main"] > 0
    assert json.loads(run("preprocess", "--corpus", str(CORPORA / "trec")).stdout)["reused"]
    missing = run("train", "--corpus", str(tmp_path / "nope.csv"), "--model", "han")
    assert missing.returncode == 2 and missing.stderr.strip() == f"error: {tmp_path / 'nope.csv'} does not exist"
    fitted = run("train", "--corpus", str(CORPORA / "trec"), "--model", "tfidf", "--out", str(tmp_path / "t"))
    assert fitted.returncode == 2 and "train it with --file" in fitted.stderr and "Traceback" not in fitted.stderr


def test_explore_offers_the_corpus_test_file_as_samples(cache_root, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from hierattn.training.corpus import train_corpus
    from hierattn.training.loop import TrainConfig

    copy = tmp_path / "ag_news_csv"  # a copy, so the corpus can be moved away afterwards
    copy.mkdir()
    for name in ("train.csv", "test.csv", "classes.txt"):
        (copy / name).write_bytes((CORPORA / "ag_news_csv" / name).read_bytes())
    cache = CachedCorpus(build_cache(open_corpus(copy), TextConfig(), processes=1).path)
    train_corpus(cache, "hcan", {"d": 16, "heads": 2}, TrainConfig(epochs=1, batch_size=16, min_freq=1),
                 tmp_path / "checkpoints" / "ag-hcan", log=lambda *a: None)
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(tmp_path / "checkpoints"))
    at = AppTest.from_file(str(ROOT / "pages/explore.py"), default_timeout=60).run()
    assert not at.exception
    options = at.selectbox(key="sample").options
    first_test_document = next(open_corpus(copy).records("test"))[0]
    assert options[1].startswith("ag_news · World · ") and at.text_area(key="document").value == first_test_document
    assert sum(o.startswith("ag_news · ") for o in options) == 8  # two of each of the four classes
    # Dataset statistics: the corpus's test file is a data set to measure the model on
    stats_page = AppTest.from_file(str(ROOT / "pages/statistics.py"), default_timeout=60).run()
    import time

    deadline = time.time() + 60
    while stats_page.get("progress") and time.time() < deadline:
        time.sleep(0.3)
        stats_page.run()
    assert not stats_page.exception
    assert stats_page.selectbox(key="stats_dataset").options[0] == "ag_news"
    assert stats_page.selectbox(key="stats_split").options == ["test"]
    assert any("24 documents," in c.value for c in stats_page.caption)  # the whole test file
    copy.rename(tmp_path / "moved")  # the corpus is gone: the built-in samples remain
    from hierattn.app import samples

    samples.corpus_samples.clear()
    again = AppTest.from_file(str(ROOT / "pages/explore.py"), default_timeout=60).run()
    assert not again.exception and not any(o.startswith("ag_news") for o in again.selectbox(key="sample").options[1:])


def test_a_run_stopped_in_one_process_resumes_under_torchrun_with_two(cache_root, tmp_path):
    """The resume state is independent of the number of processes: one process is stopped
    mid-epoch, two Gloo processes resume it, and the result matches one uninterrupted process."""
    from hierattn.training.corpus import train_corpus
    from hierattn.training.loop import TrainConfig

    cache = CachedCorpus(build_cache(open_corpus(CORPORA / "ag_news_csv"), TextConfig(), processes=1).path)
    settings = ({"dropout": 0, "hidden": 8}, TrainConfig(epochs=2, batch_size=8, min_freq=1))  # = the CLI flags below
    train_corpus(cache, "han", *settings, tmp_path / "whole", log=lambda *a: None)
    stop, seen = threading.Event(), []

    def stop_at_step_15(event):
        if event.kind == "batch":
            seen.append(event.step)
            if len(seen) == 15:
                stop.set()

    assert train_corpus(cache, "han", *settings, tmp_path / "cut", on_event=stop_at_step_15, stop=stop,
                        log=lambda *a: None) == {}
    env = {**os.environ, "HIERATTN_CACHE": str(cache_root), "OMP_NUM_THREADS": "1"}
    done = _torchrun(["--corpus", str(CORPORA / "ag_news_csv"), "--model", "han", "--set", "dropout=0", "--set",
                      "hidden=8", "--epochs", "2", "--batch-size", "8", "--min-freq", "1", "--processes", "1",
                      "--resume"], 2, tmp_path / "cut", tmp_path / "shards", env)
    assert "resuming from epoch 2, step 4" in done.stdout
    rank0, rank1 = (json.loads((tmp_path / f"shards/rank-{r}.json").read_text()) for r in (0, 1))
    assert len(rank0) == len(rank1) == 7 * 4 - 1  # steps 5..11 of 11; the last step holds 3 + 3 (padded to 43 each)
    from safetensors.torch import load_file

    whole, resumed = load_file(str(tmp_path / "whole/model.safetensors")), load_file(str(tmp_path / "cut/model.safetensors"))
    difference = max(float((whole[k].float() - resumed[k].float()).abs().max()) for k in whole)
    assert difference < 2e-3, difference
