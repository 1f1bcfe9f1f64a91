"""Evaluation: accuracy, per-class precision / recall / F1, the confusion matrix and the mistakes of
one checkpoint on a split; the experiments registry's results and the papers' orderings with their
noise; and the test accuracy of every checkpoint of a data set, live."""
import streamlit as st

from hierattn import viz
from hierattn.analysis import evaluation
from hierattn.app import downloads, loading, samples, tasks, url_state, widgets
from hierattn.app.panels import registry
from hierattn.app.routing import run_through_app
from hierattn.data.builtin import BUILTIN
from hierattn.data.formats import csv_bytes
from hierattn.training import baselines

run_through_app()

st.title("Evaluate a model")
checkpoints = loading.checkpoints_or_stop()
names = list(checkpoints)
labels = loading.checkpoint_options(checkpoints)
datasets = list(BUILTIN)

# The model, data set and split are this page's own, kept in its address (see Dataset statistics)
widgets.own_choice("eval_model", names, names[0], link="model")
with st.sidebar:
    name = st.selectbox("Model", names, key="eval_model", format_func=labels.get)
classifier = loading.load_or_stop(checkpoints[name])
loading.stop_without_prediction(classifier, name)  # a random head's accuracy is chance, no score
own = samples.own_name(classifier) if samples.heldout(checkpoints[name]) else None  # trained on your own file
fitting = [d for d in datasets if sorted(samples.builtin_dataset(d).label_names) == sorted(classifier.labels)]
datasets = ([own] if own else []) + fitting  # only data sets whose classes are the model's
if not datasets:
    st.info(f"{viz.md_text(name)} predicts {viz.md_text(', '.join(classifier.labels))}: no data set here has those "
            "classes, so there is nothing to score it against. Dataset statistics and Explore still read any text.")
    st.stop()
widgets.own_choice("eval_dataset", datasets, own or (classifier.dataset if classifier.dataset in datasets
                                                     else datasets[0]), owner=name, link="data")
with st.sidebar:
    dataset_name = st.selectbox("Data set", datasets, key="eval_dataset")
    splits = evaluation.SPLITS[1:] if dataset_name == own else evaluation.SPLITS
    widgets.own_choice("eval_split", splits, splits[-1], owner=f"{name}/{dataset_name}", link="split")
    split = st.selectbox("Split", splits, key="eval_split",
                         help="The stratified 80/10/10 split (seed 1234) that training used.")
url_state.mirror_view({"model": name, "data": dataset_name, "split": split})
dataset, own_splits = (samples.heldout_dataset(checkpoints[name], dataset_name) if dataset_name == own
                       else (samples.builtin_dataset(dataset_name), {}))


def _evaluated(checkpoint: str, split_name: str):
    c = loading.load(checkpoints[checkpoint])
    key = ("evaluation", *loading.checkpoint_key(checkpoints[checkpoint]), dataset_name, split_name)
    return tasks.computed(key, lambda progress: evaluation.evaluate_split(c, dataset, split_name, progress=progress,
                                                                          indices=own_splits.get(split_name)),
                          f"Evaluating {checkpoint} on {dataset_name} ({split_name}):")


try:
    result = _evaluated(name, split)
except evaluation.LabelMismatch as exc:
    st.warning(f"Cannot evaluate on {viz.md_code(dataset_name)}: {viz.md_text(exc)}.")
    result = None

if result is not None:
    report = result.per_class()
    macro = report.loc[report["class"] == "macro mean"].iloc[0]
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Accuracy", f"{result.accuracy:.2%}")
    c2.metric("Macro F1", f"{macro['F1']:.2%}")
    c3.metric("Documents", f"{len(result.true):,}")
    c4.metric("Misclassified", f"{sum(t != p for t, p in zip(result.true, result.predicted)):,}")
    recorded = classifier.metrics.get("test_accuracy")
    same_data = dataset_name in (classifier.dataset, own)
    if split == "test" and recorded is not None and same_data:
        st.caption(f"Training recorded {recorded:.2%} test accuracy; re-measured here: {result.accuracy:.2%}.")
    against = baselines.sentence(result.accuracy, classifier.metrics.get("baselines"), split) if same_data else ""
    kind, said = (baselines.judge(result.accuracy, classifier.metrics.get("baselines"), split, len(result.true))
                  if against else ("unknown", ""))
    if kind in ("below", "within noise"):
        st.warning(f"Not a clear win on this split: {viz.md_text(said)}. The baselines: {viz.md_text(against)}.")
    elif against:
        st.caption(f"The baselines on this split: {viz.md_text(against)} (recorded when the model was trained).")
    elif split != "train":
        st.caption("No baselines were recorded for this model on this data set "
                   f"(`python -m hierattn baselines --checkpoint checkpoints/{viz.md_text(name)}` records them).")
    # one above the other: side by side, at 1024 px the matrix was 60 px wide and the table lost columns
    st.markdown("**Per class**")
    st.dataframe(report.style.format({"precision": "{:.1%}", "recall": "{:.1%}", "F1": "{:.1%}",
                                      "support": "{:,.0f}"}), hide_index=True, width="stretch")
    downloads.table_downloads(report, f"per-class-{name}-{dataset_name}-{split}", "report_table")
    st.markdown("**Confusion matrix**")
    downloads.chart(viz.confusion_heatmap(result.confusion(), result.labels), "Confusion matrix",
                    figures=downloads.Figures.of_split(name, dataset_name, split, len(result.true)))

    st.subheader("Misclassified documents")
    wrong = result.misclassified()
    if wrong.empty:
        st.success("Every document of this split is classified correctly.")
    else:
        wrong.insert(1, "beginning", [" ".join(dataset.texts[d].split())[:90] for d in wrong["document"]])
        st.caption("Most confident mistakes first. Select a row to read the document and open it in Explore.")
        picked = st.dataframe(wrong.style.format({"confidence": "{:.1%}", "P(true class)": "{:.1%}"}),
                              hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
                              key=f"eval_wrong_{name}_{dataset_name}_{split}", height=min(320,
                                                                                          35 * (len(wrong) + 1) + 3),
                              column_config={"beginning": st.column_config.TextColumn(width="large"),
                                             "document": st.column_config.NumberColumn("doc", width="small")})
        selected = picked.selection.rows if picked else []
        if selected:
            row = wrong.iloc[selected[0]]
            document = dataset.texts[int(row["document"])]
            st.markdown(f"**Document {int(row['document'])}**: true {viz.md_code(row['true'])}, predicted "
                        f"{viz.md_code(row['predicted'])} "
                        f"({row['confidence']:.1%})")
            st.html(viz.plain_text_html(document))
            if st.button("Open it in Explore", key="eval_open", type="primary", icon=":material/search:"):
                url_state.open_in_explore(name, document)
        st.download_button("Download the misclassified documents (CSV)",
                           csv_bytes(wrong.assign(text=[dataset.texts[d] for d in wrong["document"]])),
                           f"misclassified-{name}-{dataset_name}-{split}.csv", "text/csv", key="eval_wrong_csv")

# The registry's rows and the papers' orderings, decided against their noise
if dataset_name in BUILTIN:
    registry.registry_tables(dataset_name)

# Every checkpoint of the data set: single runs, so no ordering is judged on them
st.subheader(f"Results on {viz.md_code(dataset_name)} (test split), every checkpoint")
matching = [n for n, c in loading.loadable(checkpoints).items() if sorted(c.labels) == sorted(dataset.label_names)]
keys = {n: ("evaluation", *loading.checkpoint_key(checkpoints[n]), dataset_name, "test") for n in matching}
missing = [n for n in matching if not tasks.is_computed(keys[n])]
running = [n for n in missing if tasks.is_running(keys[n])]
if missing and not running and st.button(f"Evaluate the {len(missing)} remaining checkpoint{'s' * (len(missing) > 1)}",
                                         key="eval_all", help=viz.md_text(", ".join(missing))):
    running = missing
for n in running:  # started now, or by an earlier click: progress bars until they finish
    _evaluated(n, "test")
missing = [n for n in matching if not tasks.is_computed(keys[n])]
done = [n for n in matching if tasks.is_computed(keys[n])]
if done:
    rows = [evaluation.result_row(loading.load(checkpoints[n]), tasks.result(keys[n]).accuracy) for n in done]
    table = evaluation.results_frame(rows)
    st.dataframe(table.style.format({"test accuracy": "{:.2%}", "training ms / document": "{:.2f}",
                                     "parameters": "{:,}"}, na_rep="?"), hide_index=True, width="stretch")
    downloads.table_downloads(table, f"results-{dataset_name}", "results_table")
    if missing:
        st.caption(f"Not evaluated yet: {viz.md_text(', '.join(m for m in missing if m not in running) or 'none')}"
                   + (f"; running: {viz.md_text(', '.join(running))}." if running else "."))
elif not matching:
    st.info(f"No checkpoint was trained on the classes of `{dataset_name}`.")
else:
    st.caption(f"{len(matching)} checkpoints have the classes of `{dataset_name}`; none is evaluated yet.")
