"""``hierattn.notebook``: the app's views in Jupyter. The shipped example notebook runs headlessly
in a real kernel (nbclient + ipykernel) and its outputs are what a reader would see; the views
escape user text and refuse what does not exist."""
from __future__ import annotations

import json

import nbformat
import pytest
from nbclient import NotebookClient

from hierattn import notebook as nb
from tests.conftest import REPO


def _array(value):
    """A figure's array as its JSON holds it: a list, or plotly's typed array (base64 of a NumPy
    buffer, which plotly writes for an array: smaller to send, and read by plotly.js as it is)."""
    import base64

    import numpy as np

    if isinstance(value, dict) and "bdata" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        return flat.reshape([int(n) for n in str(value.get("shape", len(flat))).split(",")])
    return np.asarray(value)


@pytest.mark.slow
def test_the_example_notebook_runs_and_shows_every_view(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the kernel is one more PyTorch process on few cores
    notebook = nbformat.read(REPO / "examples" / "notebook.ipynb", as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(REPO)}}).execute()
    code = [c for c in notebook.cells if c.cell_type == "code"]
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    shaded, heatmaps, metrics, compared = (c.outputs for c in code[1:])

    page = shaded[0]["data"]["text/html"]
    assert "prediction <b>" in page and "superb" in page and "weight 0." in page  # shaded words carry weights

    figures = [o["data"]["application/vnd.plotly.v1+json"] for o in heatmaps if "data" in o]
    assert len(figures) == 4  # tweets-hcan has 4 heads
    for h, figure in enumerate(figures):
        heat = figure["data"][0]
        assert heat["type"] == "heatmap" and f"head {h + 1} of 4" in figure["layout"]["title"]["text"]
        z = _array(heat["z"]).tolist()
        words = len("The plot was thin and the pacing slow .".split())
        assert len(z) == len(z[0]) == words and all(abs(sum(row) - 1) < 1e-3 for row in z)

    table = metrics[0]["data"]["text/html"]
    # the header row and one row per head
    assert "gini" in table and "diagonality_b1_even" in table and table.count("</tr>") == 1 + 4

    side_by_side = compared[0]["data"]["text/html"]
    assert "tweets-han" in side_by_side and "tweets-hcan" in side_by_side
    assert "Agreement" in side_by_side and "Spearman rank correlation" in side_by_side


@pytest.fixture(scope="module")
def tiny(checkpoint_dir):
    return {name: nb.load(checkpoint_dir / name) for name in ("tiny-han", "tiny-hcan", "tiny-kimcnn", "tiny-halstm")}


def test_views_escape_the_text_and_show_the_prediction(tiny):
    text = "<script>alert(1)</script> was <b>great</b>. Truly & really."
    ex = nb.explain(tiny["tiny-han"], text)
    page = nb.shaded(ex).html
    assert "<script>" not in page and "&lt;" in page and "<b>great</b>" not in page  # "script" is a shaded word
    assert f"prediction <b>{ex.label}</b>" in page
    assert page.count("weight ") == ex.word_count() + len(ex.document.sentences)  # the words and the sentence bars
    compared = nb.compare(tiny["tiny-han"], tiny["tiny-hcan"], text)
    assert "<script>" not in compared.html and compared.agreement.words == ex.word_count()
    assert list(compared.table["measure"])[0] == "Spearman rank correlation"


def test_heatmaps_cover_every_map_and_head_and_refuse_what_is_not_there(tiny):
    ex = nb.explain(tiny["tiny-hcan"], "The market rallied today. Shares rose sharply! Investors cheered.")
    figures = nb.heatmaps(ex, sentence=1)
    expected = sum(ex.heads(n) for n in ex.self_attention_names)
    assert len(figures) == expected and all(" · S2 · " in f.layout.title.text for f in figures
                                            if "word" in f.layout.title.text)
    assert len(nb.heatmaps(ex, ex.self_attention_names[0], head=1)) == 1
    with pytest.raises(KeyError, match="not a self-attention map"):
        nb.heatmaps(ex, "word.target")
    with pytest.raises(IndexError):
        nb.heatmaps(ex, sentence=9)
    assert len(nb.metrics(ex)) == len(ex.metrics)


def test_models_without_target_attention_say_so(tiny):
    ex = nb.explain(tiny["tiny-halstm"], "I loved this film. The acting was great.")
    assert "no target attention" in nb.shaded(ex).html
    assert nb.heatmaps(ex) == []  # its window attention (a time axis) is drawn by the app only


def test_figures_display_one_after_another(tiny, monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    ex = nb.explain(tiny["tiny-hcan"], "The striker scored twice. The team won.")
    figures = nb.heatmaps(ex)
    figures._ipython_display_()
    assert shown == list(figures) and len(shown) > 1
    assert json.loads(figures[0].to_json())["data"][0]["type"] == "heatmap"


def test_load_says_what_it_could_not_find():
    with pytest.raises(ValueError, match="no checkpoint 'no-such-model'"):
        nb.load("no-such-model")


def test_attributions_beside_the_attention_escape_the_text_and_carry_captums_results(tiny, checkpoint_dir):
    text = "<script>alert(1)</script> was <b>great</b>. Truly & really. I loved it."
    ex = nb.explain(tiny["tiny-hcan"], text)
    view = nb.attributions(tiny["tiny-hcan"], ex, steps=16)
    assert "<script>" not in view.html and "<b>great</b>" not in view.html and "&lt;" in view.html
    assert list(view.results) == ["integrated gradients", "occlusion"]
    assert all(len(r.scores) == ex.word_count() for r in view.results.values())
    assert "completeness within" in view.html  # Integrated Gradients' convergence delta, beside its shading
    table = nb.sentence_attributions(tiny["tiny-hcan"], ex)
    assert list(table.columns) == ["sentence", "attention (%)", "occlusion (points)", "Shapley value (points)"]
    assert len(table) == len(ex.document.sentences) and "Shapley values are exact" in table.attrs["caption"]
    tfidf = nb.load(checkpoint_dir / "tiny-tfidf")
    without_gradients = nb.attributions(tfidf, nb.explain(tfidf, text))
    assert list(without_gradients.results) == ["occlusion"]
    from_text = nb.attributions(tfidf, text)  # the text itself, explained on the way
    assert from_text.results["occlusion"].scores == without_gradients.results["occlusion"].scores
    assert nb.sentence_attributions(tiny["tiny-hcan"], text).equals(table)
    with pytest.raises(ValueError, match="two or more sentences"):
        nb.sentence_attributions(tiny["tiny-han"], nb.explain(tiny["tiny-han"], "one sentence only"))
