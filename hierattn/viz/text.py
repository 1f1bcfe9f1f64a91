"""Shaded text as a figure: documents shaded by attention, laid out word by word in a slide's
pixels, so PNG, SVG and PDF keep what the page shows as HTML."""
from __future__ import annotations

import html
from collections.abc import Sequence

import plotly.graph_objects as go

from hierattn.viz.figures import UNKNOWN_MARK, short, unknown_note
from hierattn.viz.style import own_style

_NARROW, _WIDE, _WIDEST = set("ijlI.,;:'!|tf ()[]"), set("mwMW@%"), set("MW")


def text_px(text: str, size: float) -> float:
    """About how wide ``text`` is in pixels at font ``size`` in plotly's sans-serif (Open Sans,
    then Arial), from coarse per-character advance widths: enough to lay words out without
    overlap, not to typeset."""
    em = sum(0.3 if c in _NARROW else 0.95 if c in _WIDEST else 0.85 if c in _WIDE else 0.36 if c == "r"
             else 0.7 if c.isupper() else 0.58 for c in text)
    return em * size


@own_style
def shaded_text(panels: Sequence[tuple[str, Sequence[Sequence[str]], Sequence[Sequence[float]],
                                       Sequence[Sequence[bool]]]], peak: float, width: int = 1600,
                height: int = 900, font: int = 16) -> go.Figure:
    """Documents shaded by attention as a figure, side by side, for a slide: the page's shaded text
    (``html.document_html``), drawn with shapes and text so PNG, SVG and PDF keep it.

    ``panels``: one (heading, words per sentence, weights per sentence, unknown per sentence) per
    column. Every word's shade is ``weight / peak`` on one scale for all panels (the page's
    shared scale), the same blue and cap as the page; unknown words carry ``UNKNOWN_MARK``. Words
    are laid out in pixels of a ``width`` x ``height`` canvas (each word as wide as its letters,
    ``text_px``), each sentence on a new line; what does not fit is counted under its column."""
    from hierattn.viz.html import RGB

    fig = go.Figure()
    gap, top, left = 40, 170, 60
    column = (width - 2 * left - gap * (len(panels) - 1)) / max(len(panels), 1)
    line, space, bottom = int(font * 1.75), 6, height - 60
    shapes, notes = [], []
    for p, (heading, sentences, weights, unknown) in enumerate(panels):
        x0 = left + p * (column + gap)
        notes.append(dict(x=x0, y=top - 20, text=f"<b>{short(heading, 60)}</b>", xanchor="left", yanchor="bottom",
                          font=dict(size=font + 2)))
        x, y, drawn, total = x0, top, 0, sum(len(s) for s in sentences)
        for s, words in enumerate(sentences):
            if s and x > x0:  # each sentence starts a line, as on the page
                x, y = x0, y + line
            for w, word in enumerate(words):
                flag = bool(unknown[s][w]) if s < len(unknown) and w < len(unknown[s]) else False
                label = short(word, 30) + (UNKNOWN_MARK if flag else "")
                size = text_px(html.unescape(label), font) + 8
                if x + size > x0 + column and x > x0:
                    x, y = x0, y + line
                if y + line > bottom:
                    break
                alpha = min(0.85, 0.85 * weights[s][w] / peak) if peak > 0 else 0.0
                shapes.append(dict(type="rect", x0=x, x1=x + size, y0=y, y1=y + line - 6, line=dict(width=0),
                                   fillcolor=f"rgba({RGB[0]},{RGB[1]},{RGB[2]},{alpha:.3f})", layer="below"))
                notes.append(dict(x=x + 3, y=y + (line - 6) / 2, text=label, xanchor="left", yanchor="middle",
                                  font=dict(size=font, color="#fff" if alpha > 0.55 else "#31333F")))
                x, drawn = x + size + space, drawn + 1
            else:
                continue
            break
        if drawn < total:
            notes.append(dict(x=x0, y=bottom + 8, text=f"the first {drawn:,} of {total:,} words", xanchor="left",
                              yanchor="top", font=dict(size=font - 2, color="#6b7280")))
    key = "darkest: the largest weight on the slide" + unknown_note([f for p in panels for s in p[3] for f in s])
    notes.append(dict(x=width - left, y=bottom + 8, text=key, xanchor="right", yanchor="top",
                      font=dict(size=font - 2, color="#6b7280")))
    for note in notes:
        note.update(showarrow=False, xref="x", yref="y")
    fig.update_layout(width=width, height=height, shapes=shapes, annotations=notes, margin=dict(l=0, r=0, t=0, b=0),
                      xaxis=dict(range=[0, width], visible=False, fixedrange=True),
                      yaxis=dict(range=[height, 0], visible=False, fixedrange=True),
                      meta={"kind": "text"})
    return fig
