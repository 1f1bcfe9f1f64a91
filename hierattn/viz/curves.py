"""Line charts: training curves and the attention's sharpness per epoch, erasure curves, the
registry's recorded series and the sweep of where the attention starts. Plain lists in, plotly
figures out; never a model, never Streamlit."""
from __future__ import annotations

import html
import math
from collections.abc import Sequence

import plotly.graph_objects as go

from hierattn.viz.figures import short
from hierattn.viz.style import LEGEND_ABOVE, PALETTE, own_style

# both axes start at 0 on an epoch chart: the y axis's "0" moved off the x axis's, which it met
# at the corner
CORNER = dict(ticklabelstandoff=6)


@own_style
def training_chart(losses: Sequence[float], history: Sequence[dict], steps_per_epoch: int) -> go.Figure:
    """Training loss per batch (thin) and per epoch, with validation accuracy on a second axis.

    ``history``: one dict per finished epoch with ``epoch``, ``train_loss``, ``val_accuracy``.
    """
    fig = go.Figure()
    if losses:
        # At most ~400 points (block means): the page redraws this every second during training.
        block = -(-len(losses) // 400)
        y = [sum(losses[i:i + block]) / len(losses[i:i + block]) for i in range(0, len(losses), block)]
        x = [min(i + block, len(losses)) / max(steps_per_epoch, 1) for i in range(0, len(losses), block)]
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name="loss (batch)",
                                 line=dict(color="#aec7e8", width=1), hovertemplate="loss %{y:.3f}<extra></extra>"))
    if history:
        epochs = [h["epoch"] for h in history]
        fig.add_trace(go.Scatter(x=epochs, y=[h["train_loss"] for h in history], mode="lines+markers",
                                 name="loss (epoch mean)", line=dict(color="#1f77b4")))
        fig.add_trace(go.Scatter(x=epochs, y=[h["val_accuracy"] for h in history], mode="lines+markers",
                                 name="validation accuracy", yaxis="y2", line=dict(color="#ff7f0e")))
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=10, b=10), legend=LEGEND_ABOVE,
                      xaxis=dict(title="epoch", rangemode="tozero"), yaxis=dict(title="training loss",
                                                                                rangemode="tozero", **CORNER),
                      yaxis2=dict(title="validation accuracy", overlaying="y", side="right", tickformat=".0%",
                                  range=[0, 1.02], dtick=0.2, showgrid=False))
    return fig


def titled_key(title: str) -> dict:
    """The key above the plot, led by the chart's ``title`` (e.g. a figure's part, "(a)"): a
    plotly title above the key met it once the key wrapped in a narrow column, and a slide
    replaces the plotly title with its own."""
    return {**LEGEND_ABOVE, "title": dict(text=title, side="left")} if title else LEGEND_ABOVE


@own_style
def attention_sharpness_chart(history: Sequence[dict]) -> go.Figure:
    """Validation-set mean Gini and diagonality (b=3) of the self-attention, per epoch, and the
    diagonality an even spread gives over the same matrices (dashed; an even spread's Gini is 0)."""
    fig = go.Figure()
    rows = [h for h in history if "attention_gini" in h]
    epochs = [h["epoch"] for h in rows]
    fig.add_trace(go.Scatter(x=epochs, y=[h["attention_gini"] for h in rows], mode="lines+markers", name="Gini",
                             line=dict(color="#1f77b4")))
    fig.add_trace(go.Scatter(x=epochs, y=[h["attention_diagonality_b3"] for h in rows], mode="lines+markers",
                             name="diagonality b=3", line=dict(color="#2ca02c")))
    even = [(h["epoch"], h["attention_diagonality_b3_even"]) for h in rows if "attention_diagonality_b3_even" in h]
    if even:
        fig.add_trace(go.Scatter(x=[e for e, _ in even], y=[v for _, v in even], mode="lines",
                                 name="diagonality b=3, even spread", line=dict(color="#2ca02c", dash="dash")))
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=10, b=10), legend=LEGEND_ABOVE,
                      xaxis=dict(title="epoch", rangemode="tozero"),
                      yaxis=dict(title="validation mean", tickformat=".0%", range=[0, 1.02], **CORNER))
    return fig


_METHOD_STYLE = {"attention": ("#1f77b4", "solid"), "gradient × input": ("#ff7f0e", "solid"),
                 "leave-one-out": ("#2ca02c", "solid"), "sentence attention × even words": ("#8c564b", "dot"),
                 "random": ("#7f7f7f", "dash")}


@own_style
def erasure_chart(steps: Sequence[float], drops: dict[str, Sequence[float]], label: str, x_title: str,
                  percent_x: bool = False) -> go.Figure:
    """Erasure curves: the drop in P(``label``) (in points) after removing each method's top words,
    one line per method, random dashed. ``steps``: words removed, or shares of the document
    (``percent_x``)."""
    fig = go.Figure()
    for method, values in drops.items():
        color, dash = _METHOD_STYLE.get(method, ("#9467bd", "solid"))
        fig.add_trace(go.Scatter(x=list(steps), y=[100 * v for v in values], mode="lines+markers", name=method,
                                 line=dict(color=color, dash=dash), marker=dict(size=5),
                                 hovertemplate=f"{html.escape(method, quote=False)}: %{{y:.1f}} points<extra></extra>"))
    fig.update_layout(height=400, margin=dict(l=10, r=10, t=10, b=10),
                      legend=LEGEND_ABOVE,
                      xaxis=dict(title=x_title, tickformat=".0%" if percent_x else None),
                      yaxis=dict(title=f"drop in P({short(label, 30)}), points", zeroline=True))
    return fig


@own_style
def lines_chart(series: dict[str, tuple[Sequence[float], Sequence[float | None]]], x_title: str, y_title: str,
                title: str = "") -> go.Figure:
    """One line per series: name -> (x values, y values; None leaves a gap). The registry's figures
    (HA-LSTM's input length, MahNN's Figure 4, HCAN's Figure 3) in the app."""
    fig = go.Figure()
    for name, (xs, ys) in series.items():
        fig.add_trace(go.Scatter(x=list(xs), y=list(ys), mode="lines+markers", name=name, connectgaps=False,
                                 hovertemplate=f"{name}<br>{x_title} %{{x}}<br>{y_title} %{{y:.2%}}<extra></extra>"))
    fig.update_layout(height=360, margin=dict(l=10, r=10, t=10, b=10),
                      xaxis=dict(title=x_title), yaxis=dict(title=y_title, tickformat=".0%"),
                      legend=titled_key(title))
    return fig


SHIPPED_KEY = "shipped checkpoint's start"


@own_style
def start_sweep_chart(points: dict[str, tuple[Sequence[float], Sequence[float]]], y_title: str,
                      percent: bool = False, title: str = "", shipped: dict[str, float] | None = None,
                      x_title: str = "variance of the query vector at the start (log scale)",
                      log_x: bool = True) -> go.Figure:
    """One marker per recorded seed and a line through each start's mean: series name -> (start
    variances, values). The x axis is logarithmic (the starts span 1/d to 10); the y axis starts at
    zero, so a flat attention looks flat. ``shipped``: series name -> the start of the checkpoint the
    app ships, ringed at that start's mean, so a reader sees where the model they explore sits.
    ``x_title`` and ``log_x``: the same chart over another axis of the sweep (training length)."""
    fig = go.Figure()
    shipped = shipped or {}
    for k, (name, (xs, ys)) in enumerate(points.items()):
        colour = PALETTE[k % len(PALETTE)]  # a series' seeds and its mean in one colour
        fig.add_trace(go.Scatter(x=list(xs), y=list(ys), mode="markers", name=f"{name}, each seed",
                                 marker=dict(size=7, opacity=0.55, color=colour), legendgroup=name, showlegend=False,
                                 hovertemplate=f"{name}<br>start variance %{{x:g}}<br>{y_title} "
                                               f"%{{y:{'.1%' if percent else '.3f'}}}<extra></extra>"))
        by_x: dict[float, list[float]] = {}
        for x, y in zip(xs, ys):
            by_x.setdefault(x, []).append(y)
        mean_x = sorted(by_x)
        means = {x: sum(by_x[x]) / len(by_x[x]) for x in mean_x}
        fig.add_trace(go.Scatter(x=mean_x, y=[means[x] for x in mean_x], mode="lines",
                                 name=name, legendgroup=name, hoverinfo="skip", line=dict(color=colour)))
        at = next((x for x in mean_x if name in shipped and math.isclose(x, shipped[name], rel_tol=1e-6)), None)
        if at is not None:
            first = not any(t.name == SHIPPED_KEY for t in fig.data)
            fig.add_trace(go.Scatter(x=[at], y=[means[at]], mode="markers", name=SHIPPED_KEY, legendgroup="shipped",
                                     showlegend=first, marker=dict(symbol="circle-open", size=16, color=colour,
                                                                   line=dict(width=2.5)),
                                     hovertemplate=f"{name}: the shipped checkpoint's start, v = %{{x:g}}"
                                                   "<extra></extra>"))
    top = max((y for _, ys in points.values() for y in ys), default=1.0)
    fig.update_layout(height=320, margin=dict(l=10, r=10, t=10, b=10),
                      xaxis=dict(title=x_title, type="log" if log_x else "linear"),
                      yaxis=dict(title=y_title, rangemode="tozero", range=[0, top * 1.1],
                                 tickformat=".0%" if percent else None),
                      legend=titled_key(title))
    return fig


@own_style
def forming_chart(series: dict[str, tuple[Sequence[int], Sequence[float | None], Sequence[float]]],
                  chosen: int | None = None) -> go.Figure:
    """Attention forming as a run trains: per run (series name -> (epochs, validation accuracy or
    None at the start, the watched document's word attention JSD from even)), the accuracy (solid,
    left axis) and the document's sharpness (dotted, right axis) epoch by epoch, and a line at the
    ``chosen`` epoch. Both axes start at zero, so a flat attention looks flat."""
    fig = go.Figure()
    top = max((v for _, _, spread in series.values() for v in spread), default=0.0)
    for k, (name, (epochs, accuracy, spread)) in enumerate(series.items()):
        colour = PALETTE[k % len(PALETTE)]
        shown = [(e, a) for e, a in zip(epochs, accuracy) if a is not None]
        fig.add_trace(go.Scatter(x=[e for e, _ in shown], y=[a for _, a in shown], mode="lines+markers",
                                 name=f"{name}: validation accuracy", line=dict(color=colour),
                                 hovertemplate="epoch %{x}<br>validation accuracy %{y:.1%}<extra></extra>"))
        fig.add_trace(go.Scatter(x=list(epochs), y=list(spread), mode="lines+markers", yaxis="y2",
                                 name=f"{name}: this document's word JSD from even",
                                 line=dict(color=colour, dash="dot"), marker=dict(symbol="diamond"),
                                 hovertemplate="epoch %{x}<br>JSD from even %{y:.3f}<extra></extra>"))
    if chosen is not None:
        fig.add_vline(x=chosen, line=dict(color="#555", width=1, dash="dash"))
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=10, b=10), legend=LEGEND_ABOVE,
                      xaxis=dict(title="epoch (0: the start)", rangemode="tozero", dtick=1),
                      yaxis=dict(title="validation accuracy", tickformat=".0%", range=[0, 1.02]),
                      yaxis2=dict(title="word attention's JSD from even", overlaying="y", side="right",
                                  range=[0, max(top * 1.15, 0.05)], showgrid=False))
    return fig
