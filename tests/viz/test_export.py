"""Exports: figures decode, reports load, tables and JSON parse."""
import html
import io
import json
import os
import re
import shutil
import xml.etree.ElementTree as ET

import pandas as pd
import pytest

from hierattn import viz
from hierattn.analysis.explain import explain, map_title
from hierattn.analysis.metric_tables import metrics_table
from hierattn.checkpoint.reading import load_classifier
from hierattn.viz import export

TEXT = "The striker scored twice. <b>The team</b> won the cup final on Sunday! Fans cheered."
HAVE_BROWSER = bool(shutil.which("chromium") or os.environ.get("BROWSER_PATH"))
NEEDS_BROWSER = pytest.mark.skipif(not HAVE_BROWSER and os.environ.get("CI") != "true",
                                   reason="PNG, SVG and PDF are drawn by Chromium (apt-get install -y chromium); "
                                          "CI installs it and runs this")


@pytest.fixture(scope="module")
def explained(checkpoint_dir):
    return explain(load_classifier(checkpoint_dir / "tiny-hcan", device="cpu"), TEXT)


def _figure(ex):
    return viz.probability_chart(ex.labels, ex.probabilities)


def test_json_is_the_explain_commands_json(explained, checkpoint_dir, capsys):
    from hierattn.cli import main

    assert main(["explain", "--checkpoint", str(checkpoint_dir / "tiny-hcan"), "--text", TEXT, "--maps", "all"]) == 0
    assert json.loads(export.explanation_json(explained.to_dict())) == json.loads(capsys.readouterr().out)


def test_attention_csv_has_every_real_weight_with_its_words(explained):
    frame = pd.read_csv(io.BytesIO(export.attention_csv(explained.attentions, explained.sentence_words)))
    expected = sum(int(a.mask[0].sum()) for a in explained.attentions.values())
    assert len(frame) == expected
    self_a = frame[frame["map"] == "word.self.a"]
    first = self_a[(self_a["sentence"] == 0) & (self_a["head"] == 0) & (self_a["query"] == 0)]
    assert first["weight"].sum() == pytest.approx(1.0, abs=1e-4)  # a row of attention sums to one
    assert first["query_word"].iloc[0] == "The" and set(first["key_word"]) >= {"striker", "scored"}


def test_metrics_csv_parses(explained):
    frame = pd.read_csv(io.BytesIO(export.metrics_csv(metrics_table(explained))))
    assert len(frame) == len(explained.metrics) and {"gini", "diagonality_b1"} <= set(frame.columns)


def test_figure_as_standalone_html(explained):
    page = export.figure_bytes(_figure(explained), "html").decode()
    assert "<html>" in page[:100] and "Plotly.newPlot" in page
    assert len(page) > 1_000_000 and not re.search(r"<script[^>]*src=", page)  # plotly.js inline: opens offline


@pytest.mark.slow
@NEEDS_BROWSER
def test_figure_as_png_and_svg(explained):
    png = export.figure_bytes(_figure(explained), "png")
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    from PIL import Image

    image = Image.open(io.BytesIO(png))
    assert image.size == (3200, 1800)  # a 16:9 slide, twice its pixel size
    svg = export.figure_bytes(_figure(explained), "svg")
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg") and "business" in svg.decode()
    assert export.figure_bytes(_figure(explained), "pdf").startswith(b"%PDF")


def _svg_texts(svg: bytes) -> list[str]:
    root = ET.fromstring(svg)
    return [" ".join("".join(e.itertext()).split()) for e in root.iter() if e.tag.endswith("text")]


@pytest.mark.slow
@NEEDS_BROWSER
def test_a_slide_names_every_class_and_every_word(explained):
    """PNG exports cut the class names ("ve / al / ve"), the word distribution had no word
    labels and the heatmap no column labels."""
    texts = _svg_texts(export.figure_bytes(_figure(explained), "svg", "class probabilities", "tiny-hcan · a test"))
    assert set(explained.labels) <= set(texts)
    assert "Class probabilities" in texts and "tiny-hcan · a test" in texts  # title (a sentence) and subtitle, apart
    words = [t.text for t in explained.document.sentences[1].tokens]
    heatmap = viz.attention_heatmap(explained.self_attention("word.self.a", 1), words, "x")
    svg = export.figure_bytes(heatmap, "svg", "word self-attention, branch a (ELU)", "S2")
    images = ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}image")  # the cells: one pixel each, not smoothed
    assert all(i.get("image-rendering") == "optimizeSpeed" and "pixelated" in i.get("style") for i in images)
    texts = _svg_texts(svg)
    shown = {html.unescape(export._short(w)) for w in words}  # as a label reads (escaped for plotly)
    assert all(texts.count(w) >= 2 for w in shown), texts  # on both axes
    assert "attends to (key)" in texts and "query" in texts and "weight" in texts  # axis titles, colour bar
    bars = viz.distribution_chart(explained.target_attention("word")[1], words, "over the words")
    texts = _svg_texts(export.figure_bytes(bars, "svg", "word target attention over S2"))
    assert shown <= set(texts)
    many = [f"word{i}" for i in range(70)]  # a long sentence: every other word, as many as fit unprinted over
    texts = _svg_texts(export.figure_bytes(viz.attention_heatmap([[1 / 70] * 70] * 70, many), "svg", "t"))
    assert all(w in texts for w in many[::2]) and "query: every 2nd of 70 named" in texts
    few = [f"word{i}" for i in range(25)]  # a sentence of 25 words: every word
    texts = _svg_texts(export.figure_bytes(viz.attention_heatmap([[1 / 25] * 25] * 25, few), "svg", "t"))
    assert all(w in texts for w in few)


@pytest.mark.slow
@NEEDS_BROWSER
def test_the_heads_grid_slide_has_square_cells_readable_labels_and_rows_apart(explained):
    words = [t.text for t in explained.document.sentences[1].tokens]
    fig = viz.heads_grid([explained.self_attention("word.self.a", 1)] * 4, words,
                         [f"head {h + 1}" for h in range(4)], 2)
    drawn = export.slide(fig, "every head", "sentence 2")
    xs, ys = list(drawn.select_xaxes()), list(drawn.select_yaxes())
    width = export.SLIDE[0] - drawn.layout.margin.l - drawn.layout.margin.r
    height = export.SLIDE[1] - drawn.layout.margin.t - drawn.layout.margin.b
    for x, y in zip(xs, ys):
        assert abs((x.domain[1] - x.domain[0]) * width - (y.domain[1] - y.domain[0]) * height) < 2  # square
        assert x.tickfont.size == y.tickfont.size >= 12
    # a lower row's top labels start below the row above's title
    rows = sorted({tuple(y.domain) for y in ys}, reverse=True)
    assert (rows[0][0] - rows[1][1]) * height >= 40
    texts = _svg_texts(export.figure_bytes(fig, "svg", "every head", "sentence 2"))
    assert all(f"head {h + 1}" in texts for h in range(4))


def _report(ex, table, figures, document_html=None, notes=None) -> bytes:
    return export.report_html(ex.classifier_name, dict(zip(ex.labels, ex.probabilities)), table, figures,
                              document_html, notes, ex.document.truncation.message)


def test_the_report_table_fits_a_page_counts_from_one_and_shows_no_na(explained):
    """The report's metrics table fits a page (it once ran 2,049 px wide), has no <NA> cells and
    counts sentences and heads from 1, as the app does."""
    frame = export.report_table(metrics_table(explained), {n: map_title(n) for n in explained.attentions})
    page = _report(explained, frame, {}).decode()
    table = page[page.index("<table"): page.index("</table>")]
    header = re.findall(r"<th>([^<]*)</th>", table)
    assert len(header) <= 12 and "&lt;NA&gt;" not in table and "<NA>" not in table and "NaN" not in table
    assert frame["sentence"].iloc[0] == "1" and frame["head"].min() == 1  # as the app counts
    assert "word self-attention, branch a (ELU)" in set(frame["map"])


def test_without_a_browser_png_says_what_to_install(explained, monkeypatch):
    monkeypatch.delenv("BROWSER_PATH", raising=False)
    monkeypatch.setattr(export.shutil, "which", lambda name: None)
    with pytest.raises(export.ExportError, match="apt-get install -y chromium"):
        export.figure_bytes(_figure(explained), "png")


def test_report_is_self_contained_and_escaped(explained):
    figures = {"Probabilities": _figure(explained), "Heatmap": viz.attention_heatmap([[0.5, 0.5], [0.2, 0.8]], ["a",
                                                                                                                "b"])}
    doc = viz.plain_text_html(TEXT)
    table = export.report_table(metrics_table(explained), {n: map_title(n) for n in explained.attentions})
    page = _report(explained, table, figures, doc, ["attention: removing <its> top words …"]).decode()
    assert page.count("Plotly.newPlot") == 2 and page.count("/*! For license information") <= 1
    assert "<b>The team</b>" not in page and "&lt;b&gt;The team&lt;/b&gt;" in page
    assert "&lt;its&gt;" in page and "Gini and diagonality" in page
    from html.parser import HTMLParser

    HTMLParser().feed(page)  # parses


def _every_figure_builder(ex) -> dict:
    """One figure from each builder the app draws with, the clickable heatmap among them (its
    invisible Scatter of click markers once made every slide export raise)."""
    import torch

    matrix = ex.self_attention(ex.self_attention_names[0], 0, 0)
    words = [t.text for t in ex.document.sentences[0].tokens]
    near_even = torch.full((4, 4), 0.25) + torch.tensor([[0.05, -0.05, 0.0, 0.0]] * 4)
    return {
        "probabilities": viz.probability_chart(ex.labels, ex.probabilities),
        "heatmap": viz.attention_heatmap(matrix, words, "a head"),
        "clickable heatmap": viz.attention_heatmap(matrix, words, "a head", clickable=True),
        "small multiple": viz.attention_heatmap(matrix, words, "a head", compact=True, zmax=1.0),
        "heads grid": viz.heads_grid([matrix, matrix], words, ["head 1", "head 2"]),
        "matrix": viz.matrix_heatmap(near_even, list("abcd"), list("wxyz")),
        "distribution": viz.distribution_chart([0.2, 0.3, 0.5], ["a", "b", "c"]),
        "confusion": viz.confusion_heatmap([[3, 1], [0, 4]], ["x", "y"]),
        "erasure": viz.erasure_chart([1, 2], {"attention": [0.1, 0.2], "random": [0.0, 0.1]}, "sport", "words"),
        "start sweep": viz.start_sweep_chart({"HCAN": ([0.1, 1.0], [0.01, 0.05])}, "JSD from even"),
    }


def test_every_figure_builder_lays_out_as_a_slide(explained):
    """export.slide on each builder's figure: no figure the app draws fails to become a slide."""
    for name, fig in _every_figure_builder(explained).items():
        drawn = export.slide(fig, name, "a subtitle")
        assert drawn.layout.width == export.SLIDE[0], name


def test_every_heatmap_colour_scale_starts_at_zero_with_its_automatic_range_off(explained):
    """zmin 0 without zmax leaves plotly's zauto on, and the scale then spans the data's own minimum to
    maximum: a near-even map was drawn white to navy. Every heatmap here: zmin 0, zauto off, zmax the
    map's largest value (or the shared one), on the page and on the slide."""
    for name, fig in _every_figure_builder(explained).items():
        for trace in fig.data:
            if trace.type != "heatmap":
                continue
            if trace.coloraxis:
                axis = fig.layout.coloraxis
                assert axis.cmin == 0 and axis.cauto is False and axis.cmax > 0, name
                continue
            assert trace.zmin == 0 and trace.zauto is False and trace.zmax is not None, name
            values = [v for row in trace.z for v in row]
            assert trace.zmax >= max(values) - 1e-9, name
        for trace in export.slide(fig, name).data:
            if trace.type == "heatmap" and not trace.coloraxis:
                assert trace.zmin == 0 and trace.zauto is False, name
    near_even = _every_figure_builder(explained)["matrix"].data[0]
    assert near_even.zmax == pytest.approx(0.3) and min(v for row in near_even.z for v in row) > 0.6 * near_even.zmax


@NEEDS_BROWSER
@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
def test_the_clickable_heatmap_exports_in_every_format(explained, fmt):
    fig = _every_figure_builder(explained)["clickable heatmap"]
    data = export.figure_bytes(fig, fmt, "a head", "a subtitle")
    magic = {"png": b"\x89PNG", "svg": b"<svg", "pdf": b"%PDF"}[fmt]
    assert magic in data[:200]


@pytest.mark.slow
@NEEDS_BROWSER
def test_exports_from_several_sessions_at_once_each_get_their_own_figure(explained):
    """Every export of a process goes through one kept Chromium, whose answers share one queue: each
    caller must still get its own figure back."""
    from concurrent.futures import ThreadPoolExecutor

    words = [t.text for t in explained.document.sentences[1].tokens]
    figures = {f"figure {i}": viz.attention_heatmap(explained.self_attention("word.self.a", 1), words, "x")
               for i in range(6)}
    with ThreadPoolExecutor(6) as pool:
        drawn = dict(zip(figures, pool.map(lambda name: export.figure_bytes(figures[name], "svg", name), figures)))
    assert all(name.capitalize() in _svg_texts(svg) for name, svg in drawn.items())  # titles are sentences
