"""Export: figures as PNG, SVG and standalone HTML; an explanation as JSON (the same JSON as
``python -m hierattn explain``), its metrics and attention maps as CSV; a whole analysis of a
document as one self-contained HTML report. Each takes tensors, words, tables and plain values,
never an explanation or a model; no Streamlit: pages hand these to download buttons.

PNG and SVG are drawn by kaleido, which drives the system's Chromium (Debian's ``chromium``);
without a browser they raise ``ExportError`` with what to install, and HTML, CSV and JSON still work.
"""
from __future__ import annotations

import atexit
import functools
import html
import json
import os
import re
import shutil
import threading
import warnings
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import pandas as pd
import plotly.graph_objects as go

from hierattn.analysis.metrics import column_labels, shown_columns
from hierattn.contract import AttentionMap
from hierattn.data.formats import csv_bytes
from hierattn.viz.figures import every_kth

FIGURE_FORMATS = ("png", "svg", "pdf", "html")
SLIDE = (1600, 900)  # 16:9: PNG at 2x is 3200 x 1800, sharp on a projector
SLIDE_TICKS = 80  # words named on a slide's axis; beyond, every k-th, as the app pages them


class ExportError(RuntimeError):
    """An export format cannot be produced here; the message says why."""


def _browser() -> str:
    found = os.environ.get("BROWSER_PATH") or shutil.which("chromium") or shutil.which("chromium-browser") or \
        shutil.which("google-chrome")
    if not found:
        raise ExportError("PNG and SVG export need Chromium (apt-get install -y chromium); "
                          "HTML export works without it")
    return found


def _key_above(fig: go.Figure) -> bool:
    """Whether the figure's key sits above its plot (``style.LEGEND_ABOVE``): a slide leaves it a
    line of its own under the subtitle."""
    return fig.layout.legend.y is not None and fig.layout.legend.y > 1 and fig.layout.showlegend is not False


def slide(fig: go.Figure, title: str = "", subtitle: str = "") -> go.Figure:
    """``fig`` redrawn for a 16:9 slide (``SLIDE``): ``title`` (what it shows: model, map, head)
    and ``subtitle`` (the document) above it, larger type, margins that grow to fit every label,
    and for an attention heatmap (``layout.meta``), words on both axes (up to ``SLIDE_TICKS``) and
    square cells with a colour bar as tall as they are. The figure on the page is left as it is."""
    out = go.Figure(fig)
    meta = dict(out.layout.meta or {})
    title = title[:1].upper() + title[1:]  # a slide's title is a sentence, whatever case the page's name has
    heading = html.escape(title, quote=False)  # plotly's text shows &quot; as typed: quotes stay as they are
    # the subtitle as plotly's own subtitle, a text element of its own: as a second line of the title
    # (a <br> and a smaller span) SVG viewers other than Chromium drew it over the title
    out.update_layout(width=SLIDE[0], height=SLIDE[1], font=dict(size=17),
                      title=dict(text=heading, x=0.5, xanchor="center", y=1, yanchor="top", yref="container",
                                 font=dict(size=26), pad=dict(t=28, b=0),
                                 subtitle=dict(text=html.escape(subtitle, quote=False),
                                               font=dict(size=17, color="#555"))),
                      margin=dict(l=90, r=60, t=(140 if subtitle else 110) + (24 if _key_above(out) else 0), b=80,
                                  autoexpand=True), showlegend=None)
    out.update_xaxes(automargin=True, title_standoff=14)
    out.update_yaxes(automargin=True, title_standoff=14)
    if meta.get("kind") == "attention":
        labels = meta.get("labels", [])
        n = len(labels)
        every, size = (-(-n // SLIDE_TICKS) if n else 1), 17
        while True:  # the largest labels (down to 9 px), then fewer of them, that the cells leave room for
            shown = [_short(label) for label in labels[::every]]
            label_px = int(0.6 * size * max(map(len, shown), default=1)) + 16
            # explicit margins and a square plot area, so the colour bar can stand just beside the cells
            # at their height (automatic margins would move the cells after the bar is placed)
            top, left, bottom = (150 if subtitle else 120) + int(0.87 * label_px) + 30, label_px + 60, 30
            side = SLIDE[1] - top - bottom
            # labels slanted by 60 degrees stand cell x sin 60 apart: 40 long words at 13 px overprinted
            if side / max(n, 1) * every * 0.87 >= 1.3 * size or every >= max(n, 1):
                break
            size, every = (size - 1, every) if size > 9 else (size, every + 1)
        width = SLIDE[0] - left - 40
        start = max(0.0, 0.45 - side / width / 2)
        end = min(0.92, start + side / width)
        ticks = dict(tickmode="array", tickvals=list(range(0, n, every)), ticktext=shown, showticklabels=True,
                     tickfont=dict(size=size), automargin=False)
        out.update_layout(margin=dict(l=left + int(start * width), r=40, t=top, b=bottom, autoexpand=False))
        fraction = (end - start) / (1 - start)
        named = -(-n // every) if n else 1  # every k-th label: the axis titles say so
        out.update_xaxes(title=dict(text=every_kth("attends to (key)", n, named)), side="top", tickangle=-60,
                         domain=[0, fraction], **ticks)
        out.update_yaxes(title=dict(text=every_kth("query", n, named)), domain=[0, 1], **ticks)
        # the heatmap's colour bar only: a clickable heatmap also carries an invisible Scatter of click
        # markers, which has no colour bar (setting one on every trace raised, and the export failed)
        out.update_traces(showscale=True, colorbar=dict(len=1, lenmode="fraction", thickness=26, y=0.5,
                                                        yanchor="middle", x=fraction + 0.02, xanchor="left",
                                                        title=dict(text="weight", side="right")),
                          selector=dict(type="heatmap"))
    elif meta.get("kind") == "heads":
        _heads_slide(out, meta.get("labels", []), bool(subtitle))
    elif meta.get("labels"):  # bars over words: every word where there is room
        labels = meta["labels"]
        n = len(labels)
        every = -(-n // SLIDE_TICKS) if n else 1
        # bars are categories; ``slide_problem``'s skeleton, which has no bars' names, is laid out by place
        places = list(out.data[0].x) if out.layout.xaxis.type == "category" else list(range(n))
        out.update_xaxes(tickmode="array", tickvals=places[::every],
                         ticktext=[_short(label) for label in labels[::every]],
                         tickfont=dict(size=17 if n <= 30 else 13))
    if meta.get("kind") == "text":  # shaded text laid out in the slide's own pixels, room left for the title
        out.update_layout(margin=dict(l=0, r=0, t=0, b=0, autoexpand=False))
    elif meta.get("kind") not in ("attention", "heads"):
        # a top axis's labels and title grow into the margin that holds the slide's title and
        # subtitle (the confusion matrix's "predicted" and its classes overprinted them)
        out.update_xaxes(side="bottom")
        out.update_yaxes(ticklabelstandoff=6)  # two axes from 0: their "0" labels met at the corner
    return out


def _heads_slide(out: go.Figure, labels: list, subtitle: bool) -> None:
    """Every head's matrix on one slide, laid out in pixels: square cells, each matrix's words on its
    top and left in one readable size, its title under it, rows far enough apart that the tick
    labels of a lower row never reach the title above them (the page's layout, scaled, ran them
    over each other and left 8 px row labels)."""
    width, height = SLIDE
    xs = sorted({tuple(a.domain) for a in out.select_xaxes()})
    ys = sorted({tuple(a.domain) for a in out.select_yaxes()}, reverse=True)  # top row first
    cols, rows = max(len(xs), 1), max(len(ys), 1)
    n = len(labels)
    every = -(-n // SLIDE_TICKS) if n else 1
    size = 15 if n <= 20 else 12 if n <= 40 else 10
    shown = [_short(label, 16) for label in labels[::every]]
    label_px = int(0.6 * size * max(map(len, shown), default=1)) + 14
    top, bottom, left, right, title_px, gap = (115 if subtitle else 85), 10, 20, 110, 28, 30
    room_h = height - top - bottom
    room_w = width - left - right
    side = int(min(room_h / rows - label_px - title_px, (room_w - (cols - 1) * gap) / cols - label_px))
    side = max(side, 40)
    grid_w = cols * (label_px + side) + (cols - 1) * gap
    grid_h = rows * (label_px + side + title_px)
    pad = max(0, (room_w - grid_w) // 2)  # centred
    out.update_layout(margin=dict(l=left + pad, r=width - left - pad - grid_w, t=top, b=height - top - grid_h,
                                  autoexpand=False))
    ticks = dict(tickmode="array", tickvals=list(range(0, n, every)), ticktext=shown, tickfont=dict(size=size),
                 automargin=False)
    for ax in out.select_xaxes():
        c = xs.index(tuple(ax.domain))
        x0 = c * (label_px + side + gap) + label_px
        ax.update(domain=[x0 / grid_w, (x0 + side) / grid_w], **ticks)
    titles = list(out.layout.annotations)
    for k, ax in enumerate(out.select_yaxes()):
        r = ys.index(tuple(ax.domain))
        y0 = r * (label_px + side + title_px) + label_px  # from the grid's top
        ax.update(domain=[1 - (y0 + side) / grid_h, 1 - y0 / grid_h], **ticks)
        if k < len(titles):
            titles[k].update(y=1 - (y0 + side) / grid_h, yanchor="top", yshift=-4, font=dict(size=17))
    out.update_layout(coloraxis_colorbar=dict(len=side / grid_h if rows == 1 else 1, lenmode="fraction",
                                              thickness=22, x=1.02, xanchor="left", y=1, yanchor="top"))


@functools.lru_cache(maxsize=64)
def slide_problem(trace_types: tuple[str, ...], kind: str | None) -> str | None:
    """Why a figure of these trace types (and ``layout.meta`` kind) cannot be laid out as a slide, or
    None. Checked once per shape of figure on an empty skeleton, not on every rerun on the figure
    itself (a 60-word heatmap's slide layout costs about 0.1 s)."""
    skeleton = go.Figure([go.Figure({"data": [{"type": t}]}).data[0] for t in trace_types],
                         layout={"meta": {"kind": kind, "labels": ["a", "b"]} if kind else None})
    try:
        slide(skeleton, "title", "subtitle")
    except Exception as exc:  # plotly's validation errors vary; the reader needs one sentence
        return f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
    return None


def _short(label: str, limit: int = 24) -> str:
    label = " ".join(str(label).split())
    return html.escape(label if len(label) <= limit else label[: limit - 1] + "…", quote=False)


def figure_bytes(fig: go.Figure, fmt: str, title: str = "", subtitle: str = "", scale: float = 2.0) -> bytes:
    """``fig`` for a slide (``slide``: 16:9, every label) as a PNG (``scale`` times its pixel size),
    an SVG or a PDF; or the figure as on the page in a standalone HTML page that embeds plotly.js
    (interactive, opens offline)."""
    if fmt == "html":
        return fig.to_html(include_plotlyjs=True, full_html=True).encode()
    if fmt not in FIGURE_FORMATS:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FIGURE_FORMATS)}")
    os.environ.setdefault("BROWSER_PATH", _browser())  # kaleido (choreographer) reads it
    drawn = slide(fig, title, subtitle)
    _keep_browser()
    try:
        # one figure at a time: kaleido's server answers through one shared queue, so two sessions
        # exporting at once could each be handed the other's figure
        with _export_lock, warnings.catch_warnings():  # plotly passes options the server does not take
            warnings.filterwarnings("ignore", message="The kopts argument is ignored")
            data = drawn.to_image(format=fmt, width=SLIDE[0], height=SLIDE[1], scale=scale if fmt == "png" else 1)
    except Exception as exc:  # kaleido's own errors vary by version; the user needs one message
        raise ExportError(f"could not draw the figure as {fmt.upper()} ({type(exc).__name__}: {exc})") from None
    return _crisp_cells(data) if fmt == "svg" else data


_browser_lock = threading.Lock()
_export_lock = threading.Lock()
_browser_kept = False


def _keep_browser() -> None:
    """One Chromium for every export of this process, started at the first: kaleido otherwise starts
    one per figure, 4-6 s each on 2 cores, where a kept one draws a figure in about 0.6 s. Stopped
    at exit. Should it fail to start, each export starts its own, as before."""
    global _browser_kept
    with _browser_lock:
        if _browser_kept:
            return
        _browser_kept = True
        try:
            import kaleido

            kaleido.start_sync_server(silence_warnings=True)
            atexit.register(kaleido.stop_sync_server, silence_warnings=True)
        except Exception:  # noqa: BLE001 - an older kaleido, or no browser yet: figure by figure
            pass


def _crisp_cells(svg: bytes) -> bytes:
    """A heatmap in an SVG is a PNG of one pixel per cell, stretched: Chromium draws it sharp, other
    viewers (Inkscape, Firefox, PowerPoint) smooth a 12 x 12 image into a blur. The image asks for its
    pixels as they are."""
    def crisp(tag: re.Match) -> bytes:
        text = tag.group(0)
        if b' style="' in text:
            text = text.replace(b' style="', b' style="image-rendering:pixelated;', 1)
        else:
            text = text.replace(b"<image", b'<image style="image-rendering:pixelated"', 1)
        return text.replace(b"<image", b'<image image-rendering="optimizeSpeed"', 1)

    return re.sub(rb"<image\b[^>]*>", crisp, svg)


def explanation_json(explanation: dict) -> bytes:
    """``explanation``: an explained document as JSON-ready data (its ``to_dict()``)."""
    return json.dumps(explanation, indent=1).encode()


def metrics_csv(table: pd.DataFrame) -> bytes:
    """``table``: one row per self-attention matrix (``analysis.explain.metrics_table``)."""
    return csv_bytes(table)


def attention_frame(attentions: Mapping[str, AttentionMap], words: Sequence[Sequence[str]]) -> pd.DataFrame:
    """Every attention weight in long form: the map, one column per axis (indices), the words a
    query and a key index stand for where the axis runs over words, and the weight.

    ``attentions``: map name -> its map for a batch of one, weights and mask shaped (1, *axes) with
    the axes named (``sentence``, ``head``, ``query``, ``key`` ...); ``words``: the words of each
    sentence, which a ``word``-level map's query and key indices count (within the sentence where
    the map has a sentence axis, over the document where it does not)."""
    words_by_sentence = [list(ws) for ws in words]
    flat_words = [w for ws in words_by_sentence for w in ws]
    frames = []
    for name, a in attentions.items():
        w = a.weights[0]  # batch of one
        axes = list(a.axes[1:])
        index = pd.MultiIndex.from_product([range(n) for n in w.shape], names=axes)
        frame = pd.DataFrame({"weight": w.reshape(-1).tolist()}, index=index).reset_index()
        mask = a.mask[0].reshape(-1).tolist()
        frame = frame[mask]
        frame.insert(0, "map", name)
        if a.level == "word":
            for axis in ("query", "key"):
                if axis in frame and "sentence" in frame:
                    frame[f"{axis}_word"] = [words_by_sentence[s][i] if i < len(words_by_sentence[s]) else ""
                                             for s, i in zip(frame["sentence"], frame[axis])]
                elif axis in frame:
                    frame[f"{axis}_word"] = [flat_words[i] if i < len(flat_words) else "" for i in frame[axis]]
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["map", "weight"])


def attention_csv(attentions: Mapping[str, AttentionMap], words: Sequence[Sequence[str]]) -> bytes:
    """``attention_frame`` as CSV."""
    return csv_bytes(attention_frame(attentions, words))


def report_table(table: pd.DataFrame, titles: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The metrics table as a page shows it: maps by their plain names, sentences, time steps and
    heads counted from 1, figures in percent, and only the metrics a page has room for
    (``Metric.in_report``: Gini, and diagonality at b = 1..3 beside its even-spread value).

    ``table``: one row per self-attention matrix (``analysis.explain.metrics_table``); ``titles``:
    map name -> the name a reader reads (``analysis.explain.map_title``); a map without one keeps
    its own."""
    if table.empty:
        return table
    out = pd.DataFrame({"map": table["map"].map(lambda name: (titles or {}).get(name, name))})
    for axis in ("sentence", "time"):
        if axis in table and table[axis].notna().any():
            out[axis] = (table[axis] + 1).astype("Int64").astype(str).replace("<NA>", "—")
    if table["head"].nunique() > 1:
        out["head"] = table["head"] + 1
    out["size"] = table["size"]
    labels = column_labels()
    for column in shown_columns(report=True):
        out[labels[column]] = table[column].map(lambda v: f"{v:.1%}")
    return out


def report_html(checkpoint: str, probabilities: Mapping[str, float], table: pd.DataFrame,
                figures: dict[str, go.Figure], document_html: str | None = None, notes: list[str] | None = None,
                truncation: str | None = None, withheld: str | None = None) -> bytes:
    """One self-contained HTML file: the prediction, the shaded document, every figure (plotly.js
    embedded once, so it opens offline and stays interactive), the metrics table and ``notes``
    (verdicts, captions). Every piece of user text is escaped; ``document_html`` comes from
    ``viz.document_html``, which escapes its text.

    ``checkpoint``: the model's name; ``probabilities``: class -> probability, in the model's class
    order (the prediction is the most probable, the first of equals); ``table``: the metrics table
    as a page shows it (``report_table``); ``truncation``: what the caps left unread, if anything;
    ``withheld``: why the probabilities are no prediction (a sentence), shown in their place."""
    label = max(probabilities, key=probabilities.__getitem__)
    prediction = (f"<h2>No prediction</h2><p>The model is {html.escape(withheld)}.</p>" if withheld else
                  f"<h2>Prediction: {html.escape(label)}</h2><p>"
                  + " · ".join(f"{html.escape(name)} {p:.1%}" for name, p in probabilities.items()) + "</p>")
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>hierattn: {html.escape(checkpoint)} on a document</title>",
        "<style>body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
        "table{border-collapse:collapse;font-size:.8em;max-width:100%}td,th{border:1px solid #ddd;padding:2px 6px;"
        "text-align:right}td:first-child,th:first-child{text-align:left}"
        "h2{margin-top:1.6em}.meta{color:#666;font-size:.9em}</style></head><body>",
        "<h1>Attention analysis</h1>",
        f"<p class='meta'>Checkpoint <code>{html.escape(checkpoint)}</code> · exported "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC by hierattn</p>",
        prediction,
    ]
    if truncation:
        parts.append(f"<p class='meta'>Long document: {html.escape(truncation)}.</p>")
    if document_html:
        parts += ["<h2>Where the model looks</h2>", document_html]
    for line in notes or []:
        parts.append(f"<p>{html.escape(line)}</p>")
    first = True
    for title, fig in figures.items():
        parts.append(f"<h2>{html.escape(title)}</h2>")
        parts.append(fig.to_html(include_plotlyjs=True if first else False, full_html=False))
        first = False
    if len(table):
        parts += ["<h2>Gini and diagonality of every self-attention matrix</h2>",
                  "<p class='meta'>Sentences and heads are numbered from 1, as in the app. b = k: the share of "
                  "weight within k positions of the diagonal; (even): what an even spread over the same words gives. "
                  "An even spread's Gini is 0. Every bandwidth is in the Metrics (CSV) export.</p>",
                  table.to_html(index=False, escape=True, na_rep="—", classes="metrics")]
    parts.append("</body></html>")
    return "\n".join(parts).encode()
