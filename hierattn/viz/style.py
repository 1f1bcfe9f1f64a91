"""The look every figure carries in itself: a colour order and a template, set on the figure by
the builders (``own_style``), so a figure looks the same on the page and in every export."""
from __future__ import annotations

import functools

import plotly.graph_objects as go

from hierattn.limits import rough_nbytes

# Okabe-Ito, colour-blind safe, in the order series are drawn (viz.svg's README figures use the same)
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
# The look every figure carries in itself. Without it a figure takes plotly's default template,
# which Streamlit sets to a placeholder theme whose colours (rgb(0, 0, 1), ...) only its page
# replaces: the same figure exported drew every line and legend black.
TEMPLATE = go.layout.Template(layout=dict(
    colorway=PALETTE, paper_bgcolor="white", plot_bgcolor="white", font=dict(color="#31333F"),
    xaxis=dict(gridcolor="#E6E9EF", zerolinecolor="#C8CCD4", linecolor="#C8CCD4"),
    yaxis=dict(gridcolor="#E6E9EF", zerolinecolor="#C8CCD4", linecolor="#C8CCD4")))

TEMPLATE_JSON = TEMPLATE.to_plotly_json()

# A line chart's key, above its plot, from the left. Under the plot, at a paper height, it sat on
# the x axis title once the chart was wide enough for the key to take one row (1920 px); above,
# plotly moves the plot down by the key's height at any width.
LEGEND_ABOVE = dict(orientation="h", x=0, xanchor="left", y=1.02, yanchor="bottom")


def styled_layout(layout: dict) -> dict:
    """``layout`` with the look every figure carries (``TEMPLATE``, ``PALETTE``), and a key above
    the plot moving the toolbar to the right side, not over the key's first row."""
    out = {"template": TEMPLATE_JSON, "colorway": list(PALETTE), **layout}
    if (out.get("legend") or {}).get("y", 0) > 1:
        out["modebar"] = {"orientation": "v"}
    return out


def built(data: list[dict], layout: dict) -> go.Figure:
    """A figure made from its whole description at once (traces as dicts with their ``type``, the
    layout with its look from ``styled_layout``), without plotly's checking of each property.

    Why: the page draws several figures on every paste, and plotly's figure objects check every
    property as it is set, template included: a word heatmap took 33 ms and a bar chart of one
    sentence 25 ms to build, against well under a millisecond from one description unchecked. That
    was the largest share of a paste's server time after the model. The checking is not lost: a test
    builds every figure made this way, in each of its variants, and requires that plotly's checked
    figure of the same description passes and is the same figure (``checked_equal``); so a figure
    made here must already be in the form the check leaves (a title as ``{"text": ...}``, a colour
    scale as its steps). ``_validate`` is plotly's own switch for this, there since plotly 4."""
    description = {"data": data, "layout": styled_layout(layout)}
    fig = SizedFigure(description, _validate=False)
    fig._described_bytes = rough_nbytes(description)
    return fig


class SizedFigure(go.Figure):
    """A figure that says about how much memory it holds (``nbytes``, which ``limits.rough_nbytes``
    reads when an explanation keeps the figure for every session), measured by ``built`` on the
    description it was made from. Why: read back through ``to_plotly_json``, a figure deep-copies
    every array it holds, 3.1 ms for a word heatmap, on every new paste. A copy made otherwise (a
    pickle, ``go.Figure(fig)``) is measured that way when asked."""

    @property
    def nbytes(self) -> int:
        known = getattr(self, "_described_bytes", None)
        return known if known is not None else rough_nbytes(self.to_plotly_json())


def checked_equal(fig: go.Figure) -> bool:
    """Whether plotly's checked figure of ``fig``'s description passes and draws the same (the same
    JSON): the contract of every figure ``built`` makes. Raises plotly's ValueError where a
    property is not one plotly knows."""
    import json

    import plotly.io as pio

    return json.loads(pio.to_json(fig, validate=False)) == json.loads(pio.to_json(go.Figure(fig.to_dict())))


def own_style(build):
    """A figure builder whose figure sets its own template and colour order (``TEMPLATE``,
    ``PALETTE``), so the page and every export draw the same colours."""
    @functools.wraps(build)
    def styled(*args, **kwargs) -> go.Figure:
        fig = build(*args, **kwargs)
        fig.update_layout(template=TEMPLATE, colorway=PALETTE)
        if fig.layout.legend.y is not None and fig.layout.legend.y > 1:  # a key above: the toolbar goes down
            fig.update_layout(modebar=dict(orientation="v"))  # the right side, not over the key's first row
        return fig
    return styled
