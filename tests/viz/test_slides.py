"""Slides as a reader sees them: every figure builder's slide, drawn by the export to SVG and laid
out by Chromium, has no two pieces of text over one another, and its legend has the figure's own
colours (the page's), never the black of Streamlit's placeholder theme."""
import os
import shutil

import pytest
import torch

from hierattn import viz
from hierattn.viz import export

CHROMIUM = os.environ.get("BROWSER_PATH") or shutil.which("chromium")
pytestmark = pytest.mark.skipif(not CHROMIUM and os.environ.get("CI") != "true",
                                reason="slides are drawn and measured by Chromium (apt-get install -y chromium); "
                                       "CI installs it and runs this")
CLASSES = ["business", "entertainment", "politics", "sport", "tech"]
WORDS = "Pernod takeover talk lifts Domecq shares in early trading".split()
LONG = ("Shares in UK drinks and food firm Allied Domecq have risen on speculation that it could be the target "
        "of a takeover by France's Pernod Ricard, WWWWWWWWWW mmmmmmmmmmmmmm internationalisation.").split()
SUBTITLE = "bbc-news-hcan (HCAN) · “Pernod takeover talk lifts Domecq shares in early trading as…”"

# every text element's corners on the page (its own box through its transform: a slanted tick
# label's upright box overlaps its neighbour's although the slanted words do not) and its class
TEXT_BOXES = """() => [...document.querySelectorAll('svg text')].filter(t => t.textContent.trim()).map(t => {
  const b = t.getBBox(), m = t.getScreenCTM();
  const corners = [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
    .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  let node = t, cls = '';
  while (node && node.getAttribute && !cls) { cls = node.getAttribute('class') || ''; node = node.parentNode; }
  return {text: t.textContent, cls, corners};
})"""
LEGEND_COLOURS = """() => [...document.querySelectorAll('svg .legend .traces')].map(g => {
  const paths = [...g.querySelectorAll('.legendlines path, .legendpoints path, path.legendbox')];
  const colours = paths.map(p => { const s = getComputedStyle(p);
    return s.stroke !== 'none' && s.strokeOpacity !== '0' ? s.stroke : s.fill; });
  return {name: g.querySelector('text').textContent, colour: colours.find(c => c && c !== 'none') || null};
}).concat([...document.querySelectorAll('svg .trace.boxes path.box')].map(p => (
  {name: 'box', colour: getComputedStyle(p).stroke})))"""


def _figures() -> dict:
    """One figure from each builder whose slide a lecture uses, with long class names and words."""
    torch.manual_seed(0)
    matrix = torch.softmax(torch.randn(len(WORDS), len(WORDS)), -1)
    from hierattn.analysis.clark import TARGETS

    rows = [{"layer": layer, **{t: 0.1 + 0.05 * k + 0.02 * layer for k, t in enumerate(TARGETS)},
             **{f"{t}_even": 0.1 for t in TARGETS}} for layer in range(3)]
    return {
        "class probabilities": viz.probability_chart(CLASSES, [0.1, 0.2, 0.3, 0.3, 0.1]),
        "self-attention": viz.attention_heatmap(matrix, viz.marked_words(WORDS, [True] + [False] * 8), "a head"),
        "every head": viz.heads_grid([matrix, matrix], WORDS, ["head 1", "head 2"]),
        "confusion matrix": viz.confusion_heatmap(torch.eye(5).add(1).tolist(), CLASSES),
        "Gini of every matrix, by level": viz.metric_boxes({"word · measured": [0.1, 0.2, 0.3],
                                                            "sentence · measured": [0.3, 0.4]}, "Gini"),
        "where the attention starts": viz.start_sweep_chart(
            {"HCAN": ([0.01, 1.0, 10.0], [0.3, 0.5, 0.6]), "HAN": ([0.01, 1.0, 10.0], [0.2, 0.2, 0.3])},
            "word attention's JSD from even", title="word attention's JSD from even",
            shipped={"HCAN": 1.0, "HAN": 0.01}),
        "distribution": viz.distribution_chart([0.2, 0.3, 0.5], WORDS[:3]),
        "sentence bars": viz.distribution_chart([1 / 37] * 37, [f"S{i + 1}" for i in range(37)], axis_title="sentence"),
        "word bars": viz.distribution_chart([1 / 24] * 24, (WORDS + LONG)[:24]),
        "which heads matter": viz.head_drop_grid(
            [[0.052, -0.011, 0.0], [0.0, 0.021, float("nan")]], ["layer 1", "layer 2"], ["head 1", "head 2", "head 3"],
            [["previous", "no finding", ""], ["", "special", ""]]),
        "erasure curves": viz.erasure_chart([1, 2], {"attention": [0.1, 0.2], "random": [0.0, 0.1]}, "sport",
                                            "words removed"),
        "training curve": viz.training_chart([1.0, 0.8, 0.7, 0.6], [
            {"epoch": 1, "train_loss": 0.9, "val_accuracy": 0.5}, {"epoch": 2, "train_loss": 0.7,
                                                                    "val_accuracy": 0.6}], 2),
        "sharpness": viz.attention_sharpness_chart([
            {"epoch": 1, "attention_gini": 0.2, "attention_diagonality_b3": 0.3,
             "attention_diagonality_b3_even": 0.25},
            {"epoch": 2, "attention_gini": 0.3, "attention_diagonality_b3": 0.35,
             "attention_diagonality_b3_even": 0.25}]),
        "registry lines": viz.lines_chart({"han": ([10, 20], [0.5, 0.6]), "hcan": ([10, 20], [0.4, 0.7])},
                                          "input length q (words)", "test accuracy", "(test split)"),
        "clark layers": viz.clark_layers(rows, "[CLS]"),
        "where each model looks": viz.shaded_text([
            (f"{slot}: bbc-news-{kind} ({kind.upper()})", [WORDS, LONG] * 8,
             [[0.01 * (k % 7) for k in range(len(WORDS))], [0.02] * len(LONG)] * 8,
             [[True] + [False] * (len(WORDS) - 1), [False] * len(LONG)] * 8)
            for slot, kind in (("A", "han"), ("B", "hcan"))], peak=0.06),
    }


@pytest.fixture(scope="module")
def laid_out():
    """Each figure's slide as SVG, laid out in Chromium: name -> (text boxes, legend colours, figure).
    In a thread of its own: the system tier's browser keeps Playwright's event loop running in
    this one for the whole session."""
    from concurrent.futures import ThreadPoolExecutor

    from playwright.sync_api import sync_playwright

    def lay_out() -> dict:
        out = {}
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": export.SLIDE[0], "height": export.SLIDE[1]})
            for name, fig in _figures().items():
                svg = export.figure_bytes(fig, "svg", name, SUBTITLE).decode()
                page.set_content(f"<html><body style='margin:0'>{svg}</body></html>")
                out[name] = (page.evaluate(TEXT_BOXES), page.evaluate(LEGEND_COLOURS), fig)
            browser.close()
        return out

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lay_out).result()


def _apart(a: list, b: list, tolerance: float) -> bool:
    """Whether two convex quadrilaterals (corner lists) are apart by more than ``-tolerance`` px
    along some edge's normal (the separating axis test)."""
    for quad in (a, b):
        for k in range(4):
            (x0, y0), (x1, y1) = quad[k], quad[(k + 1) % 4]
            nx, ny = y0 - y1, x1 - x0
            norm = (nx * nx + ny * ny) ** 0.5 or 1.0
            pa = [(x * nx + y * ny) / norm for x, y in a]
            pb = [(x * nx + y * ny) / norm for x, y in b]
            if max(pa) - tolerance <= min(pb) or max(pb) - tolerance <= min(pa):
                return True
    return False


def overlapping(boxes: list[dict], tolerance: float = 1.0) -> list[tuple[str, str]]:
    """Pairs of texts whose boxes overlap by more than ``tolerance`` px (a heatmap's cell numbers
    never meet one another; they are left out of the pairs among themselves)."""
    found = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if a["cls"] == b["cls"] == "textpoint":
                continue
            if not _apart(a["corners"], b["corners"], tolerance):
                found.append((f"{a['text'][:30]} ({a['cls']})", f"{b['text'][:30]} ({b['cls']})"))
    return found


def test_the_overlap_check_finds_text_over_text():
    """The check itself: two boxes across each other are found; side by side, they are not."""
    def box(text, x, y, w=20, h=10, slant=0.0):
        import math

        c, s = math.cos(slant), math.sin(slant)
        return {"text": text, "cls": "xtick", "corners": [(x + c * px - s * py, y + s * px + c * py)
                                                          for px, py in ((0, 0), (w, 0), (w, h), (0, h))]}

    assert overlapping([box("a", 0, 0), box("b", 10, 5)]) == [("a (xtick)", "b (xtick)")]
    assert overlapping([box("a", 0, 0), box("b", 21, 0)]) == []
    # two long labels slanted by 60 degrees, 14 px apart: their upright boxes overlap, the words do not
    assert overlapping([box("a", 0, 0, 80, 10, -1.05), box("b", 14, 0, 80, 10, -1.05)]) == []
    assert overlapping([box("a", 0, 0, 80, 10, -1.05), box("b", 6, 0, 80, 10, -1.05)]) != []


@pytest.mark.parametrize("name", list(_figures()))
def test_no_text_overlaps_on_a_slide(laid_out, name):
    boxes, _, _ = laid_out[name]
    texts = " ".join(b["text"] for b in boxes)
    assert name[:1].upper() + name[1:] in texts and SUBTITLE[:20] in texts, texts[:200]  # title and subtitle
    assert overlapping(boxes) == [], name


def _rgb(colour: str) -> str:
    colour = colour.lstrip("#")
    return f"rgb({int(colour[0:2], 16)}, {int(colour[2:4], 16)}, {int(colour[4:6], 16)})"


@pytest.mark.parametrize("name", ["where the attention starts", "Gini of every matrix, by level", "registry lines",
                                  "training curve", "erasure curves"])
def test_a_slides_legend_has_the_figures_own_colours(laid_out, name):
    """The colour each legend entry draws on the slide is the trace's own (set in the figure or by
    its place in ``viz.PALETTE``), as on the page: the sweep's lines once exported black."""
    _, legend, fig = laid_out[name]
    shown = [t for t in fig.data if t.showlegend is not False]
    if name == "Gini of every matrix, by level":  # no legend: each box's outline in its own colour
        boxes = [entry["colour"] for entry in legend if entry["name"] == "box"]
        assert boxes == [_rgb(c) for c in viz.PALETTE[:len(fig.data)]]
        return
    assert [entry["name"] for entry in legend] == [t.name for t in shown]
    for entry, trace in zip(legend, shown):
        own = trace.line.color or trace.marker.color or viz.PALETTE[fig.data.index(trace) % len(viz.PALETTE)]
        assert entry["colour"] == _rgb(own), (entry, own)
        assert not entry["colour"].startswith("rgb(0, 0, "), entry  # Streamlit's placeholders: rgb(0, 0, 1)...


def test_every_figure_carries_its_own_template_whatever_the_default():
    """Streamlit sets plotly's default template to its placeholder theme when it is imported; a
    figure built afterwards still carries ``viz.TEMPLATE``'s colours."""
    import plotly.io as pio
    import streamlit.elements.plotly_chart  # noqa: F401 (sets pio.templates.default to "streamlit")

    assert pio.templates.default == "streamlit"
    for name, fig in _figures().items():
        assert list(fig.layout.template.layout.colorway) == list(viz.PALETTE), name
        assert fig.layout.template.layout.paper_bgcolor == "white", name


@pytest.mark.parametrize("kind", ["sentences", "words"])
def test_bars_name_what_they_can_clear_of_one_another_in_half_a_1024_px_page(kind):
    """The page's own drawing (plotly.js in Chromium), one of two columns at 1024 px: the labels of
    37 sentences, or of a 24-word sentence, stand clear of one another, in order, from the first
    bar. The same bars with a label for every bar at a fixed slant (the drawing before) overprint
    there, so the check can fail."""
    from concurrent.futures import ThreadPoolExecutor

    from playwright.sync_api import sync_playwright

    from hierattn.viz.figures import HALF_COLUMN, category_names

    labels = [f"S{i + 1}" for i in range(37)] if kind == "sentences" else (WORDS + LONG)[:24]
    weights = [(i % 7 + 1) for i in range(len(labels))]

    def ticks(every_bar: bool) -> list[dict]:
        fig = viz.distribution_chart([w / sum(weights) for w in weights], labels)
        if every_bar:
            fig.update_xaxes(tickmode="array", tickvals=list(fig.data[0].x), ticktext=list(fig.data[0].x),
                             tickangle=-60)
        html = fig.to_html(include_plotlyjs=True, full_html=True, default_width=f"{HALF_COLUMN}px",
                           config={"staticPlot": True})
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1024, "height": 600})
            page.set_content(html)
            page.wait_for_selector("svg .xtick text")
            boxes = [b for b in page.evaluate(TEXT_BOXES) if b["cls"] == "xtick"]
            browser.close()
        return boxes

    with ThreadPoolExecutor(1) as pool:
        named, every_bar = pool.submit(ticks, False).result(), pool.submit(ticks, True).result()
    shown = [b["text"] for b in named]
    assert overlapping(named) == [] and 4 <= len(shown) < len(labels), shown
    at = [category_names(labels).index(text) for text in shown]  # each names its own bar, in reading order
    assert at[0] == 0 and at == sorted(at) and at[-1] >= len(labels) * 3 // 4, shown
    assert overlapping(every_bar) != []
