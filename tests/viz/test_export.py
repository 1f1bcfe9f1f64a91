"""Exports (issue 8): figures decode, reports load, tables and JSON parse."""
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
from hierattn.analysis.explain import explain
from hierattn.checkpoint import load_classifier
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

    assert main(["explain", "--checkpoint", str(checkpoint_dir / "tiny-hcan"), "--text", TEXT]) == 0
    assert json.loads(export.explanation_json(explained)) == json.loads(capsys.readouterr().out)


def test_attention_csv_has_every_real_weight_with_its_words(explained):
    frame = pd.read_csv(io.BytesIO(export.attention_csv(explained)))
    expected = sum(int(a.mask[0].sum()) for a in explained.attentions.values())
    assert len(frame) == expected
    self_a = frame[frame["map"] == "word.self.a"]
    first = self_a[(self_a["sentence"] == 0) & (self_a["head"] == 0) & (self_a["query"] == 0)]
    assert first["weight"].sum() == pytest.approx(1.0, abs=1e-4)  # a row of attention sums to one
    assert first["query_word"].iloc[0] == "The" and set(first["key_word"]) >= {"striker", "scored"}


def test_metrics_csv_parses(explained):
    frame = pd.read_csv(io.BytesIO(export.metrics_csv(explained)))
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
    """Issue 30: PNG exports cut the class names ("ve / al / ve"), the word distribution had no word
    labels and the heatmap no column labels."""
    texts = _svg_texts(export.figure_bytes(_figure(explained), "svg", "class probabilities", "tiny-hcan · a test"))
    assert set(explained.labels) <= set(texts)
    assert any(t.startswith("class probabilities") and "tiny-hcan" in t for t in texts)  # title, and subtitle
    words = [t.text for t in explained.document.sentences[1].tokens]
    heatmap = viz.attention_heatmap(explained.self_attention("word.self.a", 1), words, "x")
    texts = _svg_texts(export.figure_bytes(heatmap, "svg", "word self-attention, branch a (ELU)", "S2"))
    shown = {html.unescape(export._short(w)) for w in words}  # as a label reads (escaped for plotly)
    assert all(texts.count(w) >= 2 for w in shown), texts  # on both axes
    assert "attends to (key)" in texts and "query" in texts and "weight" in texts  # axis titles, colour bar
    bars = viz.distribution_chart(explained.target_attention("word")[1], words, "over the words")
    texts = _svg_texts(export.figure_bytes(bars, "svg", "word target attention over S2"))
    assert shown <= set(texts)
    many = [f"word{i}" for i in range(70)]  # a long sentence: every word still named (up to 80)
    texts = _svg_texts(export.figure_bytes(viz.attention_heatmap([[1 / 70] * 70] * 70, many), "svg", "t"))
    assert all(w in texts for w in many)


def test_the_report_table_fits_a_page_counts_from_one_and_shows_no_na(explained):
    """Issue 30: the report's metrics table ran 2,049 px wide with <NA> cells, counting from 0."""
    page = export.report_html(explained, {}).decode()
    table = page[page.index("<table"): page.index("</table>")]
    header = re.findall(r"<th>([^<]*)</th>", table)
    assert len(header) <= 12 and "&lt;NA&gt;" not in table and "<NA>" not in table and "NaN" not in table
    frame = export.report_table(explained)
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
    page = export.report_html(explained, figures, doc, ["attention: removing <its> top words …"]).decode()
    assert page.count("Plotly.newPlot") == 2 and page.count("/*! For license information") <= 1
    assert "<b>The team</b>" not in page and "&lt;b&gt;The team&lt;/b&gt;" in page
    assert "&lt;its&gt;" in page and "Gini and diagonality" in page
    from html.parser import HTMLParser

    HTMLParser().feed(page)  # parses
