"""Explore's "Can I trust this shading?" panel (issue 20) for every shipped checkpoint."""
import time

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO, shown

APP = str(REPO / "app.py")
SHIPPED = sorted(p.name for p in (REPO / "checkpoints").iterdir() if (p / "config.json").exists())
DOC = ("The striker scored twice and the team won the cup final on Sunday. Fans cheered loudly in the rain. "
       "The coach said the players had earned the title.")


def _settle(at: AppTest, seconds: float = 120) -> None:
    deadline = time.time() + seconds
    while at.get("progress") and time.time() < deadline:
        time.sleep(0.3)
        at.run()


@pytest.mark.parametrize("name", SHIPPED)
def test_the_panel_runs_the_battery_or_says_which_tests_apply(name, monkeypatch):
    monkeypatch.delenv("HIERATTN_CHECKPOINTS", raising=False)
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.selectbox(key="model").set_value(name).run()
    at.text_area(key="document").input(DOC).run()
    at.toggle(key="trust").set_value(True).run()
    _settle(at)
    assert not at.exception, at.exception
    words = shown("\n".join(str(e.value) for kind in ("markdown", "info", "caption") for e in getattr(at, kind)))
    frames = at.table
    if name.endswith(("kimcnn", "onlstm")):  # coverage and a gate: no attention to test
        assert "Tests that do not apply to this model" in words and not frames
        return
    assert frames, f"{name}: no table of results"
    table = frames[0].value
    assert list(table.columns) == ["test", "level", "value", "baseline", "− baseline", "verdict"]
    assert all(table["verdict"])  # every row read in words, not raw numbers
    assert "How to read them" in words and "Comprehensiveness (AOPC)" in words
    assert any(t.startswith("comprehensiveness") for t in table["test"])
    if name.endswith(("han", "hcan")):  # hierarchical: sentence units and the interventions at both levels
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
    if name.endswith(("hcan", "sanet")):  # self-attention beside its gradient-weighted version
        assert any("gradient-weighted" in c.proto.spec for c in at.get("plotly_chart"))
    if name.endswith("halstm"):
        assert "recurrent cell" in words
