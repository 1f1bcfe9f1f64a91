"""The head overview's grid and table (``analysis.heads``): layers x heads, each cell the largest
share above an even spread and the pattern it is, and the figures per head as a table."""
from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from hierattn.analysis.heads import PATTERNS
from hierattn.viz.figures import COLORSCALE


def head_grid(values, labels: Sequence[Sequence[str]], layer_names: Sequence[str],
              head_names: Sequence[str]) -> go.Figure:
    """``values`` (layers, heads): the largest excess over an even spread, 0 to 1 on the shared
    colour scale; ``labels``: what each cell says ("previous 92%", "no finding")."""
    z = values.tolist() if hasattr(values, "tolist") else [list(r) for r in values]
    rows, cols = len(layer_names), len(head_names)
    text = [[str(labels[i][j]).replace(" ", "<br>", 1) for j in range(cols)] for i in range(rows)]
    dark = [[z[i][j] > 0.55 for j in range(cols)] for i in range(rows)]
    fig = go.Figure(go.Heatmap(z=z, x=list(range(cols)), y=list(range(rows)), zmin=0, zmax=1, zauto=False,
                               colorscale=COLORSCALE,
                               customdata=[[f"{layer_names[i]} · {head_names[j]}: {labels[i][j]}" for j in range(cols)]
                                           for i in range(rows)],
                               hovertemplate="%{customdata}<br>above an even spread by %{z:.2f}<extra></extra>",
                               colorbar=dict(title="above even")))
    for i in range(rows):
        for j in range(cols):
            fig.add_annotation(x=j, y=i, text=text[i][j], showarrow=False,
                               font=dict(size=13, color="white" if dark[i][j] else "#1f2937"))
    fig.update_layout(height=max(220, 58 * rows + 110), margin=dict(l=10, r=10, t=40, b=10),
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
