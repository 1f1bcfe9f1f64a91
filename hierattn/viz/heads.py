"""The head overview's grid and table (``analysis.heads``): layers x heads, each cell the largest
share above an even spread and the pattern it is, and the figures per head as a table."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from hierattn.analysis.heads import PATTERNS
from hierattn.viz.figures import COLORSCALE
from hierattn.viz.style import LEGEND_ABOVE, own_style

DROP_SCALE = 5.0  # points: the least a head-drop grid's colour scale reaches either side of 0
SHORT = {"previous": "prev", "next": "next", "special": "spec", "same word": "same"}  # a pattern in a narrow cell


@own_style
def head_grid(values, labels: Sequence[Sequence[str]], layer_names: Sequence[str],
              head_names: Sequence[str]) -> go.Figure:
    """``values`` (layers, heads): the largest excess over an even spread, 0 to 1 on the shared
    colour scale; ``labels``: what each cell says ("previous 92%", "no finding")."""
    z = values.tolist() if hasattr(values, "tolist") else [list(r) for r in values]
    rows, cols = len(layer_names), len(head_names)
    # Twelve heads leave a cell about 40 px wide at 1024 px: "no finding" and "previous" overflowed it,
    # so many heads get short names (said under the grid) and an empty cell where nothing was found.
    many = cols > 6

    def cell(label: str) -> str:
        if not many:
            return label.replace(" ", "<br>", 1)
        name, _, share = label.rpartition(" ")
        return "" if label == "no finding" else f"{SHORT.get(name, name[:4])}<br>{share}"

    text = [[cell(str(labels[i][j])) for j in range(cols)] for i in range(rows)]
    fig = go.Figure(go.Heatmap(z=z, x=list(range(cols)), y=list(range(rows)), zmin=0, zmax=1, zauto=False,
                               colorscale=COLORSCALE,
                               customdata=[[f"{layer_names[i]} · {head_names[j]}: {labels[i][j]}" for j in range(cols)]
                                           for i in range(rows)],
                               hovertemplate="%{customdata}<br>above an even spread by %{z:.2f}<extra></extra>",
                               colorbar=dict(title=dict(text="above even", side="right")),
                               # the heatmap's own cell text, its colour set against each cell's by plotly:
                               # one annotation a head was measured and placed one by one in the browser
                               # (72 heads: most of a second there)
                               text=text, texttemplate="%{text}", textfont=dict(size=11 if many else 13)))
    if many:  # the key under the grid: over it, as the top axis's title, a slide's subtitle covered it
        fig.add_annotation(text="prev: the previous token · next: the next token · spec: special tokens · "
                                "same: the same word · empty: no finding", xref="paper", yref="paper", x=0.5,
                           xanchor="center", y=0, yanchor="top", yshift=-8, showarrow=False, font=dict(size=11))
    fig.update_layout(height=max(220, 58 * rows + 110 + 45 * many), margin=dict(l=10, r=10, t=40, b=10 + 30 * many),
                      xaxis=dict(side="top", tickmode="array", tickvals=list(range(cols)), ticktext=list(head_names),
                                 showgrid=False),
                      yaxis=dict(autorange="reversed", tickmode="array", tickvals=list(range(rows)),
                                 ticktext=list(layer_names), showgrid=False))
    return fig


def head_table(rows: list[dict]):
    """One row per head, numbered from 1 as the grid numbers them: its finding, then each figure
    beside its even-spread value."""
    import pandas as pd

    columns = ["layer", "head", "finding"]
    for name in ("special", "previous", "next", "same word", "gini", "diagonality_b1"):
        columns += [name, f"{name}_even"] if name in PATTERNS or name == "diagonality_b1" else [name]
    table = pd.DataFrame(rows)[columns].copy()
    table[["layer", "head"]] += 1
    table["finding"] = table["finding"].fillna("no finding")
    return table.rename(columns={c: c.replace("_even", " (even)") for c in columns})


CLARK_COLOURS = {"first special": "#b91c1c", "other specials": "#ea580c", "punctuation": "#7c3aed",
                 "self": "#0f766e", "previous": "#2563eb", "next": "#0891b2"}


@own_style
def clark_layers(layers: list[dict], first_special: str | None = None) -> go.Figure:
    """Clark et al.'s per-layer view (``analysis.clark.by_layer`` rows, or ``over_documents`` rows
    whose figures are (mean, low, high)): the share of attention to each kind of token per layer,
    averaged over heads, a solid line each, and the even spread's share as a dotted line of the same
    colour. The first special token is named by its text ([CLS], <s>)."""
    from hierattn.analysis.clark import TARGETS

    def mean(value):
        return value[0] if isinstance(value, tuple) else value

    names = _clark_names(first_special)
    x = [r["layer"] + 1 for r in layers]
    fig = go.Figure()
    for target in TARGETS:
        colour = CLARK_COLOURS[target]
        fig.add_trace(go.Scatter(x=x, y=[mean(r[target]) for r in layers], mode="lines+markers",
                                 name=names[target], line=dict(color=colour, width=2.5),
                                 hovertemplate="layer %{x}: %{y:.1%}<extra></extra>"))
        fig.add_trace(go.Scatter(x=x, y=[r[f"{target}_even"] for r in layers], mode="lines", showlegend=False,
                                 line=dict(color=colour, width=1, dash="dot"), hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name="dotted: an even spread",
                             line=dict(color="#6b7280", width=1, dash="dot"), hoverinfo="skip"))
    # the key above the plot (at its right it took a third of a 1024 px page's chart; under it, it
    # met the axis title on a wide page)
    fig.update_layout(height=440, margin=dict(l=10, r=10, t=30, b=10),
                      legend=LEGEND_ABOVE,
                      xaxis=dict(title="layer", tickmode="array", tickvals=x),
                      yaxis=dict(title="share of attention", tickformat=".0%", rangemode="tozero"))
    return fig


def _clark_names(first_special: str | None) -> dict[str, str]:
    return {"first special": f"to {first_special or 'the first special token'}", "other specials": "to other specials",
            "punctuation": "to punctuation", "self": "to itself", "previous": "to the previous token",
            "next": "to the next token"}


def clark_layer_table(layers: list[dict], first_special: str | None = None):
    """``clark_layers``' figures as a table laid out as its chart: a row per kind of token and the
    entropy, a column per layer, and the even spread's value once (it depends on the tokens alone,
    so it is the same in every layer; a range where it is not). Shares in percent; a figure over
    documents, (mean, low, high), with its 95% interval. Eight columns of layers' figures and their
    even values side by side did not fit a 1024 px page."""
    import pandas as pd

    from hierattn.analysis.clark import TARGETS

    def figure(value, key: str) -> str:  # a share in percent to 0.1, an entropy in nats to 0.01
        scale, digits, unit = (1.0, 2, "") if key == "entropy" else (100.0, 1, "%")
        if isinstance(value, tuple):
            return f"{scale * value[0]:.{digits}f}{unit} [{scale * value[1]:.{digits}f}, {scale * value[2]:.{digits}f}]"
        return f"{scale * value:.{digits}f}{unit}"

    def even(key: str) -> str:
        low, high = (f(r[f"{key}_even"] for r in layers) for f in (min, max))
        return figure(low, key) if high - low < 1e-9 else f"{figure(low, key)} to {figure(high, key)}"

    names = {**_clark_names(first_special), "entropy": "entropy (nats)"}
    rows = [{"": names[key], "even": even(key),
             **{f"layer {r['layer'] + 1}": figure(r[key], key) for r in layers}} for key in (*TARGETS, "entropy")]
    return pd.DataFrame(rows)


@own_style
def head_drop_grid(drops, row_names: Sequence[str], head_names: Sequence[str],
                   findings: Sequence[Sequence[str]] | None = None) -> go.Figure:
    """``drops`` (rows, heads): the drop in P(predicted), 0..1, when each head's attention alone is
    made even (``analysis.head_importance``); NaN where a row has fewer heads. A diverging scale
    centred on 0 (orange: the prediction weakens; purple: it grows), reaching at least
    ``DROP_SCALE`` points either side; each cell names its drop in points and, where the head grid
    found one, its pattern (``findings``)."""
    z = np.asarray(drops, dtype=np.float64) * 100
    rows, cols = z.shape
    # the scale reaches at least DROP_SCALE points: a confident prediction moved by a tenth of a point
    # took the darkest colour when the scale ran to the largest drop, a finding made by the scale
    top = max(float(np.nanmax(np.abs(z))) if np.isfinite(z).any() else 0.0, DROP_SCALE)

    def cell(i: int, j: int) -> str:
        if not np.isfinite(z[i, j]):
            return ""
        found = findings[i][j] if findings and findings[i][j] not in ("", "no finding") else ""
        value = round(float(z[i, j]), 1) + 0.0  # never "-0.0"
        return f"{value:+.1f}" + (f"<br>{SHORT.get(found, found[:4])}" if found else "")

    fig = go.Figure(go.Heatmap(
        z=z.tolist(), x=list(range(cols)), y=list(range(rows)), zmin=-top, zmax=top, zauto=False,
        colorscale="PuOr_r", text=[[cell(i, j) for j in range(cols)] for i in range(rows)], texttemplate="%{text}",
        textfont=dict(size=11 if cols > 6 else 13),
        customdata=[[f"{row_names[i]} · {head_names[j]}" for j in range(cols)] for i in range(rows)],
        hovertemplate="%{customdata}<br>P(predicted) drops by %{z:+.2f} points<extra></extra>",
        colorbar=dict(title=dict(text="drop, points", side="right"))))
    fig.update_layout(height=max(220, 46 * rows + 110), margin=dict(l=10, r=10, t=10, b=10),
                      xaxis=dict(tickmode="array", tickvals=list(range(cols)), ticktext=list(head_names), side="top"),
                      yaxis=dict(tickmode="array", tickvals=list(range(rows)), ticktext=list(row_names),
                                 autorange="reversed"))
    return fig
