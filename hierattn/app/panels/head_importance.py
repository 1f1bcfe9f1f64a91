"""Explore: which heads the prediction needs (``analysis.head_importance``), beside what each head
does (the head grid's patterns): do the heads with striking patterns matter for this prediction?"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import streamlit as st

from hierattn import viz
from hierattn.analysis import head_importance, heads
from hierattn.analysis.explain import Explanation
from hierattn.app.downloads import Figures, chart
from hierattn.checkpoint.classifier import Classifier


def _has_heads(ex: Explanation) -> bool:
    return any("head" in ex.describe(n).axes for n in ex.self_attention_names)


def which_heads_matter(classifier: Classifier, path: Path, ex: Explanation, doc_key: str, figures: Figures) -> None:
    """A toggle; once on, every head made even in turn in the background, then the grid of drops."""
    from hierattn.app.loading import checkpoint_key
    from hierattn.app.tasks import computed

    if ex.withheld or not _has_heads(ex) or not st.toggle(
            "Which heads matter for this prediction? Each head's attention made even in turn", key="heads_matter",
            help="Michel et al. (2019), \"Are sixteen heads really better than one?\": one forward pass per head."):
        return
    drops = computed(("heads-matter", *checkpoint_key(path), doc_key),
                     lambda progress: head_importance.document_drops(classifier, ex.document, progress),
                     "Making each head's attention even in turn:", unit="heads")
    if drops is None:
        return
    places = list(dict.fromkeys((h.site, h.layer) for h in drops))
    count = max(h.head for h in drops) + 1
    values = np.full((len(places), count), np.nan)
    for h, drop in drops.items():
        values[places.index((h.site, h.layer)), h.head] = drop
    layered = {(r["layer"], r["head"]): r["finding"] or "no finding" for r in heads.overview(ex)}
    findings = [[layered.get((layer, j), "") if site == "subword.self" else "" for j in range(count)]
                for site, layer in places]
    names = [f"layer {layer + 1}" if site == "subword.self" else site for site, layer in places]
    chart(viz.head_drop_grid(values, names, [f"head {h + 1}" for h in range(count)], findings),
          "Which heads matter for this prediction", key=f"heads_matter_{doc_key}", figures=figures)
    ranked = sorted(drops.items(), key=lambda item: -item[1])
    patterned = [d for h, d in drops.items() if layered.get((h.layer, h.head), "no finding") != "no finding"]
    others = [d for h, d in drops.items() if layered.get((h.layer, h.head), "no finding") == "no finding"]
    point = head_importance.MATTERS
    said = (f"The drop in P({viz.md_text(ex.label)}), in points, when one head's attention is replaced by an even "
            "spread over its keys, every other head as trained (orange: the prediction weakens; purple: it grows; the "
            f"colours reach {viz.DROP_SCALE:g} points at the least, so a drop under a point stays pale). "
            "Largest: " + ", ".join(f"{viz.md_text(h.name)} {100 * d:+.1f}" for h, d in ranked[:3]) + ".")
    if layered:
        moved = sum(d >= point for d in patterned)
        said += (f" Of the {len(patterned)} heads with a pattern in the grid above, {moved} move it by a point or "
                 f"more; of the {len(others)} without, {sum(d >= point for d in others)}.")
    st.caption(said + " One document: `hierattn stats --heads-matter` gives each head's drop over a split, with "
                      "intervals.")
