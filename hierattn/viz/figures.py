"""Plotly figures of attention over words from plain tensors and lists: probabilities, attention
heatmaps and distributions, the confusion matrix and metric boxes (line charts are in ``curves``,
shaded text in ``text``). Never a model, never Streamlit; every piece of user text that goes into a
figure passes through ``short`` (escaped and cut)."""
from __future__ import annotations

import html
import textwrap
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from hierattn.viz.style import built, own_style

# One colour scale for every view of attention, so shades compare across panels.
COLORSCALE = "Blues"
# the same scale as its steps, the form plotly's checking gives a named scale (``style.built``)
COLORSCALE_STEPS = [[float(at), color] for at, color in go.Heatmap(colorscale=COLORSCALE).colorscale]
UNKNOWN_MARK = "†"  # after a word the model read as <unk>: kept by every export, unlike a colour or hatch


def marked_words(words: Sequence[str], unknown: Sequence[bool]) -> list[str]:
    """``words`` with ``UNKNOWN_MARK`` after each one the model's vocabulary lacks, for axis labels:
    a heatmap's darkest column on an unknown word is a fact about the vocabulary, and a slide must
    say so without the page's hatching."""
    return [f"{w}{UNKNOWN_MARK}" if flag else w for w, flag in zip(words, list(unknown) + [False] * len(words))]


def unknown_note(unknown: Sequence[bool]) -> str:
    """The key to ``UNKNOWN_MARK``, for a figure's title, where any word is marked; else ""."""
    return f" · {UNKNOWN_MARK} not in the model's vocabulary" if any(unknown) else ""


def probability_chart(labels: Sequence[str], probabilities: Sequence[float]) -> go.Figure:
    """Horizontal bars, predicted class highlighted."""
    best = max(range(len(probabilities)), key=probabilities.__getitem__)
    colors = ["#1f77b4" if i == best else "#aec7e8" for i in range(len(labels))]
    bars = dict(type="bar", x=[float(p) for p in probabilities], y=[short(label, 60) for label in labels],
                orientation="h", marker=dict(color=colors), text=[f"{p:.1%}" for p in probabilities],
                # beside a short bar, inside a long one: plotly's "auto" dropped the
                # label of a bar too thin to hold it (one class of five showed none)
                textposition=["inside" if p >= 0.25 else "outside" for p in probabilities],
                cliponaxis=False, hovertemplate="%{y}: %{x:.2%}<extra></extra>")
    return built([bars], dict(xaxis=dict(range=[0, 1], tickformat=".0%", title=dict(text="probability"),
                                         automargin=True),
                              yaxis=dict(autorange="reversed", automargin=True), height=60 + 32 * len(labels),
                              margin=dict(l=10, r=10, t=10, b=40)))


MAX_TICKS = 60  # labels an axis shows; beyond, every k-th (every cell still names its words on hover)


def zero_based(z, zmax: float | None = None) -> dict:
    """A heatmap's colour range: from 0 to ``zmax`` (a shared scale) or the map's own largest value,
    with plotly's automatic range off. ``zmin=0`` alone leaves ``zauto`` on, and plotly then spans
    the data's own minimum to maximum: a near-even map (0.05-0.14) was drawn white to navy."""
    if zmax is None and isinstance(z, np.ndarray):
        top = float(np.nanmax(z)) if z.size else 1.0
    else:
        top = zmax if zmax is not None else max((v for row in z for v in row if v is not None), default=1.0)
    return dict(zmin=0.0, zmax=float(top) if top and top > 0 else 1.0, zauto=False)


ACROSS = 30  # slanted labels the top axis of a heatmap shows at most


def _across(n: int) -> int:
    """How many of an n-wide heatmap's columns the top axis names: every one up to ``ACROSS``, then
    every k-th. At 1024 px a column leaves the cells about 320 px: 30 slanted labels fit there,
    where a 60-word matrix drew 60 and a 512-token document's overview 46, one on another (each
    cell still names its words on hover, and the rows, taller, keep all their labels)."""
    return min(n, ACROSS)


PAGE_COLUMN = 560  # px: the main column of a 1024 px page; a wider heatmap was squeezed into it, cells no longer square
HALF_COLUMN = 272  # px: one of two columns side by side there (measured in Chromium)
LEAST_FONT = 9  # px: the smallest tick label; below it, fewer labels


def fitting_labels(n: int, cells_px: float, font: int, limit: int, slanted: bool) -> tuple[int, int]:
    """(font size, every k-th named) for ``n`` labels along ``cells_px``: the largest size down to
    ``LEAST_FONT``, then fewer labels, such that neighbours stand clear of one another. A label's
    box is about 1.3 times its font size tall; labels slanted by 60 degrees stand a cell x sin 60
    apart, rows a cell apart (at 24 words in 336 px, 12 px labels overprinted by 3 px). The slide
    export (``export.slide``) keeps the same rule."""
    every = -(-n // limit) if n else 1
    apart = 0.87 if slanted else 1.0
    while True:
        for size in range(font, LEAST_FONT - 1, -1):
            if cells_px / max(n, 1) * every * apart >= 1.3 * size:
                return size, every
        if every >= max(n, 1):
            return LEAST_FONT, every
        every += 1


def every_kth(title: str, n: int, limit: int) -> str:
    """An axis title that says when only every k-th of its n labels is named: thinned, the names
    of a long document's words read as if they were consecutive."""
    every = -(-n // limit) if n else 1
    if every <= 1:
        return title
    suffix = "th" if 10 <= every % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(every % 10, "th")
    return f"{title}: every {every}{suffix} of {n:,} named"


def _ticks(labels: Sequence[str], limit: int = MAX_TICKS) -> dict:
    every = -(-len(labels) // limit) if labels else 1
    return dict(tickmode="array", tickvals=list(range(0, len(labels), every)),
                ticktext=[short(label) for label in labels[::every]])


def attention_heatmap(matrix, labels: Sequence[str], title: str = "", compact: bool = False,
                      zmax: float | None = None, show_scale: bool = True, clickable: bool = False,
                      fluid: bool = False) -> go.Figure:
    """A query x key attention matrix: rows (y) attend to columns (x), as in SANet Figure 3.

    ``matrix``: (n, n) nested list or tensor; ``labels``: the n tokens (or sentence names).
    Axes are numeric with the labels as tick text, so repeated words stay separate cells; up to
    ``MAX_TICKS`` words are named on each axis. The figure has its own width and height: square
    cells, and a colour bar exactly as tall as the cells (a figure stretched to its column made the
    colour bar twice the heatmap's height at 1024 px). ``compact``: a small multiple for a grid of
    heads (smaller cells and labels; ``show_scale`` draws its colour bar, e.g. on the last one).
    ``zmax``: the weight of the darkest cell (default: this matrix's largest), to share a scale.
    The labels ride along in ``layout.meta`` for the slide export (``export.slide``).
    ``clickable``: an invisible marker
    on every cell, so a click selects a cell (Streamlit's chart selection returns nothing for a
    heatmap's own cells): the point's ``y`` is the query row. ``fluid``: no width of its own; the
    figure fills its column and the cells stay square (the plot area keeps a 1:1 aspect): for two
    heatmaps side by side, which a fixed width made 120 px wide at 1920 px or cut at 1024 px.
    """
    # arrays, not nested lists: plotly validates a list cell by cell (a 100 x 100 overview took a second)
    z = np.asarray(matrix.tolist() if not isinstance(matrix, np.ndarray) and hasattr(matrix, "tolist") else matrix,
                   dtype=np.float64)
    n = len(labels)
    names = [short(label, 40) for label in labels]
    hover = np.array([[f"{a} → {b}" for b in names] for a in names], dtype=object).reshape(n, n)
    longest = max((len(short(label)) for label in labels), default=1)
    font = 10 if compact or n > 30 else 12
    label_px = min(120, int(0.62 * font * longest) + 12)  # room for the tick labels (the top ones slanted)
    side = min(360 if compact else 640, max(160 if compact else 240, (14 if compact else 22) * n))
    scale = show_scale
    top = int(label_px * 0.9) + (28 if not compact else 6)
    left = label_px + (30 if not compact else 6)
    # a fluid map's colour bar names itself above, not beside: the 30 px go to its cells, which a
    # 1024 px page's half column leaves 83 px
    right = (60 if fluid else 90) if scale else 12
    if not compact:
        side = min(side, PAGE_COLUMN - left - right)
    # the cells' width, for a fluid map the least it gets: half a 1024 px page's column (both callers
    # set two maps side by side)
    cells = max(80, HALF_COLUMN - left - right) if fluid else side
    across_font, across_every = fitting_labels(n, cells, font, _across(n), slanted=True)
    down_font, down_every = fitting_labels(n, cells, font, MAX_TICKS, slanted=False)
    across, down = (-(-n // across_every) if n else 1), (-(-n // down_every) if n else 1)  # labels named
    cells_trace = dict(type="heatmap", z=z, x=list(range(n)), y=list(range(n)), customdata=hover,
                       colorscale=COLORSCALE_STEPS, **zero_based(z, zmax), showscale=scale,
                       colorbar=dict(title=dict(text="weight", side="top" if fluid else "right"),
                                     thickness=14, len=1, lenmode="fraction", y=1 if fluid else 0.5,
                                     yanchor="top" if fluid else "middle"),
                       hovertemplate="query %{customdata}<br>weight %{z:.3f}<extra></extra>")
    # the title, under the cells and centred on them, in as many lines as the figure's width needs:
    # on one line a short sentence's map (five words, 240 px of cells) cut its title at both ends
    title_font = 13 if compact else 14
    room = 2 * min(left + cells / 2, cells / 2 + right)  # centred on the cells, over labels and colour bar
    lines = textwrap.wrap(title, max(16, int(room / (0.58 * title_font)))) if title else []
    bottom = 26 + 18 * len(lines) if title else 12
    layout = dict(width=left + side + right, height=top + side + bottom,
                  margin=dict(l=left, r=right, t=top, b=bottom, autoexpand=False),
                  title=dict(text="<br>".join(lines), y=0, yref="paper", yanchor="top", pad=dict(t=10), x=0.5,
                             xanchor="center", font=dict(size=title_font)),
                  meta=dict(labels=list(labels), kind="attention"),
                  xaxis=dict(**({} if compact else dict(title=dict(text=every_kth("attends to (key)", n, across),
                                                                            standoff=4))),
                             side="top", tickangle=-60, tickfont=dict(size=across_font), showgrid=False,
                             zeroline=False, **_ticks(labels, across)),
                  yaxis=dict(**({} if compact else dict(title=dict(text=every_kth("query", n, down), standoff=4))),
                             autorange="reversed", tickfont=dict(size=down_font), showgrid=False, zeroline=False,
                             **_ticks(labels, down)))
    traces = [cells_trace]
    if clickable and n:
        cell = max(4, side // n)
        traces.append(dict(type="scatter", x=np.tile(np.arange(n), n), y=np.repeat(np.arange(n), n),
                           mode="markers", marker=dict(symbol="square", size=cell, opacity=0),
                           customdata=hover.reshape(-1),
                           text=np.array([f"{v:.3f}" for v in z.reshape(-1)], dtype=object), showlegend=False,
                           hovertemplate="query %{customdata}<br>weight %{text}<extra></extra>"))
        cells_trace["hoverinfo"] = "skip"
        layout.update(clickmode="event+select", dragmode=False)
    if fluid:
        # Square cells in whatever the column leaves: the cells move to the top and right of the plot
        # area, beside the colour bar and under the column labels, instead of floating in its middle.
        del layout["width"]
        layout["yaxis"].update(scaleanchor="x", scaleratio=1, constrain="domain", constraintoward="top")
        layout["xaxis"].update(constrain="domain", constraintoward="right")
    return built(traces, layout)


@own_style
def heads_grid(matrices: Sequence, labels: Sequence[str], titles: Sequence[str], per_row: int = 2) -> go.Figure:
    """Every head's (n, n) matrix side by side in one figure: ``per_row`` a row, one colour scale
    from 0 to the largest weight of any head with one colour bar, the words on every axis (up to
    ``MAX_TICKS``), hover with the word pair and weight. One figure, so the colour bar spans the
    grid's height and the grid fills its column at any width."""
    from plotly.subplots import make_subplots

    count, n = len(matrices), len(labels)
    rows = -(-count // per_row)
    grids = [m.tolist() if hasattr(m, "tolist") else [list(r) for r in m] for m in matrices]
    top = max((max(max(r) for r in g) for g in grids if g), default=1.0) or 1.0
    font = 11 if n <= 20 else 8
    longest = max((len(short(label)) for label in labels), default=1)
    label_px = int(0.62 * font * longest) + 12
    fig = make_subplots(rows=rows, cols=per_row, subplot_titles=list(titles), horizontal_spacing=0.12,
                        vertical_spacing=(label_px + 40) / (rows * (min(420, max(220, 16 * n)) + label_px + 30))
                        if rows > 1 else 0.05)
    hover = [[f"{short(labels[i], 40)} → {short(labels[j], 40)}" for j in range(n)] for i in range(n)]
    for k, z in enumerate(grids):
        row, col = k // per_row + 1, k % per_row + 1
        fig.add_trace(go.Heatmap(z=z, x=list(range(n)), y=list(range(n)), customdata=hover, coloraxis="coloraxis",
                                 hovertemplate=f"{short(titles[k], 200)}<br>%{{customdata}}<br>weight "
                                               "%{z:.3f}<extra></extra>"), row=row, col=col)
        fig.update_xaxes(side="top", tickangle=-60, tickfont=dict(size=font), showgrid=False, **_ticks(labels),
                         row=row, col=col)
        fig.update_yaxes(autorange="reversed", tickfont=dict(size=font), showgrid=False, **_ticks(labels),
                         row=row, col=col)
    fig.update_layout(coloraxis=dict(colorscale=COLORSCALE, cmin=0, cmax=top, cauto=False,
                                     colorbar=dict(title=dict(text="weight", side="right"), thickness=14, len=1)),
                      height=rows * (min(420, max(220, 16 * n)) + label_px + 30) + 40,
                      margin=dict(l=10, r=10, t=label_px + 30, b=30), meta=dict(labels=list(labels), kind="heads"))
    for k, annotation in enumerate(fig.layout.annotations):  # each title under its cells, out of the labels' way
        bottom = fig.layout[f"yaxis{k + 1 if k else ''}"].domain[0]
        annotation.update(y=bottom, yanchor="top", yshift=-4, font=dict(size=13))
    return fig


@own_style
def matrix_heatmap(matrix, row_labels: Sequence[str], column_labels: Sequence[str], title: str = "",
                   row_title: str = "", column_title: str = "", height: int | None = None,
                   zmax: float | None = None) -> go.Figure:
    """Any (rows, columns) grid of weights on the shared colour scale, e.g. MahNN's channel x word
    strips, its word x hidden-dimension semantical attention, HA-LSTM's time x look-back view.
    Every axis names its rows and columns (up to ``MAX_TICKS``, then every k-th): a long document's
    word axis used to fall back to plotly's own numbers 0..120."""
    z = matrix.tolist() if hasattr(matrix, "tolist") else [list(r) for r in matrix]
    rows, cols = len(row_labels), len(column_labels)
    hover = [[f"{short(row_labels[i], 40)} · {short(column_labels[j], 40)}" for j in range(cols)] for i in range(rows)]
    fig = go.Figure(go.Heatmap(z=z, x=list(range(cols)), y=list(range(rows)), customdata=hover,
                               colorscale=COLORSCALE, **zero_based(z, zmax), colorbar=dict(title="weight"),
                               hovertemplate="%{customdata}<br>weight %{z:.3f}<extra></extra>"))
    upright = all(len(short(label)) <= 8 for label in column_labels)  # short column labels need no slant
    fig.update_layout(title=dict(text=title, y=0.99, yanchor="top"), height=height or min(900, max(220,
                                                                                                   20 * rows + 160)),
                      margin=dict(l=10, r=10, t=(40 if upright else 90) + (30 if title else 0), b=10),
                      xaxis=dict(title=column_title, side="top", tickangle=0 if upright else -60, showgrid=False,
                                 **_ticks(column_labels)),
                      yaxis=dict(title=row_title, autorange="reversed", showgrid=False,
                                 **_ticks(row_labels)))
    return fig


def distribution_chart(weights: Sequence[float], labels: Sequence[str], title: str = "",
                       axis_title: str = "", value_title: str = "attention weight",
                       reference: tuple[float, str] | None = None, even: bool = True) -> go.Figure:
    """Bars of a target-attention distribution over words or sentences, in reading order (or any
    value per word, named by ``value_title``); ``reference`` = (value, label) draws a dashed
    baseline across the bars; ``even`` (a distribution over the bars) draws the even spread, 1/n.

    The bars are categories that the browser names as the chart's width allows (every bar still
    names its word on hover): a label for every bar at a fixed slant ran 37 sentences into one band,
    and overprinted a sentence of 15 words, in a half-width column at 1024 px. A word that repeats is
    a category of its own (``category_names``), so that its two bars stay two.

    The colour runs from 0 (white) to the largest weight, as the bars' height does (the y axis is
    its key): a ramp from the smallest weight to the largest made 0.105 white and 0.117 navy on
    HCAN's nearly even weights, so an even spread looked peaked. The y axis starts at 0 too."""
    n = len(weights)
    weights = [float(w) for w in weights]
    top = max(weights, default=0.0) or 1.0
    bars = dict(type="bar", x=category_names(labels), y=weights,
                marker=dict(color=weights, colorscale=COLORSCALE_STEPS, cmin=0, cmax=top),
                customdata=[short(label, 60) for label in labels],
                hovertemplate="%{customdata}<br>%{y:.3f}<extra></extra>")
    layout = dict(title=dict(text=title), height=340, margin=dict(l=60, r=10, t=40 if title else 10, b=90),
                  meta=dict(labels=list(labels), kind="bars"),
                  yaxis=dict(title=dict(text=value_title), rangemode="tozero", automargin=True),
                  xaxis=dict(title=dict(text=axis_title), type="category", tickmode="auto", automargin=True))
    # a dashed line across the bars and its label at its top left (what plotly's add_hline draws)
    line = None
    if reference is not None:
        line = (reference[0], reference[1], "#888", {})
    elif even and n:
        line = (1 / n, f"even spread 1/{n}", "#d62728", dict(font=dict(color="#d62728"),
                                                               bgcolor="rgba(255,255,255,0.8)"))
    if line is not None:
        y, text, color, look = line
        layout["shapes"] = [dict(type="line", xref="x domain", x0=0, x1=1, yref="y", y0=y, y1=y,
                                 line=dict(color=color, dash="dash"))]
        layout["annotations"] = [dict(text=text, showarrow=False, xref="x domain", x=0, xanchor="left", yref="y",
                                      y=y, yanchor="bottom", **look)]
    return built([bars], layout)


@own_style
def confusion_heatmap(matrix, labels: Sequence[str]) -> go.Figure:
    """A confusion matrix: rows are true classes, columns predicted; counts in the cells, colour by
    the share of the true class (so small classes stay readable)."""
    counts = matrix.tolist() if hasattr(matrix, "tolist") else [list(r) for r in matrix]
    shares = [[c / (sum(row) or 1) for c in row] for row in counts]
    names = [short(label, 24) for label in labels]
    fig = go.Figure(go.Heatmap(z=shares, x=names, y=names, text=counts, texttemplate="%{text}", colorscale=COLORSCALE,
                               zmin=0, zmax=1, zauto=False,
                               colorbar=dict(title=dict(text="share of true class", side="right"), tickformat=".0%"),
                               hovertemplate="true %{y}<br>predicted %{x}<br>%{text} documents "
                                             "(%{z:.1%})<extra></extra>"))
    longest = max((len(n) for n in names), default=1)
    # its own width, square-ish cells that fit every class name: stretched to a 1920 px page, or
    # squeezed into half of a 1024 px one, a 5-class matrix named 3 of its classes
    fig.update_layout(height=min(700, 160 + 48 * len(labels)), width=min(900, 7 * longest + 200 + 90 * len(labels)),
                      margin=dict(l=10, r=10, t=40, b=10),
                      xaxis=dict(title="predicted", side="top", tickangle=-30 if longest > 8 else 0),
                      yaxis=dict(title="true", autorange="reversed"))
    return fig


@own_style
def metric_boxes(groups: dict[str, Sequence[float]], metric: str) -> go.Figure:
    """Box plots of one metric (0..1 values, shown in %) per group, e.g. per level or class."""
    fig = go.Figure()
    for name, values in groups.items():
        fig.add_trace(go.Box(y=[100 * v for v in values], name=short(name, 24), boxpoints=False, boxmean=True))
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=30, b=10), showlegend=False,
                      yaxis=dict(title=f"{metric} (%)", rangemode="tozero"))
    return fig


def category_names(labels: Sequence[str]) -> list[str]:
    """Each label as plotly shows it (``short``), made a category of its own: a category axis draws
    the bars of one name as one. A repeat is followed by its count in binary, in zero-width spaces
    and non-joiners (drawn as nothing; the 200th "the" gets 8 of them, not 199), and by more
    zero-width spaces while the name is still taken (a pasted word may hold those characters)."""
    seen: dict[str, int] = {}
    taken: set[str] = set()
    names = []
    for label in labels:
        name = short(label)
        count = seen.get(name, 0)
        seen[name] = count + 1
        unique = name + (bin(count)[2:].translate(_INVISIBLE) if count else "")
        while unique in taken:
            unique += "\u200b"
        taken.add(unique)
        names.append(unique)
    return names


_INVISIBLE = str.maketrans("01", "\u200b\u200c")  # a count's binary digits, drawn as nothing


def short(label: str, limit: int = 18) -> str:
    """A label for plotly, which reads a subset of HTML in text: shortened, then escaped."""
    label = " ".join(str(label).split())
    return html.escape(label if len(label) <= limit else label[: limit - 1] + "…", quote=False)


def block_overview(matrix, block: int):
    """An (n, n) attention matrix summarised in blocks of ``block`` positions: cell (i, j) is the
    attention that the queries of block i give, on average, to all the keys of block j. Rows still
    sum to one, so the overview reads like the matrix it summarises. Returns a nested list."""
    m = np.asarray(matrix, dtype=np.float64)  # a tensor's own buffer: its tolist() took longer than the sums
    n = m.shape[0]
    edges = list(range(0, n, block)) + [n]
    keys = np.add.reduceat(m, edges[:-1], axis=1)  # (n, blocks): summed over each key block
    return [keys[a:b].mean(0).tolist() for a, b in zip(edges[:-1], edges[1:])]
