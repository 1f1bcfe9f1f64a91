"""Figures made from one unchecked description (``style.built``) are the figures plotly's checking
would make: every variant of every such builder, and a planted mistake the check must catch."""
import numpy as np
import pytest

from hierattn import viz
from hierattn.viz.style import TEMPLATE_JSON, built, checked_equal

MATRIX = np.random.default_rng(0).dirichlet(np.ones(12), 12)  # (12 queries, 12 keys)
WORDS = [f"w{i}<b>" for i in range(11)] + ["unknown†"]

VARIANTS = {
    "probability chart": lambda: viz.probability_chart(["business", "sport", "tech"], [0.2, 0.5, 0.3]),
    "heatmap": lambda: viz.attention_heatmap(MATRIX, WORDS, "word self-attention · head 1"),
    "heatmap, clickable": lambda: viz.attention_heatmap(MATRIX, WORDS, "t", clickable=True),
    "heatmap, fluid on a shared scale": lambda: viz.attention_heatmap(MATRIX, WORDS, "", fluid=True, zmax=0.9),
    "heatmap, compact without a colour bar": lambda: viz.attention_heatmap(MATRIX, WORDS, compact=True,
                                                                           show_scale=False),
    "heatmap of one word": lambda: viz.attention_heatmap(np.ones((1, 1)), ["only"], "t", clickable=True),
    "distribution with its even spread": lambda: viz.distribution_chart(list(MATRIX[0]), WORDS, "over words"),
    "distribution against a reference": lambda: viz.distribution_chart(list(MATRIX[0]), WORDS,
                                                                       reference=(0.3, "random map, 95th")),
    "distribution without a baseline": lambda: viz.distribution_chart(list(MATRIX[0]), WORDS, even=False),
    "distribution over 200 words": lambda: viz.distribution_chart([1 / 200] * 200, [f"w{i}" for i in range(200)]),
    "distribution over 37 sentences": lambda: viz.distribution_chart([1 / 37] * 37, [f"S{i + 1}" for i in range(37)],
                                                                     axis_title="sentence"),
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_an_unchecked_figure_is_the_figure_plotly_checks(variant):
    fig = VARIANTS[variant]()
    assert checked_equal(fig)
    assert fig.layout.template.layout.colorway == tuple(TEMPLATE_JSON["layout"]["colorway"])


def test_the_check_catches_what_plotly_would_refuse_or_rewrite():
    assert not checked_equal(built([dict(type="bar", y=[1, 2])], dict(title="a bare title")))  # plotly: {"text": ...}
    with pytest.raises(ValueError):
        checked_equal(built([dict(type="bar", y=[1, 2], colour="red")], {}))  # no such property


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_built_figure_says_its_size_without_copying_itself(variant, monkeypatch):
    """An explanation keeping a figure for every session counts it in its memory budget
    (``limits.rough_nbytes``): a built figure's size was measured on its description, within a
    factor of two of its description read back, and reading it copies nothing (``to_plotly_json``
    deep-copies every array). A copy made otherwise measures itself the old way."""
    import pickle

    from hierattn.limits import rough_nbytes
    from hierattn.viz.style import SizedFigure

    fig = VARIANTS[variant]()
    read_back = rough_nbytes(fig.to_plotly_json())
    copied = pickle.loads(pickle.dumps(fig))
    assert isinstance(fig, SizedFigure) and read_back / 2 <= fig.nbytes <= 2 * read_back

    def refuse(*_):
        raise AssertionError("a built figure was copied to be measured")

    monkeypatch.setattr(SizedFigure, "to_plotly_json", refuse)
    assert rough_nbytes(fig) == fig.nbytes
    with pytest.raises(AssertionError):
        copied.nbytes  # noqa: B018  no size kept: measured from its description, read back


def test_a_table_is_sized_by_its_cells_without_reading_each_column(monkeypatch):
    import pandas as pd

    from hierattn.limits import rough_nbytes

    table = pd.DataFrame({"map": ["word self-attention"] * 200, "gini": [0.5] * 200, "size": [12] * 200})
    monkeypatch.setattr(pd.DataFrame, "memory_usage", lambda *_, **__: pytest.fail("each column was read"))
    assert rough_nbytes(table) == 64 * 3 + 8 * 200 * 3
    assert rough_nbytes(table["gini"]) == 8 * 200  # a column says its own
