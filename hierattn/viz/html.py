"""Escaped HTML of a document shaded by attention, and markdown-safe text for Streamlit. Every
piece of user text that goes into HTML passes through ``html.escape`` and into Streamlit markdown
through ``md_text`` or ``md_code``."""
from __future__ import annotations

import html
import re
from collections.abc import Sequence

RGB = (31, 119, 180)
# Text kept as typed (spaces, line breaks), and broken anywhere when a run has no space to break
# at (a pasted URL or 40,000 "!"), so it never runs out of its column.
_WRAPS = "white-space:pre-wrap;overflow-wrap:anywhere"
# The shading's rules, written once per piece of HTML instead of on every word and sentence: a word
# then carries only its weight (the tooltip) and its shade (``--a``, the alpha; ``--rgb`` for another
# hue), and a ~550-word article's shading is 45 KB instead of 100 KB (the page builds, hashes and
# sends every byte on each paste). Class names start with ``ha-`` so that they meet none of
# Streamlit's; every function here whose markup uses them puts this block in front of it.
_STYLE = ("<style>.ha-w{background:rgba(var(--rgb,31,119,180),var(--a));border-radius:3px;padding:0 1px}"
          ".ha-w.ha-dk{color:#fff}"
          ".ha-w.ha-unk{text-decoration:underline wavy #d62728;text-decoration-skip-ink:none;"
          "outline:1.5px dashed #d62728;outline-offset:-1px;background-image:repeating-linear-gradient(135deg,"
          "rgba(214,39,40,.55) 0 2px,transparent 2px 6px)}"
          ".ha-row{display:flex;gap:8px;margin:2px 0;line-height:1.7}"
          ".ha-bar{flex:0 0 90px;align-self:flex-start;height:1.7em;display:flex;align-items:center;gap:4px;"
          "font-size:0.75em;color:#555}.ha-bar>div{background:#ff7f0e;height:10px;border-radius:2px}"
          f".ha-text{{flex:1;{_WRAPS};min-width:0}}</style>")

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>$~=:&^@])")
_UNLINKED = re.compile(r"(?i)(?<=http)(?=\\:)|(?<=https)(?=\\:)|(?<=www)(?=\\\.)|(?=\\@)")


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """"1 sentence", "2 sentences", "1,024 words": a count with its noun in the right number."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def md_text(value) -> str:
    r"""``value`` as literal text inside Streamlit markdown (``st.markdown``, ``st.caption``,
    ``st.error`` ...): every character markdown, HTML or LaTeX (``$``) would read is backslash-
    escaped, and line breaks become spaces, so a label such as ``**x**`` or ``$x$`` shows as typed.
    Everything a user, an upload or a checkpoint supplies goes through here (or
    ``md_code``) before Streamlit renders it: labels, names, metric values, options, tooltips.

    Escapes alone do not stop the browser's autolinks: Streamlit's markdown finds bare URLs and e-mail
    addresses in the text after it is parsed (GFM's autolink literals), so ``http\://x`` was still
    a link in Chromium. An invisible word joiner (U+2060) inside ``http:``, ``www.`` and before
    ``@`` leaves nothing those patterns match; the text reads the same."""
    escaped = _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(str(value).split()))
    return _UNLINKED.sub("\u2060", escaped)


def md_code(value) -> str:
    """``value`` as an inline code span (shown verbatim; a backtick inside would close the span,
    so it becomes a prime)."""
    return "`" + " ".join(str(value).replace("`", "ʹ").split()) + "`"


def document_html(text: str, sentences: Sequence[tuple[int, int, Sequence[tuple[int, int]]]],
                  word_weights: Sequence[Sequence[float]] | None,
                  sentence_weights: Sequence[float] | None, scale: str = "document",
                  peak: float | None = None, sentence_peak: float | None = None,
                  struck: Sequence[int] = (), marked: Sequence[tuple[int, int]] = (),
                  unknown: Sequence[Sequence[bool]] | None = None, unread: dict[int, str] | None = None) -> str:
    """The pasted text, each sentence with a bar for its attention, each word shaded by its
    attention (HCAN Figure 4).

    ``struck``: sentences (indices) shown crossed out and faded, as removed by an edit;
    ``marked``: word spans outlined in orange, as changed by an edit (Explore's "What if?");
    ``unknown``: per sentence, per word, True where the model's vocabulary lacks the word (it read
    ``<unk>``): underlined in red, so a confident answer on unknown words shows what it rests on;
    ``unread``: text the caps cut, by the sentence it follows (``Document.unread()``): shown in
    grey where it stands, the sentences beyond the caps after the last one read.

    ``sentences``: (start, end, [(word start, word end), ...]) character spans into ``text``.
    ``scale="document"``: one colour scale for the whole document (the darkest word is the
    document's largest weight), so spread-out and focused attention look different;
    ``scale="sentence"``: each sentence's top word is darkest, to read within long documents.
    Sentence bars are relative to the top sentence, with the weight printed beside them. Exact
    weights are in tooltips. Characters between words are shown unshaded; all text is escaped.
    ``peak`` / ``sentence_peak``: the weights that get the darkest shade and the full bar, in place
    of this document's own maxima, so two models' documents share one scale (Compare page).
    """
    if scale not in ("document", "sentence"):
        raise ValueError(f"scale must be 'document' or 'sentence', got {scale!r}")
    top_sentence = sentence_peak or (max(sentence_weights, default=0.0) if sentence_weights else 0.0)
    top_word = peak or (max((w for ws in word_weights for w in ws), default=0.0) if word_weights else 0.0)
    rows = []
    for s, (start, end, words) in enumerate(sentences):
        parts, cursor = [], start
        ws = word_weights[s] if word_weights else [0.0] * len(words)
        darkest = (max(ws, default=0.0) if scale == "sentence" else top_word) or 1.0
        flags = unknown[s] if unknown and s < len(unknown) else [False] * len(words)
        for (w_start, w_end), w, is_unknown in zip(words, ws, flags):
            parts.append(html.escape(text[cursor:w_start]))
            alpha = min(0.85, 0.85 * w / darkest)
            if is_unknown:
                word = _shaded(html.escape(text[w_start:w_end]), alpha, RGB,
                               f"weight {w:.3f} · not in the model's vocabulary (read as <unk>)", unknown=True)
            else:
                word = _shaded(html.escape(text[w_start:w_end]), alpha, RGB, f"weight {w:.3f}")
            if any(a < w_end and w_start < b for a, b in marked):
                word = f'<span style="outline:2px solid #ff7f0e;border-radius:3px">{word}</span>'
            parts.append(word)
            cursor = w_end
        parts.append(html.escape(text[cursor:end]))
        cut = (unread or {}).get(s)
        last = s == len(sentences) - 1
        if cut and not last:  # words beyond the per-sentence cap, where they stand
            parts.append(_unread(cut))
        if sentence_weights:
            sw = sentence_weights[s]
            bar = (f'<div class="ha-bar" title="sentence weight {sw:.3f}">'
                   f'<div style="width:{50 * sw / (top_sentence or 1):.0f}px"></div>{sw:.2f}</div>')
        else:  # no sentence weights (a flat model): the text uses the full width
            bar = ""
        gone = ' style="text-decoration:line-through;opacity:0.45"' if s in struck else ""
        rows.append(f'<div class="ha-row">{bar}<div class="ha-text"{gone}>{"".join(parts)}</div></div>')
        if cut and last:  # the sentences beyond the caps, after the last one read
            label = ('<div style="flex:0 0 90px;font-size:0.75em;color:#999">not read</div>' if sentence_weights
                     else "")
            rows.append(f'<div class="ha-row">{label}<div class="ha-text">{_unread(cut.lstrip())}</div></div>')
    return f'{_STYLE}<div style="font-size:0.95em">{"".join(rows)}</div>'


UNREAD_SHOWN = 3000  # characters of unread text shown; the rest is counted


def _unread(text: str) -> str:
    more = len(text) - UNREAD_SHOWN
    shown = html.escape(text[:UNREAD_SHOWN]) + (f" … ({more:,} more characters)" if more > 0 else "")
    return (f'<span class="unread" title="not read: beyond the model\'s caps" '
            f'style="color:#9a9a9a;text-decoration:line-through;text-decoration-color:#ccc">{shown}</span>')


def shading_legend_html(peak: float, even: tuple[float, float] | None, unknown: int = 0, unread: bool = False,
                        relative: bool = False) -> str:
    """The key to the shading: the colour ramp from 0 (white) to ``peak`` (the darkest shade), with
    the weight an even spread would give marked on it (``even`` = (least, most), a line where they
    are equal, a band where sentences differ in length: ``even_word_weight``), so an even spread
    reads as even; then the marks for unknown and unread words, where there are any.
    ``relative``: each sentence has its own darkest word (the ramp then reads 0 .. its top)."""
    top = f"{peak:.3g}" if not relative else "each sentence's top word"
    ramp = ('<span style="display:inline-block;position:relative;width:160px;height:12px;vertical-align:middle;'
            f'border:1px solid #ccc;background:linear-gradient(to right,rgba({RGB[0]},{RGB[1]},{RGB[2]},0),'
            f'rgba({RGB[0]},{RGB[1]},{RGB[2]},0.85))">')
    shown = even is not None and not relative and peak > 0
    if shown:
        low, high = (min(1.0, v / peak) * 100 for v in even)
        ramp += (f'<span class="even" style="position:absolute;left:{low:.1f}%;top:-3px;'
                 f'width:max(2px,{high - low:.1f}%);height:16px;background:rgba(214,39,40,0.6)"></span>')
    ramp += "</span>"
    parts = [f'<span>word weight: 0 {ramp} {html.escape(top)}</span>']
    if shown:
        value = f"{even[0]:.3g}" if even[0] == even[1] else f"{even[0]:.3g} to {even[1]:.3g} by sentence length"
        parts.append(f'<span><span style="color:#d62728">▌</span> an even spread ({value})</span>')
    if unknown:
        parts.append(f'<span>{_shaded("word", 0.0, RGB, "", unknown=True)} not in the model\'s vocabulary '
                     f'({unknown:,})</span>')
    if unread:
        parts.append(f'<span>{_unread("grey")} not read (beyond the caps)</span>')
    return ((_STYLE if unknown else "")
            + '<div style="font-size:0.8em;color:#555;display:flex;flex-wrap:wrap;gap:18px;margin:4px 0">'
            f'{"".join(parts)}</div>')


def shaded_document_html(text: str, spans: Sequence[tuple[int, int, Sequence[tuple[int, int]]]],
                         words: Sequence[Sequence[float]] | None, sentences: Sequence[float] | None,
                         scale: str = "document", part: slice = slice(None), coverage: bool = False,
                         legend: bool = True, unknown: Sequence[Sequence[bool]] | None = None,
                         unread: dict[int, str] | None = None, peak: float | None = None,
                         sentence_peak: float | None = None) -> str:
    """``document_html`` for a whole document: the sentences of ``part`` (a page of a long
    document) shaded by ``words`` / ``sentences`` (per sentence of the whole document) on the whole
    document's scale, its unknown words and unread text marked, and the key to the colours
    (``legend``; the even spread is left off for ``coverage`` weights, which are not a distribution).
    ``peak`` / ``sentence_peak``: a scale shared with other documents drawn beside this one (two
    runs' maps at one epoch), in place of this document's own maxima.

    ``text`` and ``spans``, ``unknown`` and ``unread`` as ``document_html`` takes them, for every
    sentence of the document (an explained document's ``text_view()`` gives them)."""
    first, last = part.indices(len(spans))[:2]
    shown = {i - first: cut for i, cut in (unread or {}).items() if first <= i < last}
    peak = peak or max((w for ws in words or [] for w in ws), default=None)
    top = sentence_peak or (max(sentences, default=None) if sentences else None)
    body = document_html(text, spans[part], words[part] if words else None, sentences[part] if sentences else None,
                         scale, peak, top, unknown=unknown[part] if unknown else None, unread=shown)
    if not legend or words is None:
        return body
    return body + shading_legend_html(peak or 0.0, None if coverage else even_word_weight(words),
                                      sum(sum(flags) for flags in unknown or []), bool(unread),
                                      relative=scale == "sentence")


def even_word_weight(words: Sequence[Sequence[float]]) -> tuple[float, float] | None:
    """The weight an even spread gives a word, as (least, most): 1 / the document's words when the
    weights are one distribution over the document (a flat model); 1 / the sentence's words when
    each sentence's weights are a distribution of their own (HAN's and HCAN's word attention), so
    from 1 / the longest sentence to 1 / the shortest; None when they are neither."""
    sums = [sum(ws) for ws in words if ws]
    if len(sums) > 1 and all(abs(t - 1) < 1e-3 for t in sums):
        return 1 / max(len(ws) for ws in words), 1 / min(len(ws) for ws in words if ws)
    if sums and abs(sum(sums) - 1) < 1e-3:
        count = sum(len(ws) for ws in words)
        return 1 / count, 1 / count
    return None


# Two hues for "model A weighs this more" and "model B weighs this more" (colour-blind safe pair).
ARGB, BRGB = (230, 97, 1), (94, 60, 153)


def difference_html(text: str, sentences: Sequence[tuple[int, int, Sequence[tuple[int, int]]]],
                    differences: Sequence[Sequence[float | None]]) -> str:
    """The text with each word shaded by a signed difference of importance: orange where model A
    weighs it more, purple where model B does, white where they agree, grey text where only one
    model read it (``None``). Shades are relative to the largest absolute difference."""
    top = max((abs(d) for ds in differences for d in ds if d is not None), default=0.0) or 1.0
    rows = []
    for (start, end, words), ds in zip(sentences, differences):
        parts, cursor = [], start
        for (w_start, w_end), d in zip(words, ds):
            parts.append(html.escape(text[cursor:w_start]))
            word = html.escape(text[w_start:w_end])
            if d is None:
                parts.append(f'<span title="read by one model only" style="color:#aaa">{word}</span>')
            else:
                rgb = ARGB if d > 0 else BRGB
                alpha = 0.85 * abs(d) / top
                parts.append(_shaded(word, alpha, rgb, f"A − B = {d:+.4f}"))
            cursor = w_end
        parts.append(html.escape(text[cursor:end]))
        rows.append(f'<div style="margin:2px 0;line-height:1.7;{_WRAPS}">{"".join(parts)}</div>')
    return f'{_STYLE}<div style="font-size:0.95em">{"".join(rows)}</div>'


def word_attention_html(words: Sequence[str], rows: Sequence[tuple[str, Sequence[float]]], chosen: int) -> str:
    """HCAN Figures 5 and 8: one line per (map, head), the sentence's words shaded by the
    attention the chosen word (outlined) gives them; darkest = the line's largest weight, exact
    weights in tooltips. ``rows``: (label, weights over ``words``)."""
    lines = []
    for label, weights in rows:
        top = max(weights, default=0.0) or 1.0
        cells = []
        for i, (word, w) in enumerate(zip(words, weights)):
            alpha = 0.85 * w / top
            outline = "outline:2px solid #d62728;" if i == chosen else ""
            cells.append(_shaded(html.escape(word), alpha, RGB, f"weight {w:.3f}", "padding:0 2px;" + outline))
        lines.append(f'<div style="display:flex;gap:8px;margin:3px 0;line-height:1.8"><div style="flex:0 0 150px;'
                     f'font-size:0.8em;color:#555">{html.escape(label)}</div><div '
                     f'style="flex:1">{" ".join(cells)}</div></div>')
    return f'{_STYLE}<div style="font-size:0.95em">{"".join(lines)}</div>'


def plain_text_html(text: str, max_height: int = 320) -> str:
    """A document as escaped, wrapped text in a scrolling box (no markdown, no HTML from the text)."""
    return (f'<div style="white-space:pre-wrap;max-height:{max_height}px;overflow-y:auto;border:1px solid #ddd;'
            f'border-radius:6px;padding:8px;font-size:0.92em">{html.escape(text)}</div>')


def _shaded(escaped: str, alpha: float, rgb: tuple[int, int, int], title: str, style: str = "",
            unknown: bool = False) -> str:
    """One word (already escaped) on a background of ``rgb`` at ``alpha``; white text on dark shades;
    ``unknown`` (a word the model read as ``<unk>``): red diagonal hatching over the shade and a red
    dashed outline, which read on white and on the darkest blue alike (a red underline alone vanished
    on a dark cell), besides the wavy underline. ``style``: declarations of this word's own (an
    outline). Drawn by the ``ha-w`` rules of ``_STYLE``, which the caller's HTML carries."""
    classes = "ha-w" + (" ha-dk" if alpha > 0.55 else "") + (" ha-unk" if unknown else "")
    hue = "" if rgb == RGB else f"--rgb:{rgb[0]},{rgb[1]},{rgb[2]};"
    own = ";" + style if style else ""
    return f'<span class="{classes}" title="{html.escape(title)}" style="{hue}--a:{alpha:.3f}{own}">{escaped}</span>'
