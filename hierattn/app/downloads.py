"""Download buttons: a figure's Export popover (PNG, SVG, PDF, standalone HTML; its buttons drawn only
while it is open) and a table's CSV and JSON, each built only when clicked."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import streamlit as st


@dataclass
class Figures:
    """What a group of figures drawn by one page is about, and the figures drawn so far.

    ``about`` is the second line of every exported slide's title: the model and document (Explore,
    a Tour step), or the model, data set and split (Evaluation, Dataset statistics), written by the
    code that draws the figures. It is passed to each ``chart``, never kept in the session: a
    subtitle kept per session was set by one page and printed on another page's slides.
    ``drawn``: the figures by name, for the one-click report."""

    about: str
    drawn: dict = field(default_factory=dict)

    @classmethod
    def of_document(cls, model: str, text: str, kind: str = "") -> Figures:
        """Figures of one model on one document: "model (kind) · “its first words…”"."""
        from hierattn.app.widgets import opening

        return cls(f"{model}{f' ({kind})' if kind else ''} · “{opening(text)}”")

    @classmethod
    def of_split(cls, model: str, dataset: str, split: str, documents: int | None = None) -> Figures:
        """Figures of one model over a split: "model · data set, split split · n documents"."""
        return cls(f"{model} · {dataset}, {split} split" + (f" · {documents:,} documents" if documents else ""))


def chart(fig, name: str, container=None, key: str | None = None, *, figures: Figures, select: bool = False,
          subtitle: str | None = None):
    """A plotly figure with an Export popover under it: PNG, SVG and PDF for a slide (16:9, every
    label, titled with ``name``, subtitled with ``figures.about`` or, for a figure of one part of it
    such as a sentence, ``subtitle``) and the interactive HTML, each drawn only when its button is
    clicked. ``select``: a click on a cell reruns the page and is returned (plotly's selection
    event, with the point's ``x`` and ``y``; needs ``key``); else None."""
    where = container or st
    # a figure that sets its own width (a heatmap: square cells, its colour bar as tall as they are)
    # keeps it; the others fill their column
    event = where.plotly_chart(fig, width="content" if fig.layout.width else "stretch", key=key,
                               **({"on_select": "rerun", "selection_mode": "points"} if select else {}))
    figures.drawn[name] = fig
    _export(where, fig, name, subtitle or figures.about, key)
    return event if select else None


def slide_of(build, name: str, container=None, key: str | None = None, *, figures: Figures) -> None:
    """An Export popover for a figure the page draws otherwise (Compare's shaded text is HTML on
    the page; its slide is ``viz.shaded_text``, the same words on the same scale). ``build()``
    makes the figure when a format is clicked: its hundreds of word shapes are not built on every
    run of the page for a popover most runs never open."""
    _export(container or st, build, name, figures.about, key)


def _export(where, fig, name: str, subtitle: str, key: str | None) -> None:
    """``fig``: a figure, or a function that builds it when a format is clicked. The popover is
    stateful and draws its buttons only while it is open: most page runs never open it, and its
    caption and four buttons were 5 of a figure's 6 messages on every run (15 of the 87 a
    bbc-news-han paste sent). Opening or closing it reruns the page, as any widget does; an
    ``st.fragment`` around it would rerun the popover alone, but cost every run more than the
    buttons did (each fragment deep-copies the page's container stack and adds a container)."""
    from hierattn.viz import export

    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-").lower() or "figure"
    menu = where.popover("Export", icon=":material/download:", key=f"export_menu_{key or slug}", on_change="rerun")
    if not menu.open:
        return
    problem = None if callable(fig) else export.slide_problem(tuple(t.type for t in fig.data),
                                                                (fig.layout.meta or {}).get("kind"))
    with menu:
        st.caption("PNG, SVG and PDF are drawn for a 16:9 slide, every label shown; HTML stays interactive.")
        if problem:
            st.warning(f"This figure cannot be drawn as a slide ({problem}); the HTML export still works.",
                       icon=":material/error:")
        for fmt, mime in (("png", "image/png"), ("svg", "image/svg+xml"), ("pdf", "application/pdf"),
                          ("html", "text/html")):
            if problem and fmt != "html":
                continue
            st.download_button(fmt.upper(), lambda fmt=fmt: export.figure_bytes(fig() if callable(fig) else fig, fmt,
                                                                                 name, subtitle),
                               f"{slug}.{fmt}", mime, key=f"export_{key or slug}_{fmt}", on_click="ignore")


def table_downloads(frame, stem: str, key: str, container=None) -> None:
    """A table's CSV (formula cells neutralised) and JSON (one object per row), built on click."""
    from hierattn.data.formats import csv_bytes

    where = container or st
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", stem).strip("-").lower() or "table"
    with where.popover("Download table", icon=":material/table:"):
        st.download_button("CSV", lambda: csv_bytes(frame), f"{slug}.csv", "text/csv", key=f"{key}_csv",
                           on_click="ignore")
        st.download_button("JSON", lambda: frame.to_json(orient="records", force_ascii=False, indent=1).encode(),
                           f"{slug}.json", "application/json", key=f"{key}_json", on_click="ignore")
