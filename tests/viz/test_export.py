"""Exports (issue 8): figures decode, reports load, tables and JSON parse."""
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
@pytest.mark.skipif(not HAVE_BROWSER and os.environ.get("CI") != "true", reason="PNG/SVG are drawn by Chromium "
                                                                                "(apt-get install -y chromium); CI "
                                                                                "installs it and runs this")
def test_figure_as_png_and_svg(explained):
    png = export.figure_bytes(_figure(explained), "png")
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    from PIL import Image

    image = Image.open(io.BytesIO(png))
    assert image.size == (1800, 2 * (60 + 32 * 4))  # twice the figure's size, for slides
    svg = export.figure_bytes(_figure(explained), "svg")
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg") and "business" in svg.decode()


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
