"""Explore's "Can I trust this shading?" panel, for a model of every type (the tiny checkpoints, a
Hugging Face folder among them) and, as a smoke case, one shipped checkpoint: which tests the panel
runs depends on the model's type and structure, never on its training."""
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.test_pages import settle
from tests.conftest import REPO, shown
from tests.tiny import TINY, TINY_TRANSFORMER

APP = str(REPO / "app.py")
DOC = ("The striker scored twice and the team won the cup final on Sunday. Fans cheered loudly in the rain. "
       "The coach said the players had earned the title.")
SHIPPED = "tweets-hcan"  # the smoke case: a shipped model through the whole battery


def _structure(folder: Path) -> tuple[str, bool, str]:
    """(model type, whether it reads sentences then words, its recurrent cell) from its config."""
    if (folder / "hierattn.json").exists():
        return "transformer", False, ""
    config = json.loads((folder / "config.json").read_text())
    model = config["model_config"]
    hierarchical = config["model_type"] == "han" or (config["model_type"] == "hcan" and model.get("hierarchical", True))
    return config["model_type"], hierarchical, model.get("cell", "")


@pytest.mark.parametrize("name", [name for name, _, _ in TINY] + [TINY_TRANSFORMER, SHIPPED])
def test_the_panel_runs_the_battery_or_says_which_tests_apply(name, checkpoint_dir, monkeypatch):
    if name == SHIPPED:
        monkeypatch.delenv("HIERATTN_CHECKPOINTS", raising=False)
        folder = REPO / "checkpoints" / name
    else:
        monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(checkpoint_dir))
        folder = checkpoint_dir / name
    model_type, hierarchical, cell = _structure(folder)
    at = AppTest.from_file(APP, default_timeout=240).run()
    at.selectbox(key="model").set_value(name).run()
    at.text_area(key="document").input(DOC).run()
    at.toggle(key="trust").set_value(True).run()
    settle(at)
    assert not at.exception, at.exception
    words = shown("\n".join(str(e.value) for kind in ("markdown", "info", "caption") for e in getattr(at, kind)))
    frames = at.table
    if model_type in ("kimcnn", "tfidf") or cell == "onlstm":  # coverage and a gate: no attention to test
        assert "Tests that do not apply to this model" in words and not frames
        return
    assert frames, f"{name}: no table of results"
    table = frames[0].value
    assert list(table.columns) == ["test", "level", "value", "baseline", "− baseline", "verdict"]
    assert all(table["verdict"])  # every row read in words, not raw numbers
    assert "How to read them" in words and "Comprehensiveness (AOPC)" in words
    assert any(t.startswith("comprehensiveness") for t in table["test"])
    if hierarchical:  # sentence units and the interventions at both levels
        assert {"word", "sentence"} <= set(table["level"]) and "permutation" in set(table["test"])
        # words ranked across sentences meet the sentence attention x even words, in a table of their own,
        # and within each sentence get Kendall taus of their own
        assert any("sentence × even words" in f.value.columns for f in frames)
        assert any(t.startswith("Kendall tau within sentences") for t in table["test"])
    else:  # a flat model has no sentence structure for such a null to keep
        assert not any("sentence × even words" in f.value.columns for f in frames)
    for beside in (f.value for f in frames if "sentence × even words" in f.value.columns):
        assert set(beside["test"]) <= set(table["test"]) and any(t.startswith("Kendall") for t in beside["test"])
        assert all(beside["sentence × even words"]) and "Words ranked across sentences" in words
    if model_type in ("hcan", "sanet"):  # self-attention beside its gradient-weighted version
        assert any("gradient-weighted" in c.proto.spec for c in at.get("plotly_chart"))
    if model_type == "halstm":
        assert "recurrent cell" in words


def test_a_difference_that_rounds_to_zero_reads_plus_zero_not_minus_zero():
    from hierattn.app.panels.trust import _difference

    assert _difference({"value": 0.5 - 1e-9, "baseline": 0.5}) == "+0.000"
    assert _difference({"value": 0.25, "baseline": 0.5}) == "-0.250"
