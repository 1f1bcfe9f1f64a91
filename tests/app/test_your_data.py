"""Your data, end to end: a model trained on an uploaded file is no dead end. Without these checks
Explore showed it a bbc-news sample, Evaluation and Dataset statistics offered only the built-in
data sets, and a run no better than always answering the largest class finished in a green box."""
import pytest
from streamlit.testing.v1 import AppTest

from hierattn.data.dataset import Dataset
from hierattn.data.split import prepare
from hierattn.data.text import TextConfig
from hierattn.training.in_memory import train
from hierattn.training.loop import TrainConfig
from tests.app.test_explore import APP
from tests.app.test_pages import settle
from tests.app.test_train_page import configure, messages, open_train_page, upload, wait_for
from tests.conftest import REPO, shown

WORDS = {0: "great lovely superb", 1: "awful boring dreadful"}


def _reviews() -> Dataset:
    texts, labels = [], []
    for i in range(90):
        y = 0 if i % 3 else 1
        texts.append(f"The blender was {WORDS[y].split()[i % 3]}. Bought on day {i}.")
        labels.append(y)
    return Dataset("my-reviews", texts, labels, ["pos", "neg"])


@pytest.fixture
def own_model(train_env):
    data = prepare(_reviews(), TextConfig(4, 12))
    train("han", {"embed_dim": 16, "hidden": 8, "attention_dim": 8}, data, TextConfig(4, 12),
          TrainConfig(epochs=3, batch_size=8, lr=5e-3, min_freq=1), train_env / "mine", device="cpu")
    return train_env


@pytest.mark.slow  # trains
def test_explore_samples_its_own_held_out_documents(own_model):
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.selectbox(key="model").set_value("mine").run()
    options = at.selectbox(key="sample").options
    assert options[1].startswith("my-reviews · ") and "The blender was" in options[1]
    assert {o.split(" · ")[1] for o in options[1:5]} == {"pos", "neg"}  # both classes, first


@pytest.mark.slow  # trains
def test_evaluation_runs_on_its_own_data_beside_the_baselines(own_model):
    at = AppTest.from_file(str(REPO / "pages/evaluation.py"), default_timeout=120)
    at.session_state["eval_model"] = "mine"
    at = settle(at.run())
    picker = at.selectbox(key="eval_dataset")
    assert picker.options[0] == "my-reviews (held out with the model)" and picker.value == picker.options[0]
    assert at.selectbox(key="eval_split").options == ["validation", "test"]
    words = shown("\n".join(str(e.value) for kind in ("caption", "warning") for e in getattr(at, kind)))
    assert "always answering 'pos' scores 66.7%" in words and "TF-IDF + Naive Bayes" in words
    assert [m.value for m in at.metric if m.label == "Documents"] == ["9"]


@pytest.mark.slow  # trains
def test_dataset_statistics_offers_its_own_data(own_model):
    at = AppTest.from_file(str(REPO / "pages/1_statistics.py"), default_timeout=120)
    at.session_state["stats_model"] = "mine"
    at = settle(at.run())
    picker = at.selectbox(key="stats_dataset")
    assert picker.options[0] == "my-reviews (held out with the model)"
    at.selectbox(key="stats_dataset").set_value(picker.options[0]).run()
    assert at.selectbox(key="stats_split").options == ["test", "validation"]
    assert not at.exception


@pytest.mark.slow
def test_a_run_no_better_than_the_largest_class_warns_and_opens_on_its_own_data(train_env):
    lines = ["text,label"] + [f"\"Just a note number {i}. Nothing else to say &#039;here&#039;.\","
                              f"{'yes' if i % 3 else 'no'}" for i in range(90)]  # 2:1, no word tells them apart
    at = upload(open_train_page(), ("\n".join(lines) + "\n").encode(), "notes.csv")
    assert "90 texts hold HTML markup or entities" in messages(at)
    configure(at, "notes-hcan", epochs=1)
    at.button(key="start").click().run()
    wait_for(at, lambda a: any("Finished" in w.value for w in [*a.warning, *a.success]))
    words = messages(at)
    assert "always answering 'yes' scores" in words
    # no word tells them apart: it answers the largest class every time, and is told so in words
    assert "Every validation prediction is 'yes': the model answers one class whatever the text" in words
    assert not any("Finished" in s.value for s in at.success)  # a warning, not a green box
    at.button(key=next(b.key for b in at.button if b.key.startswith("open_"))).click().run()
    assert at.selectbox(key="model").value == "notes-hcan"
    assert at.text_area(key="document").value.startswith("Just a note number")  # its own data, not bbc-news
