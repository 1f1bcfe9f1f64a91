"""Export: figures as PNG, SVG and standalone HTML; an explanation as JSON (the same JSON as
``python -m hierattn explain``), its metrics and attention maps as CSV; a whole analysis of a
document as one self-contained HTML report. No Streamlit: pages hand these to download buttons.

PNG and SVG are drawn by kaleido, which drives the system's Chromium (Debian's ``chromium``);
without a browser they raise ``ExportError`` with what to install, and HTML, CSV and JSON still work.
"""
from __future__ import annotations

import html
import json
import os
import shutil
from datetime import UTC, datetime

import pandas as pd
import plotly.graph_objects as go

from hierattn.analysis.explain import Explanation, metrics_table
from hierattn.data.formats import csv_bytes

FIGURE_FORMATS = ("png", "svg", "html")


class ExportError(RuntimeError):
    """An export format cannot be produced here; the message says why."""


def _browser() -> str:
    found = os.environ.get("BROWSER_PATH") or shutil.which("chromium") or shutil.which("chromium-browser") or \
        shutil.which("google-chrome")
    if not found:
        raise ExportError("PNG and SVG export need Chromium (apt-get install -y chromium); "
                          "HTML export works without it")
    return found


def figure_bytes(fig: go.Figure, fmt: str, scale: float = 2.0) -> bytes:
    """``fig`` as a PNG (``scale`` times its pixel size, for slides), an SVG, or a standalone HTML
    page that embeds plotly.js (opens offline)."""
    if fmt == "html":
        return fig.to_html(include_plotlyjs=True, full_html=True).encode()
    if fmt not in ("png", "svg"):
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FIGURE_FORMATS)}")
    os.environ.setdefault("BROWSER_PATH", _browser())  # kaleido (choreographer) reads it
    width = fig.layout.width or 900
    height = fig.layout.height or 450
    try:
        return fig.to_image(format=fmt, width=width, height=height, scale=scale if fmt == "png" else 1)
    except Exception as exc:  # kaleido's own errors vary by version; the user needs one message
        raise ExportError(f"could not draw the figure as {fmt.upper()} ({type(exc).__name__}: {exc})") from None


def explanation_json(ex: Explanation) -> bytes:
    return json.dumps(ex.to_dict(), indent=1).encode()


def metrics_csv(ex: Explanation) -> bytes:
    return csv_bytes(metrics_table(ex))


def attention_frame(ex: Explanation) -> pd.DataFrame:
    """Every attention weight in long form: the map, one column per axis (indices), the words a
    query and a key index stand for where the axis runs over words, and the weight."""
    words_by_sentence = [[t.text for t in s.tokens] for s in ex.document.sentences]
    flat_words = [w for ws in words_by_sentence for w in ws]
    frames = []
    for name, a in ex.attentions.items():
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


def attention_csv(ex: Explanation) -> bytes:
    return csv_bytes(attention_frame(ex))


def report_html(ex: Explanation, figures: dict[str, go.Figure], document_html: str | None = None,
                notes: list[str] | None = None) -> bytes:
    """One self-contained HTML file: the prediction, the shaded document, every figure (plotly.js
    embedded once, so it opens offline and stays interactive), the metrics table and ``notes``
    (verdicts, captions). Every piece of user text is escaped; ``document_html`` comes from
    ``viz.document_html``, which escapes its text."""
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>hierattn: {html.escape(ex.classifier_name)} on a document</title>",
        "<style>body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
        "table{border-collapse:collapse;font-size:.85em}td,th{border:1px solid #ddd;padding:2px 6px;text-align:right}"
        "h2{margin-top:1.6em}.meta{color:#666;font-size:.9em}</style></head><body>",
        "<h1>Attention analysis</h1>",
        f"<p class='meta'>Checkpoint <code>{html.escape(ex.classifier_name)}</code> · exported "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC by hierattn</p>",
        f"<h2>Prediction: {html.escape(ex.label)}</h2><p>"
        + " · ".join(f"{html.escape(label)} {p:.1%}" for label, p in zip(ex.labels, ex.probabilities)) + "</p>",
    ]
    if ex.document.truncation.message:
        parts.append(f"<p class='meta'>Long document: {html.escape(ex.document.truncation.message)}.</p>")
    if document_html:
        parts += ["<h2>Where the model looks</h2>", document_html]
    for line in notes or []:
        parts.append(f"<p>{html.escape(line)}</p>")
    first = True
    for title, fig in figures.items():
        parts.append(f"<h2>{html.escape(title)}</h2>")
        parts.append(fig.to_html(include_plotlyjs=True if first else False, full_html=False))
        first = False
    table = metrics_table(ex)
    if len(table):
        parts += ["<h2>Gini and diagonality of every self-attention matrix</h2>",
                  table.to_html(index=False, float_format=lambda v: f"{v:.4f}", escape=True)]
    parts.append("</body></html>")
    return "\n".join(parts).encode()
