"""What a person sees: plotly figures (``figures``), escaped HTML and markdown-safe text
(``html``), and files to download (``export``). Built from tensors, words, character spans, labels
and plain values, as bertviz draws; never an explanation or a model, never Streamlit. The figures
and the HTML are importable from here."""
from hierattn.viz.curves import (
    attention_sharpness_chart,
    erasure_chart,
    forming_chart,
    lines_chart,
    start_sweep_chart,
    training_chart,
)
from hierattn.viz.figures import (
           UNKNOWN_MARK,
           attention_heatmap,
           block_overview,
           confusion_heatmap,
           distribution_chart,
           heads_grid,
           marked_words,
           matrix_heatmap,
           metric_boxes,
           probability_chart,
           unknown_note,
)
from hierattn.viz.heads import DROP_SCALE, clark_layer_table, clark_layers, head_drop_grid, head_grid, head_table
from hierattn.viz.html import (
           counted,
           difference_html,
           document_html,
           md_code,
           md_text,
           plain_text_html,
           shaded_document_html,
           shading_legend_html,
           word_attention_html,
)
from hierattn.viz.style import PALETTE, TEMPLATE
from hierattn.viz.text import shaded_text

__all__ = [
    "forming_chart",
    "PALETTE", "TEMPLATE", "UNKNOWN_MARK",
    "attention_heatmap", "attention_sharpness_chart", "block_overview", "clark_layer_table", "clark_layers",
    "confusion_heatmap", "counted", "difference_html", "distribution_chart", "document_html", "erasure_chart",
    "DROP_SCALE", "head_drop_grid", "head_grid", "head_table", "heads_grid", "lines_chart",
    "marked_words", "matrix_heatmap", "md_code", "md_text", "metric_boxes", "plain_text_html", "probability_chart",
    "shaded_document_html", "shaded_text", "shading_legend_html", "start_sweep_chart", "training_chart", "unknown_note",
    "word_attention_html"
]
