"""Explore's "Can I trust this shading?": the faithfulness battery for the current document, and
the self-attention beside what it passes on (rollout or gradient-weighted attention)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import streamlit as st

from hierattn import viz
from hierattn.analysis import battery, battery_split, rollout, verdicts
from hierattn.analysis.explain import Explanation, map_title
from hierattn.app.downloads import Figures, chart
from hierattn.app.loading import checkpoint_key
from hierattn.app.tasks import computed
from hierattn.app.widgets import asked_for, documents_count
from hierattn.checkpoint.classifier import Classifier


def _figure(value) -> str:
    """One number format for every figure of the tables: three decimals."""
    return "n/a" if value is None else f"{value:.3f}"


# captum's rankings, named short in the table (the level column says words or sentences), so that
# every column shows at 1024 px; the caption spells them out
SHORT = {"(integrated gradients)": "(IG)", "with integrated gradients": "with IG",
         "(occlusion of words)": "(occlusion)", "(occlusion of sentences)": "(occlusion)",
         "(KernelSHAP of sentences)": "(KernelSHAP)", "(sentence attention)": "(attention)"}


def _short(test: str) -> str:
    for long, short in SHORT.items():
        test = test.replace(long, short)
    return test


def _difference(row: dict) -> str:
    if row["value"] is None or row["baseline"] is None:
        return ""
    return f"{row['value'] - row['baseline']:+z.3f}"  # z: no "-0.000"


STRUCTURAL_HEADING = "**Words ranked across sentences, beside the sentence attention × even words**"
NULL = "sentence × even words"


def _static_table(rows: list[dict]) -> None:
    """A static table: its cells wrap, so every column shows at 1024 px (564 px beside the sidebar)
    and on a slide, where a scrolling grid would hide the verdicts."""
    st.table(rows, hide_index=True, border="horizontal")


def _named(row: dict, column: str, figure: str) -> dict:
    """A table row's first cells: the test (short), its level and its figure."""
    return {"test": _short(row["test"]), "level": row["level"], column: figure}


def _document_table(rows: list[dict]) -> None:
    """The battery's rows, each figure beside the baseline it must beat and read in words."""
    _static_table([_named(r, "value", _figure(r["value"]))
                   | {"baseline": _figure(r["baseline"]) if r["baseline is"] else "",
                      "− baseline": _difference(r), "verdict": verdicts.verdict(r)} for r in rows])


def _structural_table(rows: list[dict]) -> None:
    """A hierarchical model's words ranked across sentences beside its own sentence attention times an
    even spread of each sentence's words, in a table of their own so that the main one fits 1024 px."""
    beside = [r for r in rows if r.get("structural") is not None and r["value"] is not None]
    if not beside:
        return
    st.markdown(STRUCTURAL_HEADING)
    _static_table([_named(r, "value", _figure(r["value"]))
                   | {NULL: _figure(r["structural"]),
                      f"− {NULL}": _difference({**r, "baseline": r["structural"]})} for r in beside])
    st.caption("The null keeps the model's own sentence weights and spreads each sentence's weight evenly over its "
               "words (alpha_s / n_s): a word ranking that beats random but not this owes its order to the sentence "
               "attention, not to the word attention (the verdict above says so). The rows \"within sentences\" "
               "ask the same inside each sentence, where the sentence weight cannot help. Sufficiency: lower is "
               "better.")


def trust_panel(classifier: Classifier, path: Path, ex: Explanation, doc_key: str, figures: Figures) -> None:
    st.caption("The standard tests of attention as explanation, for this document: ERASER (DeYoung et al. 2020), "
               "Jain & Wallace (2019), Wiegreffe & Pinter (2019). Each figure sits beside the baseline it must "
               "beat; probabilities and output changes are 0..1.")
    adversarial = st.toggle("Also search for adversarial attention (slower)", key="trust_adversarial",
                            help="Five attention distributions as far as possible from the real one (Jensen-Shannon "
                                 "divergence) while the output moves by at most 0.01.")
    result = computed(("battery", *checkpoint_key(path), doc_key, adversarial),
                      lambda progress: battery.document_battery(classifier, ex, adversarial=adversarial,
                                                                progress=progress),
                      "Running the tests on this document:", unit="tests")
    if result is None:
        return
    rows = result.rows()
    if rows:
        saturated = result.probability > 0.999
        if saturated:
            st.info(f"The model gives {viz.md_text(result.label)} a probability of {result.probability:.4f}: "
                    "removing or reshuffling anything barely moves a prediction this sure, so the changes below are "
                    "small for every ranking, random included. Compare each figure with its baseline, not with zero.")
        own = [r for r in rows if not verdicts.is_attribution(r)]
        references = [r for r in rows if verdicts.is_attribution(r)]
        st.markdown(f"**{viz.md_text(verdicts.summary(rows))}**")
        st.markdown("**The attention's own tests**")
        _document_table(own)
        if references:
            st.markdown("**References: captum's attributions, scored the same way**")
            _document_table(references)
        st.caption("Verdicts read one document, one draw: a figure counts as different from its baseline beyond "
                   f"{verdicts.MARGIN['comprehensiveness']} (ERASER), {verdicts.MARGIN['kendall']} (Kendall tau); an "
                   f"output change under {verdicts.SMALL_CHANGE} is none, over {verdicts.LARGE_CHANGE} a clear one. "
                   "Dataset statistics runs the same tests over a split, with intervals. The references rank the "
                   "units by captum's attributions instead of the attention (IG: Integrated Gradients; occlusion; "
                   "KernelSHAP: the sentences' Shapley values): what a ranking that follows the model achieves on "
                   "this document, to read the attention's rows against, not a verdict on the attention. The "
                   "baseline is a random ranking of the same units (ERASER, Kendall tau) or, for adversarial "
                   "attention, the attention's own Jensen-Shannon divergence from an even spread.")
        _structural_table(rows)
        readings = dict.fromkeys(r["how to read"] for r in rows)  # one line per kind of test, in table order
        st.markdown("**How to read them**\n" + "\n".join(f"- {viz.md_text(line)}" for line in readings))
        if result.sampled_words:
            st.caption(f"Leave-one-out read {result.sampled_words:,} of the {result.words:,} words, drawn at random.")
    if result.not_applicable:
        st.markdown("**Tests that do not apply to this model:**\n"
                    + "\n".join(f"- {viz.md_text(line)}" for line in result.not_applicable))
    _beside_raw(classifier, path, ex, doc_key, figures)


def _beside_raw(classifier: Classifier, path: Path, ex: Explanation, doc_key: str, figures: Figures) -> None:
    if not ex.self_attention_names:
        return
    kind, derived = computed(("beside-raw", *checkpoint_key(path), doc_key),
                             lambda progress: rollout.beside_raw(classifier, ex), "Differentiating the maps:",
                             unit="steps") or (
        None, None)
    if not derived:
        return
    name = st.selectbox("Self-attention beside " + ("its rollout" if kind == rollout.ROLLOUT else
                                                    "its gradient-weighted version"), list(derived),
                        key="trust_map", format_func=map_title)
    words = [t.text for s in ex.document.sentences for t in s.tokens]
    a = ex.attentions[name]
    if "layer" in a.axes:  # a transformer: the last layer, through which rollout has passed every layer
        group, where = a.weights.shape[a.axis("layer")] - 1, "last layer"
        labels = [t for t, _ in ex.subwords] if a.level == "subword" else words if a.level == "word" else [
            f"S{i + 1}" for i in range(len(ex.document.sentences))]
    elif "sentence" in a.axes:
        group, labels = 0, [t.text for t in ex.document.sentences[0].tokens]
        where = "sentence 1"
    elif a.level == "sentence":
        group, labels = None, [f"S{i + 1}" for i in range(len(ex.document.sentences))]
        where = "sentences"
    else:
        group, labels, where = None, words, "the document"
    shown = slice(0, min(len(labels), 60))
    left, right = st.columns(2)
    raw = ex.self_attention(name, group)[shown, shown]
    other = replace(ex, attentions={**ex.attentions, **{name: derived[name]}}).self_attention(name, group)[shown, shown]
    heads = "single head" if ex.heads(name) == 1 else "mean of heads"
    title = map_title(name)
    chart(viz.attention_heatmap(raw, labels[shown], f"raw · {where} · {heads}", fluid=True), f"{title}, raw", left,
          key=f"trust_raw_{name}", figures=figures)
    chart(viz.attention_heatmap(other, labels[shown], f"{kind} · {where}", fluid=True), f"{title}, {kind}", right,
          key=f"trust_derived_{name}", figures=figures)
    st.caption("Rollout (Abnar & Zuidema 2020): how much of each word reaches each position through the stacked "
               "layers, residual connections included." if kind == rollout.ROLLOUT else
               "Gradient-weighted (Chefer et al. 2021): each weight times its gradient for the predicted class, "
               "negatives dropped: where attention both exists and pushes the prediction up.")


def _cell(value) -> str:
    if value is None:
        return ""
    mean, low, high = value
    return f"{mean:.3g} [{low:.3g}, {high:.3g}]"


def split_table(classifier: Classifier, path: Path, name: str, dataset: str, split: str, texts: list[str],
                truth: list[str]) -> None:
    """Dataset statistics: the battery over documents spread evenly through a split, on request, in the
    background, kept for the next visit; every figure with its bootstrap 95% interval, beside its
    baseline."""
    st.subheader("Can the attention be trusted? The standard tests over the split")
    st.caption("Per document as in Explore's \"Can I trust this shading?\", then the mean over documents with a "
               "bootstrap 95% interval, beside the baseline each figure must beat (random rankings of the same "
               "units; for a hierarchical model's words ranked across sentences also its sentence attention times "
               "even words, on the same documents), and the difference paired by document. Accuracy with uniform "
               "attention "
               "is an intervention at inference; Wiegreffe & Pinter's test trains a frozen-uniform twin (the "
               "registry's orderings).")
    left, right = st.columns([1, 3])
    count = documents_count(left, "battery", len(texts))
    if not asked_for(right, "battery", "Run the tests over the split", (name, dataset, split, count)):
        return
    part, labels = battery_split.evenly_spaced(texts, count), battery_split.evenly_spaced(truth, count)
    result = computed(("split-battery", *checkpoint_key(path), dataset, split, count),
                      lambda progress: battery_split.split_battery(classifier, part, labels, progress=progress),
                      f"Tests, {name} on {dataset} ({split}):")
    if result is None:
        return
    if result.rows:
        uneven = len({r["documents"] for r in result.rows}) > 1  # one-sentence documents have no sentence figure
        _static_table([_named(r, "mean [95% interval]", _cell(r["value"]))
                       | {"baseline [95%]": f"{r['baseline is']}: {_cell(r['baseline'])}" if r["baseline"] else "",
                          "difference [95%]": _cell(r["difference"])}
                       | ({"documents": r["documents"]} if uneven else {}) for r in result.rows])
        beside = [r for r in result.rows if r.get("structural")]
        if beside:
            st.markdown(STRUCTURAL_HEADING)
            _static_table([_named(r, "mean on the same documents [95%]",
                                  _cell(r.get("value on structural documents", r["value"])))
                           | {f"{NULL} [95%]": _cell(r["structural"]),
                              "difference from it [95%]": _cell(r.get("structural difference")),
                              "documents": r.get("structural documents", r["documents"])} for r in beside])
    if result.accuracy:
        _static_table([{"attention replaced at": level, "accuracy, trained attention": _cell(a["trained"]),
                        "accuracy, uniform attention": _cell(a["uniform"]), "difference [95%]": _cell(a["difference"])}
                       for level, a in result.accuracy.items()])
    if result.not_applicable:
        st.markdown("**Tests that do not apply to this model:**\n"
                    + "\n".join(f"- {viz.md_text(line)}" for line in result.not_applicable))
    st.caption(f"{result.documents} documents spread evenly through the split (it is in data set order, which "
               "may be sorted by class). The command line gives the same table as JSON: "
               f"`python -m hierattn faithfulness --checkpoint checkpoints/{name} --dataset {dataset} --split {split} "
               f"--documents {count} --json out.json`.")
