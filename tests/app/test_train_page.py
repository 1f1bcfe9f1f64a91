"""The Train page (AppTest): an upload, its checks, a run started, watched, cancelled and found again."""
import json
import re
import time

import pytest
from streamlit.testing.v1 import AppTest

from hierattn.checkpoint.reading import load_classifier
from hierattn.home import list_checkpoints
from hierattn.training.run_names import JobError, validate_run_name
from tests.app.test_explore import APP
from tests.conftest import shown
from tests.training.test_jobs import WORDS


def toy_csv(n: int = 30) -> bytes:
    lines = ["text,label"]
    for i in range(n):
        for label, words in WORDS.items():
            lines.append(f"\"The film was {words.split()[i % 4]}. I saw it on day {i}.\",{label}")
    return ("\n".join(lines) + "\n").encode()


def open_train_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/train.py").run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Train a model"
    return at


def upload(at: AppTest, raw: bytes, name: str = "films.csv") -> AppTest:
    at.radio(key="data_source").set_value("upload").run()
    at.file_uploader(key="upload").set_value((name, raw, "text/csv")).run()
    assert not at.exception, at.exception
    return at


def configure(at: AppTest, run_name: str, epochs: int) -> AppTest:
    at.selectbox(key="model_type").set_value("hcan").run()
    at.number_input(key="hp_hcan_d").set_value(16).run()
    at.number_input(key="hp_hcan_heads").set_value(2).run()
    at.number_input(key="epochs").set_value(epochs).run()
    at.number_input(key="batch_size").set_value(8).run()
    run_name_box(at).input(run_name).run()
    return at


def run_name_box(at: AppTest):
    return next(t for t in at.text_input if t.label == "Run name")


def wait_for(at: AppTest, condition, seconds: float = 90.0) -> AppTest:
    deadline = time.time() + seconds
    while time.time() < deadline:
        at.run()
        assert not at.exception, at.exception
        if condition(at):
            return at
        time.sleep(0.3)
    raise AssertionError("the page never showed what was expected")


def messages(at: AppTest) -> str:
    return shown("\n".join(str(e.value) for kind in ("success", "warning", "error", "info", "caption")
                           for e in getattr(at, kind)))


@pytest.mark.slow
def test_upload_preview_train_and_find_it_in_explore(train_env):
    at = upload(open_train_page(), toy_csv())
    assert at.selectbox(key="text_column").value == "text" and at.selectbox(key="label_column").value == "label"
    counts = at.dataframe[1].value
    assert counts.to_dict("list") == {"label": ["neg", "pos"], "documents": [30, 30]}
    assert "48 train · 6 validation · 6 test" in messages(at)
    assert "Device: CPU" in messages(at)
    configure(at, "films-hcan", epochs=1)
    at.button(key="start").click().run()
    assert not at.exception, at.exception
    assert at.query_params["job"]
    # 6 validation documents measure an accuracy to about +-40 points: a warning, not a green box
    wait_for(at, lambda a: any("Finished" in s.value for s in [*a.success, *a.warning]))
    assert "saved as 'films-hcan'" in messages(at)
    assert any("Finished" in s.value for s in at.success) or "Not a clear win: on 6 validation documents" in \
        messages(at)
    assert [p.name for p in list_checkpoints(train_env)].count("films-hcan") == 1
    saved = json.loads((train_env / "films-hcan" / "metrics.json").read_text())
    assert saved["epochs_run"] == 1 and "attention_gini" in saved["history"][0]
    # the chart's even-spread line: the diagonality of the same validation matrices spread evenly
    assert 0 < saved["history"][0]["attention_diagonality_b3_even"] <= 1
    chart = next(c.proto.spec for c in at.get("plotly_chart") if "even spread" in c.proto.spec)
    assert "diagonality b=3, even spread" in chart
    # the run's attention as it formed: the start and its one epoch, on validation documents it kept
    recorded = json.loads((train_env / "films-hcan" / "playback.json").read_text())
    assert [e["epoch"] for e in recorded["epochs"]] == [0, 1] and {d["truth"] for d in recorded["documents"]} == \
        {"neg", "pos"}
    slider = next(s for s in at.slider if s.key.startswith("playback_"))
    assert (slider.min, slider.max, slider.value) == (0, 1, 1)
    assert "epoch 1 · validation accuracy" in shown(" ".join(m.value for m in at.markdown))
    slider.set_value(0).run()
    assert "epoch 0 (the start)" in shown(" ".join(m.value for m in at.markdown)) and not at.exception
    at.button(key=next(b.key for b in at.button if b.key.startswith("open_"))).click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Explore attention"
    assert "films-hcan" in at.selectbox(key="model").options and at.selectbox(key="model").value == "films-hcan"


@pytest.mark.slow
def test_cancel_keeps_the_best_epoch_so_far(train_env):
    at = configure(upload(open_train_page(), toy_csv(60)), "films-cancel", epochs=200)
    at.button(key="start").click().run()
    wait_for(at, lambda a: bool(a.get("plotly_chart")) and bool(a.progress))  # progress and curves are live
    wait_for(at, lambda a: bool(a.progress) and " cores" in a.progress[0].text)
    assert re.search(r"documents/s on \d+ of \d+ cores", at.progress[0].text)  # its share of the machine, shown
    job = next(j for j in __import__("hierattn.app.train_form", fromlist=["job_manager"]).job_manager().jobs()
               if j.name == "films-cancel")
    deadline = time.time() + 60
    while not job.snapshot()["history"] and time.time() < deadline:  # one epoch has finished
        time.sleep(0.2)
    at.run()
    at.button(key=f"cancel_{job.id}").click().run()
    wait_for(at, lambda a: any("Cancelled after epoch" in w.value for w in a.warning))
    snap = job.snapshot()
    assert snap["status"] == "cancelled" and 1 <= snap["metrics"]["epochs_run"] < 200
    assert load_classifier(train_env / "films-cancel",
                           device="cpu").metrics["epochs_run"] == snap["metrics"]["epochs_run"]


@pytest.mark.slow
def test_a_refresh_finds_the_run_again(train_env):
    at = configure(upload(open_train_page(), toy_csv()), "films-again", epochs=1)
    at.button(key="start").click().run()
    job_id = at.query_params["job"]
    fresh = AppTest.from_file(APP, default_timeout=60)
    fresh.query_params["job"] = job_id
    fresh.run()
    fresh.switch_page("pages/train.py").run()
    wait_for(fresh, lambda a: any("films-again" in s.value for s in a.subheader)
             and any("Finished" in s.value for s in [*a.success, *a.warning]))


BAD_UPLOADS = [
    ("photo.csv", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "not a text file"),
    ("empty.csv", b"text,label\n", "no rows"),
    ("one.csv", b"text,label\n" + b"".join(b"doc %d,a\n" % i for i in range(40)), "only one label"),
    ("ids.csv", b"text,label\n" + b"".join(b"doc %d,%d\n" % (i, i) for i in range(500)),
     "the number of distinct labels is 500"),
    ("blank.csv", b"text,label\n" + b"".join(b" ,%d\n" % (i % 2) for i in range(40)), "empty text or label"),
    ("latin1.csv", b"text,label\ncaf\xe9 au lait,a\n", "not UTF-8"),
]


@pytest.mark.parametrize("name,raw,message", BAD_UPLOADS, ids=[b[0] for b in BAD_UPLOADS])
def test_bad_uploads_get_a_specific_message_before_training(train_env, name, raw, message):
    at = upload(open_train_page(), raw, name)
    assert message in messages(at)
    assert not [b for b in at.button if b.key == "start"]  # nothing to start from


def test_an_upload_over_the_limit_is_refused(train_env, monkeypatch):
    monkeypatch.setenv("HIERATTN_MAX_UPLOAD_MB", "0.001")
    at = upload(open_train_page(), toy_csv(), "big.csv")
    assert "over the limit of 0.001 MB" in messages(at) and "HIERATTN_MAX_UPLOAD_MB" in messages(at)


@pytest.mark.parametrize("name,message", [
    ("../x", "letters, digits"), ("/etc", "letters, digits"), ("con", "reserved"), ("x" * 300, "1 to 64"),
    ("-x", "starts with a letter"), ("", "letters, digits"), ("tiny-han", "already exists"),
])
def test_run_names_are_validated(train_env, name, message):
    with pytest.raises(JobError, match=message):
        validate_run_name(name, train_env)


def test_a_bad_run_name_is_refused_on_the_page(train_env):
    at = configure(upload(open_train_page(), toy_csv()), "tiny-han", epochs=1)
    at.button(key="start").click().run()
    assert "already exists; tick 'replace'" in messages(at)
    run_name_box(at).input("../escape").run()
    at.button(key="start").click().run()
    assert "letters, digits" in messages(at) and not (train_env.parent / "escape").exists()


@pytest.mark.slow
def test_fine_tune_a_hugging_face_folder_from_the_page(train_env):
    """A BERT folder under checkpoints/ is offered as a start; the run keeps its tokenizer
    and gives it the upload's labels, with the page's progress and the same job machinery."""
    from tests.models.tiny_transformers import save_tiny

    save_tiny("bert", train_env / "tiny-bert")
    at = upload(open_train_page(), toy_csv())
    at.selectbox(key="model_type").set_value("transformer").run()
    assert at.selectbox(key="start_from_transformer").options == [  # every folder, and the installed encoder
        "a new model, from scratch", "tiny-bert", "tiny-transformer", "all-MiniLM-L6-v2 (pretrained)"]
    assert [n.key for n in at.number_input if n.key.startswith("hp_transformer_")]  # from scratch: its sizes
    at.selectbox(key="start_from_transformer").set_value("tiny-bert").run()
    # a pre-trained start: none of the sizes (the checkpoint's), a small learning rate, batches of 16 and
    # epochs enough for about a hundred steps (48 training documents: 3 batches an epoch, so 20 epochs at most)
    assert not [n.key for n in at.number_input if n.key.startswith("hp_transformer_")]
    assert at.number_input(key="lr_pretrained").value == 3e-5
    assert at.number_input(key="batch_size_pretrained").value == 16
    assert at.number_input(key="epochs_pretrained").value == 20
    assert "About 60 optimiser steps" in messages(at)  # 20 x 3: under a hundred, warned
    at.number_input(key="epochs_pretrained").set_value(1).run()
    assert any("About 3 optimiser steps" in w.value and "moves little" in w.value for w in at.warning)
    at.button(key="measure_rate").click().run()
    assert "Measured here:" in messages(at) and "training documents a second" in messages(at)
    at.number_input(key="batch_size_pretrained").set_value(8).run()
    at.number_input(key="lr_pretrained").set_value(1e-4).run()
    run_name_box(at).input("films-bert").run()
    at.button(key="start").click().run()
    assert not at.exception, at.exception
    # a random BERT on 48 documents for one epoch may not beat the majority class: said as a warning
    wait_for(at, lambda a: any("Finished" in s.value for s in list(a.success) + list(a.warning)))
    tuned, base = load_classifier(train_env / "films-bert", "cpu"), load_classifier(train_env / "tiny-bert", "cpu")
    assert tuned.labels == ["neg", "pos"] and tuned.vocab.tokenizer.to_str() == base.vocab.tokenizer.to_str()
    saved = json.loads((train_env / "films-bert" / "metrics.json").read_text())
    assert saved["train_config"]["start_from"].endswith("tiny-bert") and "attention_gini" in saved["history"][0]
    assert saved["train_config"]["lr_schedule"] == "warmup" and "base_model" not in saved
