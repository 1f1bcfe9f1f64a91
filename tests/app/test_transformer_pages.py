"""Every page with a Hugging Face classifier beside the papers' models, headless: no exception,
and each view of a transformer is there (the heads at a glance, self-attention by level and layer,
the [CLS] row's distributions, special tokens kept or dropped, rollout)."""
from __future__ import annotations

import re
import shutil

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO, shown
from tests.models.tiny_transformers import TEXTS, save_tiny

DOC = TEXTS[0] + " " + TEXTS[2]


@pytest.fixture(scope="module")
def root(checkpoint_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("transformer-pages") / "checkpoints"
    folder.mkdir()
    shutil.copytree(checkpoint_dir / "tiny-han", folder / "tiny-han")
    save_tiny("bert", folder / "tiny-bert", layers=2, heads=2)
    return folder


@pytest.fixture
def env(root, monkeypatch):
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(root))
    return root


def _page(name: str) -> AppTest:
    return AppTest.from_file(str(REPO / name), default_timeout=120)


def test_explore_shows_every_view_of_a_transformer(env):
    at = _page("app.py").run()
    at.selectbox(key="model").set_value("tiny-bert").run()
    at.text_area(key="document").input(DOC).run()
    assert not at.exception, at.exception
    subheaders = [s.value for s in at.subheader]
    assert {"Where the model looks", "Every head at a glance", "Self-attention",
            "Distributions of the attention of the first token ([CLS], last layer)"} <= set(subheaders)
    heads_table = at.dataframe[0].value
    assert len(heads_table) == 4 and "previous (even)" in heads_table.columns
    assert all(re.fullmatch(r"\d+\.\d% \(\d+\.\d%\)", cell) for cell in heads_table["special (even)"])
    by_layer = at.dataframe[1].value.set_index("")  # Clark et al.'s view: a column per layer, an even spread's once
    assert list(by_layer.columns) == ["even", "layer 1", "layer 2"] and by_layer.index[0] == "to [CLS]"
    assert all(re.fullmatch(r"\d+\.\d\d", cell) for cell in by_layer.loc["entropy (nats)"])
    assert all(re.fullmatch(r"\d+\.\d%", cell) for cell in by_layer.loc["to [CLS]"])
    for level in ("subword", "word", "sentence"):
        at.radio(key="self_level").set_value(level).run()
        assert not at.exception, (level, at.exception)
        assert at.selectbox(key="self_layer").options == ["layer 1", "layer 2 (last)"]
    at.radio(key="self_level").set_value("word").run()
    at.toggle(key="keep_specials").set_value(True).run()  # Clark et al.'s rule: [CLS] and [SEP] as columns
    assert not at.exception, at.exception
    assert any("of a word's attention in this layer goes to special tokens" in c.value for c in at.caption)
    at.toggle(key="keep_specials").set_value(False).run()
    at.selectbox(key="self_layer").set_value(0).run()
    assert set(at.dataframe[2].value["layer"]) == {1}
    for toggle in at.toggle:
        toggle.set_value(True)
    for _ in range(120):  # the analyses run in the background; the page polls them
        at.run()
        shown = " ".join(str(e.value) for e in at.markdown) + " ".join(str(e.value) for e in at.caption)
        if "Rollout (Abnar & Zuidema 2020)" in shown and "Kendall" in shown:
            break
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert "Rollout (Abnar & Zuidema 2020)" in shown


def test_compare_statistics_and_evaluation_take_a_transformer(env):
    at = _page("pages/compare.py").run()
    at.selectbox(key="compare_a").set_value("tiny-han").run()
    at.selectbox(key="compare_b").set_value("tiny-bert").run()
    at.text_area(key="compare_document").input(DOC).run()
    assert not at.exception, at.exception
    assert at.selectbox(key="compare_layer_B").value == 1  # the last layer by default
    stats = _page("pages/1_statistics.py")
    stats.session_state["stats_model"] = "tiny-bert"
    stats.session_state["stats_dataset"] = "tweets"
    stats.session_state["stats_documents"] = 12
    stats.run()
    assert not stats.exception, stats.exception
    assert "Every head over the split" in [s.value for s in stats.subheader]
    stats.number_input(key="heads_documents").set_value(10)
    stats.button(key="heads_go").click().run()
    for _ in range(60):  # the background computation, polled
        if any(str(c.value).startswith("10 documents spread evenly") for c in stats.caption):
            break
        stats.run()
    assert any(str(c.value).startswith("10 documents spread evenly") for c in stats.caption)
    assert not stats.exception, stats.exception
    layers = next(d.value for d in stats.dataframe if "layer 1" in d.value.columns).set_index("")  # Clark et al.
    assert list(layers.columns) == ["even", "layer 1", "layer 2"]
    assert re.fullmatch(r"\d+\.\d% \[\d+\.\d, \d+\.\d\]", layers.loc["to [CLS]", "layer 1"])
    assert re.fullmatch(r"\d+\.\d%", layers.loc["to [CLS]", "even"])
    evaluation = _page("pages/evaluation.py").run()
    assert not evaluation.exception, evaluation.exception


def test_explore_shows_which_heads_matter_beside_the_head_grid(env):
    """The toggle makes each head even in turn in the background, then draws the grid of drops (with
    an Export) and names the largest, beside the head grid's patterns."""
    from tests.app.test_pages import open_exports, settle

    at = _page("app.py").run()
    at.selectbox(key="model").set_value("tiny-bert").run()
    at.text_area(key="document").input(DOC).run()
    at.toggle(key="heads_matter").set_value(True).run()
    at = settle(at)
    assert not at.exception, at.exception
    said = " ".join(shown(c.value) for c in at.caption)
    assert "when one head's attention is replaced by an even spread" in said and "Largest: subword.self · layer" in said
    assert "Of the " in said and "heads with a pattern in the grid above" in said
    assert any(b.key.startswith("export_heads_matter_") for b in open_exports(at).get("download_button"))  # a slide
