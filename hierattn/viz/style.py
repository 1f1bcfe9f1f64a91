"""The look every figure carries in itself: a colour order and a template, set on the figure by
the builders (``own_style``), so a figure looks the same on the page and in every export."""
from __future__ import annotations

import functools

import plotly.graph_objects as go

# Okabe-Ito, colour-blind safe, in the order series are drawn (viz.svg's README figures use the same)
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
# The look every figure carries in itself. Without it a figure takes plotly's default template,
# which Streamlit sets to a placeholder theme whose colours (rgb(0, 0, 1), ...) only its page
# replaces: the same figure exported drew every line and legend black.
TEMPLATE = go.layout.Template(layout=dict(
    colorway=PALETTE, paper_bgcolor="white", plot_bgcolor="white", font=dict(color="#31333F"),
    xaxis=dict(gridcolor="#E6E9EF", zerolinecolor="#C8CCD4", linecolor="#C8CCD4"),
    yaxis=dict(gridcolor="#E6E9EF", zerolinecolor="#C8CCD4", linecolor="#C8CCD4")))

# A line chart's key, above its plot, from the left. Under the plot, at a paper height, it sat on
# the x axis title once the chart was wide enough for the key to take one row (1920 px); above,
# plotly moves the plot down by the key's height at any width.
LEGEND_ABOVE = dict(orientation="h", x=0, xanchor="left", y=1.02, yanchor="bottom")


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
