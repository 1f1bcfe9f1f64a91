"""The head overview's grid and table (``analysis.heads``): layers x heads, each cell the largest
share above an even spread and the pattern it is, and the figures per head as a table."""
from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from hierattn.analysis.heads import PATTERNS
from hierattn.viz.figures import COLORSCALE

SHORT = {"previous": "prev", "next": "next", "special": "spec", "same word": "same"}  # a pattern in a narrow cell


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
                               colorbar=dict(title="above even"),
                               # the heatmap's own cell text, its colour set against each cell's by plotly:
                               # one annotation a head was measured and placed one by one in the browser
                               # (72 heads: most of a second there)
                               text=text, texttemplate="%{text}", textfont=dict(size=11 if many else 13)))
    if many:
        fig.update_xaxes(title=dict(text="prev: the previous token · next: the next token<br>spec: special tokens · "
                                         "same: the same word · empty: no finding", font=dict(size=11)))
    fig.update_layout(height=max(220, 58 * rows + 110 + 45 * many), margin=dict(l=10, r=10, t=40, b=10),
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


def clark_layers(layers: list[dict], first_special: str | None = None) -> go.Figure:
    """Clark et al.'s per-layer view (``analysis.clark.by_layer`` rows, or ``over_documents`` rows
    whose figures are (mean, low, high)): the share of attention to each kind of token per layer,
    averaged over heads, a solid line each, and the even spread's share as a dotted line of the same
    colour. The first special token is named by its text ([CLS], <s>)."""
    from hierattn.analysis.clark import TARGETS

    def mean(value):
        return value[0] if isinstance(value, tuple) else value

    names = {"first special": f"to {first_special or 'the first special token'}",
             "other specials": "to the other special tokens", "punctuation": "to punctuation", "self": "to itself",
             "previous": "to the previous token", "next": "to the next token"}
    x = [r["layer"] + 1 for r in layers]
    fig = go.Figure()
    for target in TARGETS:
        colour = CLARK_COLOURS[target]
        fig.add_trace(go.Scatter(x=x, y=[mean(r[target]) for r in layers], mode="lines+markers",
                                 name=names[target], line=dict(color=colour, width=2.5),
                                 hovertemplate="layer %{x}: %{y:.1%}<extra></extra>"))
        fig.add_trace(go.Scatter(x=x, y=[r[f"{target}_even"] for r in layers], mode="lines", showlegend=False,
                                 line=dict(color=colour, width=1, dash="dot"), hoverinfo="skip"))
    fig.update_layout(height=380, margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="v", x=1.02, y=1),
                      xaxis=dict(title="layer", tickmode="array", tickvals=x),
                      yaxis=dict(title="share of attention (dotted: an even spread)", tickformat=".0%",
                                 rangemode="tozero"))
    return fig
