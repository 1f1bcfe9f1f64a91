"""What a person sees: plotly figures (``figures``), escaped HTML and markdown-safe text
(``html``), and files to download (``export``). Built from tensors, words, character spans, labels
and plain values, as bertviz draws; never an explanation or a model, never Streamlit. The figures
and the HTML are importable from here."""
from hierattn.viz.figures import (
           attention_heatmap,
           attention_sharpness_chart,
           block_overview,
           confusion_heatmap,
           distribution_chart,
           erasure_chart,
           heads_grid,
           lines_chart,
           matrix_heatmap,
           metric_boxes,
           probability_chart,
           start_sweep_chart,
           training_chart,
)
from hierattn.viz.heads import clark_layer_table, clark_layers, head_grid, head_table
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

__all__ = [
    "attention_heatmap", "attention_sharpness_chart", "block_overview", "clark_layer_table", "clark_layers",
    "confusion_heatmap", "counted", "difference_html",
    "distribution_chart", "document_html", "erasure_chart", "head_grid", "head_table", "heads_grid", "lines_chart",
    "matrix_heatmap", "md_code", "md_text", "metric_boxes", "plain_text_html", "probability_chart",
    "shaded_document_html", "shading_legend_html", "start_sweep_chart", "training_chart", "word_attention_html"
]
