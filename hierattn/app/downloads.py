"""Download buttons: a figure's Export popover (PNG, SVG, PDF, standalone HTML) and a table's CSV and
JSON, each built only when clicked."""
from __future__ import annotations

import re

import streamlit as st

SUBTITLE = "_slide_subtitle"  # session_state: what the page shows its figures of (model, document)


def slide_subtitle(text: str) -> None:
    """What this page's figures are about (model, document): the second line of every exported
    slide's title."""
    st.session_state[SUBTITLE] = text


def chart(fig, name: str, container=None, key: str | None = None, collect: dict | None = None,
          select: bool = False, subtitle: str | None = None):
    """A plotly figure with an Export popover under it: PNG, SVG and PDF for a slide (16:9, every
    label, titled with ``name`` and the page's ``slide_subtitle``) and the interactive HTML, each
    drawn only when its button is clicked. ``collect``: a dict that gathers the page's figures by
    name (for the one-click report). ``select``: a click on a cell reruns the page and is returned
    (plotly's selection event, with the point's ``x`` and ``y``; needs ``key``); else None."""
    from hierattn.viz import export

    where = container or st
    # a figure that sets its own width (a heatmap: square cells, its colour bar as tall as they are)
    # keeps it; the others fill their column
    event = where.plotly_chart(fig, width="content" if fig.layout.width else "stretch", key=key,
                               **({"on_select": "rerun", "selection_mode": "points"} if select else {}))
    if collect is not None:
        collect[name] = fig
    subtitle = subtitle or st.session_state.get(SUBTITLE, "")  # a figure of one sentence names that sentence
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-").lower() or "figure"
    problem = export.slide_problem(tuple(t.type for t in fig.data), (fig.layout.meta or {}).get("kind"))
    with where.popover("Export", icon=":material/download:"):
        st.caption("PNG, SVG and PDF are drawn for a 16:9 slide, every label shown; HTML stays interactive.")
        if problem:
            st.warning(f"This figure cannot be drawn as a slide ({problem}); the HTML export still works.",
                       icon=":material/error:")
        for fmt, mime in (("png", "image/png"), ("svg", "image/svg+xml"), ("pdf", "application/pdf"),
                          ("html", "text/html")):
            if problem and fmt != "html":
                continue
            st.download_button(fmt.upper(), lambda fmt=fmt: export.figure_bytes(fig, fmt, name, subtitle),
                               f"{slug}.{fmt}", mime, key=f"export_{key or slug}_{fmt}", on_click="ignore")
    return event if select else None


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
