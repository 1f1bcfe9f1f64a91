"""Corpus training: validation every N documents, resuming, the command line, and Gloo
processes against one process with the same global batch."""
import json
import os
import subprocess
import sys
import threading

import pytest
import torch

from hierattn.data.corpora import open_corpus
from hierattn.data.text import TextConfig
from hierattn.training.corpus_cache import CachedCorpus, build_cache
from tests.conftest import CORPORA
from tests.conftest import REPO as ROOT


def _train_in_process(cache, out, batch_size=8, **kwargs):
    from hierattn.training.corpus import train_corpus
    from hierattn.training.loop import TrainConfig

    config = TrainConfig(epochs=2, batch_size=batch_size, lr=3e-3, patience=5, min_freq=1, seed=3)
    return train_corpus(cache, "han", {"dropout": 0.0, "hidden": 8, "embed_dim": 16}, config, out,
                        log=lambda *a: None, **kwargs)


@pytest.mark.slow  # trains
def test_corpus_training_validates_every_n_documents_and_the_checkpoint_explains(cache_root, tmp_path):
    from hierattn.analysis.explain import explain
    from hierattn.checkpoint.reading import load_classifier

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


@pytest.mark.slow  # trains
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
    _train_in_process(cache, tmp_path / "cut", resume=True,
                      on_event=lambda e: steps.append(e.step) if e.kind == "batch" else None)
    assert steps[0] == 5 and len(steps) == 7  # it went on from step 5 of 11 of the second epoch
    from safetensors.torch import load_file

    whole = load_file(str(tmp_path / "whole/model.safetensors"))
    resumed = load_file(str(tmp_path / "cut/model.safetensors"))
    assert all(torch.equal(whole[k], resumed[k]) for k in whole)


def _torchrun(args, processes, out, shards, env):
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}",
               "-m", "hierattn", "train", *args, "--out", str(out), "--log-shards", str(shards)]
    if processes == 1:
        command = [sys.executable, "-m", "hierattn", "train", *args, "--out", str(out), "--log-shards", str(shards)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.mark.distributed
@pytest.mark.slow
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
        together = rank0[4 * step: 4 * step + 4] + rank1[4 * step: 4 * step + 4]
        assert sorted(together) == sorted(single[8 * step: 8 * step + 8])
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
    from hierattn.checkpoint.reading import load_classifier

    explained = explain(load_classifier(tmp_path / "two"), "The striker scored.\nThe coach smiled.")
    assert explained.label in ["World", "Sports", "Business", "Sci/Tech"] and len(explained.document.sentences) == 2


@pytest.mark.slow
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


@pytest.mark.distributed
@pytest.mark.slow
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

    whole = load_file(str(tmp_path / "whole/model.safetensors"))
    resumed = load_file(str(tmp_path / "cut/model.safetensors"))
    difference = max(float((whole[k].float() - resumed[k].float()).abs().max()) for k in whole)
    assert difference < 2e-3, difference
