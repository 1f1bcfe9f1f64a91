import pytest
import torch

from hierattn import viz


def test_document_html_escapes_user_text():
    text = "<script>alert(1)</script> & <b>bold</b>"
    spans = [(0, len(text), [(0, 8), (31, 34)])]
    out = viz.document_html(text, spans, [[0.7, 0.3]], [1.0])
    assert "<script>" not in out and "<b>" not in out
    assert "&lt;script&gt;" in out and "&amp;" in out and "&lt;b&gt;" in out


def test_document_html_shades_by_weight():
    text = "good bad. ok"
    spans = [(0, 9, [(0, 4), (5, 8)]), (10, 12, [(10, 12)])]
    out = viz.document_html(text, spans, [[0.8, 0.2], [0.4]], None)
    assert 'title="weight 0.800"' in out and 'title="weight 0.200"' in out
    # one scale for the document: the largest weight (0.8) is darkest (alpha 0.85)
    assert "--a:0.850" in out and "--a:0.212" in out and "--a:0.425" in out
    # per sentence: "ok" is its sentence's top word
    per_sentence = viz.document_html(text, spans, [[0.8, 0.2], [0.4]], None, scale="sentence")
    assert per_sentence.count("--a:0.850") == 2


def test_heatmap_keeps_repeated_words_apart():
    labels = ["the", "cat", "saw", "the", "dog"]
    fig = viz.attention_heatmap(torch.eye(5), labels)
    assert list(fig.layout.xaxis.tickvals) == [0, 1, 2, 3, 4]
    assert list(fig.layout.yaxis.ticktext) == labels
    assert fig.data[0].z[3][3] == 1.0 and fig.layout.yaxis.autorange == "reversed"


def test_plotly_labels_are_escaped():
    fig = viz.attention_heatmap(torch.eye(1), ["<br><b>x"])
    assert fig.layout.xaxis.ticktext[0] == "&lt;br&gt;&lt;b&gt;x"


def test_probability_chart_highlights_the_prediction():
    fig = viz.probability_chart(["a", "b", "c"], [0.2, 0.7, 0.1])
    assert fig.data[0].marker.color[1] != fig.data[0].marker.color[0]
    assert list(fig.data[0].text) == ["20.0%", "70.0%", "10.0%"]
    assert list(fig.data[0].textposition) == ["outside", "inside", "outside"]  # every bar labelled


def test_compact_heatmap_is_a_small_multiple_with_its_words():
    """Side-by-side heads keep their words (they once had no axis labels or colour bar), share
    a scale, and the last of a row draws the colour bar."""
    fig = viz.attention_heatmap(torch.eye(3), ["a", "b", "c"], "head 1", compact=True, zmax=0.5, show_scale=False)
    assert list(fig.layout.xaxis.ticktext) == ["a", "b", "c"] == list(fig.layout.yaxis.ticktext)
    assert fig.data[0].showscale is False and fig.data[0].zmax == 0.5
    assert fig.data[0].customdata[0][1] == "a → b"  # tokens on hover too
    assert viz.attention_heatmap(torch.eye(3), ["a", "b", "c"], compact=True, show_scale=True).data[0].showscale


def test_heatmap_colour_bar_is_as_tall_as_its_cells():
    """The colour bar spans the plot area, which is now exactly the cells: the figure sets its own
    size (square cells) instead of stretching to its column (where the bar ran twice the cells' height)."""
    for n in (3, 12, 40):
        fig = viz.attention_heatmap(torch.eye(n), [f"w{i}" for i in range(n)], "t")
        m = fig.layout.margin
        width, height = fig.layout.width - m.l - m.r, fig.layout.height - m.t - m.b
        assert width == height  # square: the plot area is the cells
        assert fig.data[0].colorbar.len == 1 and fig.data[0].colorbar.lenmode == "fraction"
        assert fig.layout.yaxis.scaleanchor is None  # nothing shrinks the cells inside the plot area


def _pitch(fig, axis: str) -> float:
    """Pixels between two named labels of ``axis`` along the cells, for a figure of its own width."""
    layout = fig.layout
    cells = layout.width - layout.margin.l - layout.margin.r
    values = list(getattr(layout, axis).tickvals)
    return cells / len(layout.meta["labels"]) * ((values[1] - values[0]) if len(values) > 1 else 1)


@pytest.mark.parametrize("n", [12, 24, 40, 60, 200])
def test_a_heatmaps_labels_stand_clear_of_one_another_in_a_1024_px_column(n):
    """Every word is named while its label fits; beyond, smaller labels (down to 9 px), then every
    k-th, in order, so that slanted labels stand 1.3 font sizes apart across a cell x sin 60 and
    rows 1.3 font sizes apart. The figure is never wider than a 1024 px page's column (a wider one
    was squeezed into it: 24 words at 12 px overprinted by 3 px, and the cells were not square)."""
    from hierattn.viz.figures import LEAST_FONT, PAGE_COLUMN

    fig = viz.attention_heatmap(torch.eye(n), [f"w{i}" for i in range(n)])
    assert fig.layout.width <= PAGE_COLUMN
    for axis, apart in (("xaxis", 0.87), ("yaxis", 1.0)):
        ticks = getattr(fig.layout, axis)
        assert LEAST_FONT <= ticks.tickfont.size <= 12
        assert _pitch(fig, axis) * apart >= 1.3 * ticks.tickfont.size, (axis, n)
        step = list(ticks.tickvals)[1] - list(ticks.tickvals)[0]
        assert list(ticks.ticktext) == [f"w{i}" for i in range(0, n, step)]
    if n == 12:
        assert len(fig.layout.xaxis.ticktext) == len(fig.layout.yaxis.ticktext) == 12
        assert fig.layout.xaxis.tickfont.size == 12


def test_training_chart_keeps_the_live_curve_small():
    losses = [1.0 / (i + 1) for i in range(2000)]
    history = [{"epoch": 1, "train_loss": 0.5, "val_accuracy": 0.7}, {"epoch": 2, "train_loss": 0.3,
                                                                      "val_accuracy": 0.8}]
    fig = viz.training_chart(losses, history, steps_per_epoch=1000)
    batch = fig.data[0]
    assert len(batch.y) <= 400 and batch.x[-1] == pytest.approx(2.0)
    assert batch.y[0] == pytest.approx(sum(losses[:5]) / 5)  # block means, not dropped points
    assert list(fig.data[2].y) == [0.7, 0.8] and fig.data[2].yaxis == "y2"
    sharp = viz.attention_sharpness_chart([{"epoch": 1, "attention_gini": 0.4, "attention_diagonality_b3": 0.6}])
    assert [list(t.y) for t in sharp.data] == [[0.4], [0.6]]


def test_block_overview_keeps_rows_summing_to_one():
    import torch

    from hierattn.viz.figures import block_overview

    torch.manual_seed(0)
    m = torch.softmax(torch.randn(10, 10), -1)
    blocks = block_overview(m, 4)  # blocks 0-3, 4-7, 8-9
    assert len(blocks) == 3 and all(len(r) == 3 for r in blocks)
    assert all(abs(sum(r) - 1) < 1e-6 for r in blocks)  # float32 softmax rows
    assert blocks[2][1] == __import__("pytest").approx(m[8:10, 4:8].sum(1).mean().item(), abs=1e-6)


def test_a_long_word_axis_keeps_its_words():
    """A long document's word axis is labelled with its words, one in five or six (HA-LSTM, MahNN and
    ON-LSTM once numbered it 0-120); bars over words are named by their words, as many as fit."""
    words = [f"w{i}" for i in range(300)]
    fig = viz.matrix_heatmap(torch.rand(3, 300), ["c1", "c2", "c3"], words)
    assert fig.layout.xaxis.tickmode == "array" and set(fig.layout.xaxis.ticktext) <= set(words)
    assert 50 <= len(fig.layout.xaxis.ticktext) <= 60
    fig = viz.matrix_heatmap(torch.rand(300, 4), words, ["1 back", "2 back", "3 back", "4 back"])
    assert set(fig.layout.yaxis.ticktext) <= set(words) and len(fig.layout.yaxis.ticktext) >= 50
    gates = viz.distribution_chart([0.5] * 300, words, reference=(0.5, "even split"))
    assert list(gates.data[0].x) == words and gates.layout.xaxis.tickmode == "auto"  # named as the width allows


def test_bars_are_categories_the_browser_names_as_the_width_allows_and_a_repeated_word_keeps_its_bar():
    """Every bar is a category of its own (plotly.js names as many as the chart's width allows;
    tests/viz/test_slides.py draws them): a word that repeats gets a name drawn the same but not
    equal, so that its two bars stay two, and a label is escaped as plotly reads HTML."""
    words = ["the", "cat", "saw", "the", "dog", "<b>the"]
    fig = viz.distribution_chart([1 / 6] * 6, words)
    assert fig.layout.xaxis.type == "category" and fig.layout.xaxis.tickmode == "auto"
    names = list(fig.data[0].x)
    assert len(set(names)) == 6 and [n.replace("\u200b", "").replace("\u200c", "") for n in names] == [
        "the", "cat", "saw", "the", "dog", "&lt;b&gt;the"]
    assert names[3] != names[0] and list(fig.data[0].customdata) == ["the", "cat", "saw", "the", "dog", "&lt;b&gt;the"]
    assert list(fig.layout.meta["labels"]) == words  # the export's and the slide's labels, as read


def test_bars_stay_apart_whatever_the_text_holds_and_a_common_words_names_stay_short():
    """A word pasted with a zero-width space in it is a category of its own too (a repeat of "the"
    once took its name, and the two bars were drawn as one), and the 200th "the" of a long document
    is named in a few characters, not 199 more."""
    from hierattn.viz.figures import category_names

    words = ["the", "the\u200b", "the", "the\u200b", "the\u200c", "the"]
    assert len(set(category_names(words))) == len(words)
    assert len(set(viz.distribution_chart([1 / 6] * 6, words).data[0].x)) == 6
    names = category_names(["the"] * 200)
    assert len(set(names)) == 200 and max(map(len, names)) <= len("the") + 9


def test_the_heads_grid_shares_one_scale_and_names_the_words():
    words = ["the", "cat", "sat", "down"]
    heads = [torch.eye(4), torch.full((4, 4), 0.25), torch.softmax(torch.rand(4, 4), -1)]
    fig = viz.heads_grid(heads, words, ["head 1", "head 2", "head 3"], per_row=2)
    assert len(fig.data) == 3 and {t.coloraxis for t in fig.data} == {"coloraxis"}  # one colour bar for all
    assert fig.layout.coloraxis.cmin == 0 and fig.layout.coloraxis.cmax == 1.0
    for axis in ("xaxis", "yaxis", "xaxis2", "yaxis3"):
        assert list(fig.layout[axis].ticktext) == words
    assert [a.text for a in fig.layout.annotations] == ["head 1", "head 2", "head 3"]


def test_a_clickable_heatmap_has_a_point_on_every_cell():
    """Streamlit's chart selection returns nothing for a heatmap's cells; the invisible markers are
    what a click selects, and their y is the query's row."""
    fig = viz.attention_heatmap(torch.eye(3), ["a", "b", "c"], clickable=True)
    points = fig.data[1]
    assert len(points.x) == 9 and points.marker.opacity == 0 and list(points.y[:3]) == [0, 0, 0]
    assert fig.layout.clickmode == "event+select"


def test_the_clark_layer_table_is_laid_out_as_its_chart_with_the_even_spread_once():
    targets = ("first special", "other specials", "punctuation", "self", "previous", "next")
    layers = [{"layer": i, "entropy": 2.0 + i, "entropy_even": 3.0, **{t: 0.1 * (i + 1) for t in targets},
               **{f"{t}_even": 0.05 for t in targets}} for i in range(3)]
    table = viz.clark_layer_table(layers, "[CLS]")
    assert list(table.columns) == ["", "even", "layer 1", "layer 2", "layer 3"]
    assert table[""].tolist()[0] == "to [CLS]" and table[""].tolist()[-1] == "entropy (nats)"
    assert table.iloc[0].tolist() == ["to [CLS]", "5.0%", "10.0%", "20.0%", "30.0%"]
    assert table.iloc[-1].tolist() == ["entropy (nats)", "3.00", "2.00", "3.00", "4.00"]
    layers[2]["self_even"] = 0.07  # an even value that differs between layers is shown as its range
    assert viz.clark_layer_table(layers, "[CLS]").iloc[3]["even"] == "5.0% to 7.0%"
    over = [{**r, "previous": (0.5, 0.4, 0.6)} for r in layers]  # over documents: the mean and its interval
    assert viz.clark_layer_table(over).iloc[4]["layer 1"] == "50.0% [40.0, 60.0]"
    assert viz.clark_layer_table(over).iloc[0][""] == "to the first special token"


def test_the_clark_chart_says_what_its_dotted_lines_are_in_its_legend():
    targets = ("first special", "other specials", "punctuation", "self", "previous", "next")
    layers = [{"layer": i, **{t: 0.1 for t in targets}, **{f"{t}_even": 0.05 for t in targets}} for i in range(2)]
    fig = viz.clark_layers(layers, "<s>")
    named = [t.name for t in fig.data if t.showlegend is not False]
    assert named[0] == "to <s>" and named[-1].startswith("dotted: an even spread")
    assert fig.layout.legend.orientation == "h" and "dotted" not in fig.layout.yaxis.title.text


def test_a_heatmap_says_when_it_names_only_every_kth_word():
    from hierattn.viz.export import slide
    from hierattn.viz.figures import every_kth

    assert every_kth("query", 30, 30) == "query"
    assert every_kth("query", 31, 30) == "query: every 2nd of 31 named"
    assert every_kth("query", 2_000, 30) == "query: every 67th of 2,000 named"
    assert every_kth("query", 3_000, 30) == "query: every 100th of 3,000 named"
    assert every_kth("query", 330, 30) == "query: every 11th of 330 named"
    short, long = (viz.attention_heatmap(torch.eye(n), [f"w{i}" for i in range(n)]) for n in (20, 200))
    assert short.layout.xaxis.title.text == "attends to (key)" and short.layout.yaxis.title.text == "query"
    across, down = (list(getattr(long.layout, a).tickvals)[1] for a in ("xaxis", "yaxis"))
    assert long.layout.xaxis.title.text == every_kth("attends to (key)", 200, -(-200 // across))
    assert long.layout.yaxis.title.text == every_kth("query", 200, -(-200 // down))
    assert across > 1 and down > 1
    shown = slide(long, "a title")  # a slide names as many as its slanted labels leave room for, and says so
    step = list(shown.layout.yaxis.tickvals)[1]
    assert step >= 2 and shown.layout.yaxis.title.text == every_kth("query", 200, -(-200 // step))
    assert f"every {step}" in shown.layout.yaxis.title.text


def test_the_head_grids_key_sits_under_it_where_a_slides_subtitle_cannot_cover_it():
    import numpy as np

    labels = [["previous 90%"] * 12 for _ in range(2)]
    fig = viz.head_grid(np.full((2, 12), 0.5), labels, ["layer 1", "layer 2"], [f"head {h + 1}" for h in range(12)])
    key = [a for a in fig.layout.annotations if a.text.startswith("prev: the previous token")]
    assert len(key) == 1 and key[0].y == 0 and key[0].yanchor == "top" and fig.layout.xaxis.side == "top"
    assert fig.layout.xaxis.title.text is None


@pytest.mark.parametrize("n", [7, 30])
def test_a_fluid_heatmaps_labels_fit_the_half_column_of_a_1024_px_page(n):
    """Two fluid maps side by side (Compare, the trust panel) get 272 px each at 1024 px (measured:
    83 px of cells before the colour bar's title moved above it): labels fit there, and a short
    sentence keeps every word."""
    from hierattn.viz.figures import HALF_COLUMN

    fig = viz.attention_heatmap(torch.eye(n), [f"word{i}" for i in range(n)], "a map", fluid=True)
    cells = HALF_COLUMN - fig.layout.margin.l - fig.layout.margin.r
    ticks = fig.layout.xaxis
    step = list(ticks.tickvals)[1] - list(ticks.tickvals)[0]
    assert cells / n * step * 0.87 >= 1.3 * ticks.tickfont.size
    assert (step == 1) == (n == 7)
