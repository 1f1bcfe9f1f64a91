"""Download buttons: a figure's Export popover (PNG, SVG, standalone HTML) and a table's CSV and
JSON, each built only when clicked."""
from __future__ import annotations

import re

import streamlit as st


def chart(fig, name: str, container=None, key: str | None = None, collect: dict | None = None) -> None:
    """A plotly figure with an Export popover under it: PNG, SVG and standalone HTML, each drawn
    only when its button is clicked. ``collect``: a dict that gathers the page's figures by name
    (for the one-click report)."""
    from hierattn.viz import export

    where = container or st
    where.plotly_chart(fig, width="stretch", key=key)
    if collect is not None:
        collect[name] = fig
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-").lower() or "figure"
    with where.popover("Export", icon=":material/download:"):
        for fmt, mime in (("png", "image/png"), ("svg", "image/svg+xml"), ("html", "text/html")):
            st.download_button(fmt.upper(), lambda fmt=fmt: export.figure_bytes(fig, fmt), f"{slug}.{fmt}", mime,
                               key=f"export_{key or slug}_{fmt}", on_click="ignore")


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
