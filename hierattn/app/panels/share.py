"""Share and export (Explore): the view in the address bar, and the explanation as files."""
from __future__ import annotations

import streamlit as st

from hierattn import viz
from hierattn.analysis.explain import Explanation, map_title
from hierattn.analysis.metric_tables import metrics_table
from hierattn.app import documents
from hierattn.app.downloads import Figures
from hierattn.app.panels.shading import Shading
from hierattn.app.url_state import document_id, mirror_view
from hierattn.checkpoint.classifier import WITHHELD
from hierattn.limits import KEPT_DOCUMENT_DAYS, KEPT_DOCUMENT_HOLD_MINUTES, KEPT_DOCUMENT_KB, KEPT_DOCUMENTS
from hierattn.viz import export


def share_and_export(ex: Explanation, name: str, dataset: str | None, text: str, doc_key: str, shading: Shading,
                     self_view: dict, figures: Figures, notes: list[str]) -> None:
    kind, document_ref = document_id(text, dataset)
    link = mirror_view({"model": name, kind: document_ref, "head": st.session_state.get("target_head"),
                        "scale": st.session_state.get("shade_scale"), **self_view})
    st.subheader("Share and export")
    if kind != "doc":
        where = "The document is a built-in sample, so the link works for anyone using this app."
    elif documents.is_kept(document_ref):
        where = (f"The pasted document is kept on this server ({KEPT_DOCUMENT_DAYS.value:g} days after its last use, "
                 f"and at least {KEPT_DOCUMENT_HOLD_MINUTES.value:g} minutes whatever is pasted after it; once a link "
                 "to it is opened, it is kept longest), so a refresh, and anyone you send the link to, opens it. Its "
                 "key is 128 random-looking bits: no one finds it without the link.")
    elif not documents.keepable(text):
        where = (f"This document is over {KEPT_DOCUMENT_KB.value:,} KB, so it is kept only in this browser session: "
                 "others who open the link are asked to paste it.")
    else:
        where = (f"This server keeps as many pasted documents as it may ({KEPT_DOCUMENTS.value:,}), each used within "
                 f"the last {KEPT_DOCUMENT_HOLD_MINUTES.value:g} minutes, so this one is kept only in this browser "
                 "session: others who open the link are asked to paste it.")
    st.caption("The address bar follows this view (model, document, heads, level, sentence); copy it, or the link "
               "below. " + where)
    # inline code, not st.code: st.code's copy button loads a 1.5 MB syntax highlighter into every
    # browser that opens Explore, beside plotly's 4.7 MB, and a fresh visit's first chart waited for
    # both (median of 4: 5.1 s with it, 4.4 s without)
    st.markdown(viz.md_code(link))
    st.caption("Each figure has its own Export button (PNG, SVG, PDF, HTML). The report is one HTML file with the "
               "prediction, the shaded document, every figure shown above (interactive, works offline) and the "
               "metrics.")
    stem = f"{name}-{doc_key}"

    def report() -> bytes:  # on the click: the report reads every map's metrics, and shades the whole document
        options = {**shading.options(), "part": slice(None)}  # the whole document, not the page shown
        document_view = viz.shaded_document_html(**ex.text_view(), **options) if shading.painted else None
        table = export.report_table(metrics_table(ex), {n: map_title(n) for n in ex.attentions})
        return export.report_html(ex.classifier_name, dict(zip(ex.labels, ex.probabilities)), table,
                                  dict(figures.drawn), document_view, notes, ex.document.truncation.message,
                                  WITHHELD[ex.withheld] if ex.withheld else None)

    buttons = st.columns(4)
    buttons[0].download_button("Report (HTML)", report, f"{stem}-report.html", "text/html", key="export_report",
                               type="primary", on_click="ignore")
    buttons[1].download_button("Explanation (JSON)", lambda: export.explanation_json(ex.to_dict()), f"{stem}.json",
                               "application/json", key="export_json", on_click="ignore")
    buttons[2].download_button("Attention maps (CSV)", lambda: export.attention_csv(ex.attentions, ex.sentence_words),
                               f"{stem}-attention.csv", "text/csv", key="export_attention", on_click="ignore")
    buttons[3].download_button("Metrics (CSV)", lambda: export.metrics_csv(metrics_table(ex)), f"{stem}-metrics.csv",
                               "text/csv", key="export_metrics", on_click="ignore")
