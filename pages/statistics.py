"""Dataset statistics: Gini and diagonality of every self-attention matrix over a split, in the
form of the SANet paper's Table 2, and its topic-versus-sentiment finding checked on our models."""
import time

import streamlit as st

from hierattn import viz
from hierattn.analysis import faithfulness, stats
from hierattn.app import ui
from hierattn.data.builtin import BUILTIN
from hierattn.data.formats import csv_bytes

ui.run_through_app()

SPLITS = ("test", "validation", "train")

st.title("Attention statistics over a data set")
st.caption("For every document of a split: the Gini coefficient (how concentrated) and the diagonality at "
           "bandwidth b = 1…5 (how local) of each self-attention matrix, as in the SANet paper §5.3 and Table 2, "
           "each beside what an even spread over the same words gives. Means are over matrices; matrices over a "
           "single word are left out.")
checkpoints = ui.checkpoints_or_stop()
names = list(checkpoints)
labels = ui.checkpoint_options(checkpoints)


def _statistics(name: str, dataset: str, split: str, count: int, corpus: dict | None):
    """(rows, seconds) for a checkpoint on the first ``count`` documents of a split, computed once
    in the background; None while it runs (a progress bar shows instead)."""
    classifier = ui.load(checkpoints[name])
    texts, true, _ = ui.split_part(dataset, split, corpus)
    key = ("statistics", *ui.checkpoint_key(checkpoints[name]), dataset, split, count)

    def compute(progress):
        start = time.perf_counter()
        rows = stats.split_statistics(classifier, texts[:count], true[:count], progress=progress)
        return rows, time.perf_counter() - start

    return ui.computed(key, compute, f"{name} on {dataset} ({split}):")


with st.sidebar:
    default = names.index("bbc-news-hcan") if "bbc-news-hcan" in names else 0
    name = st.selectbox("Model", names, index=default, key="stats_model", format_func=labels.get)
classifier = ui.load_or_stop(checkpoints[name])
own_corpus = ui.corpus_with_test_file(classifier)  # a model trained on a local corpus: its test file too
datasets = ([classifier.dataset] if own_corpus else []) + list(BUILTIN)
ui.keep_valid("stats_dataset", datasets)
with st.sidebar:
    dataset = st.selectbox("Data set", datasets, key="stats_dataset",
                           index=datasets.index(classifier.dataset) if classifier.dataset in datasets else 0,
                           help="A built-in data set, or the local corpus the model was trained on. Any model can "
                                "be run on any text; per-class rows use the data set's labels.")
    corpus = own_corpus if own_corpus and dataset == classifier.dataset else None
    splits = ("test",) if corpus else SPLITS
    ui.keep_valid("stats_split", splits)
    split = st.selectbox("Split", splits, key="stats_split",
                         help=f"A local corpus: the first {ui.CORPUS_DOCUMENTS:,} documents of its test file."
                         if corpus else None)
    texts, _, _ = ui.split_part(dataset, split, corpus)
    if st.session_state.get("stats_documents", 0) > len(texts):
        del st.session_state["stats_documents"]  # a smaller split than the last one chosen
    count = st.number_input("Documents", 1, len(texts), min(1000, len(texts)) if corpus else len(texts), step=100,
                            key="stats_documents",
                            help="The first documents of the split, in data set order; all of them by default.")
if classifier.dataset != dataset:
    st.caption(f"{viz.md_code(name)} was trained on {viz.md_code(classifier.dataset)}; its attention over {viz.md_code(dataset)} is shown.")

result = _statistics(name, dataset, split, count, corpus)
rows, seconds = result if result is not None else (None, None)
if rows is None:
    pass  # the progress bar is showing
elif rows.empty:
    st.info(f"{classifier.display_name} has no self-attention, so there are no matrices to measure. "
            "Pick HCAN, SANet or HA-LSTM.")
else:
    st.caption(f"{rows['document'].nunique():,} documents, {len(rows):,} matrices, computed in {seconds:.1f} s "
               "(kept for the next visit).")
    grouping = st.segmented_control("Rows of the table", list(stats.GROUPINGS), default="overall",
                                    key="stats_grouping", help="One column per level, map (HCAN branch, SANet "
                                    "block), head, head of each map, or true class of the document.") or "overall"
    by = stats.GROUPINGS[grouping]
    table = stats.table2(rows, by)
    metrics_part, count_part = table.drop(index="matrices"), table.loc["matrices"].dropna()
    st.dataframe(metrics_part.style.format("{:+.2f}", subset=[c for c in table.columns if c.endswith("excess")])
                 .format("{:.2f}", subset=[c for c in table.columns if not c.endswith("excess")]), width="stretch")
    ui.table_downloads(metrics_part.reset_index(names="metric"), f"table-{name}-{dataset}-{split}", "stats_part_table")
    st.caption("In %, like SANet Table 2. **Even spread**: every word attending evenly to every word of its matrix, "
               "at the same sizes; **excess**: measured minus even spread, in points. Read the excess: an even spread "
               "over a 15-word sentence already puts 41% of its weight within 3 positions of the diagonal, over "
               "1,000 words under 1%, so raw diagonality mostly measures length. Matrices: "
               + ", ".join(f"{c.removesuffix(' · measured') if c != 'measured' else 'all'} {int(v):,}"
                           for c, v in count_part.items()) + ".")
    metric = st.selectbox("Distribution of", stats.METRICS, key="stats_metric", format_func=stats.METRIC_NAMES.get)
    if by is None:
        groups = {"all matrices": rows[metric].tolist()}
    else:
        groups = {(f"head {k + 1}" if by == "head" else str(k)): v[metric].tolist()
                  for k, v in stats.grouped_by(rows, by).groupby(by, observed=True)}
    ui.chart(viz.metric_boxes(groups, stats.METRIC_NAMES[metric]), f"{metric} {name} {dataset} {split}")
    left, right = st.columns(2)
    left.download_button("Download every matrix's metrics (CSV)", csv_bytes(rows),
                         f"attention-statistics-{name}-{dataset}-{split}.csv", "text/csv", key="stats_csv")
    right.download_button("Download this table (CSV)", csv_bytes(table.reset_index(names="metric")),
                          f"attention-table-{name}-{dataset}-{split}-{grouping}.csv", "text/csv", key="stats_table_csv")

st.subheader("Is the attention faithful? Erasure over the split")
st.caption("For each document: remove the top words by attention, by gradient × input, by leave-one-out "
           "occlusion and in random orders (1/40 up to half of its words), and measure the drop in the "
           "probability of the class the model predicted. Curves are means over documents; the area is the "
           "mean drop. Leave-one-out needs one forward pass per word: slow on long articles.")
left, middle, right = st.columns([1, 1, 2])
erasure_count = left.number_input("Documents", min(10, len(texts)), len(texts), min(100, len(texts)), step=10,
                                  key="erasure_documents")
with_occlusion = middle.toggle("Include leave-one-out", value=classifier.text_config.max_sentences <= 10,
                               key="erasure_occlusion")
if right.button("Compute the erasure curves", key="erasure_go") or st.session_state.get("erasure_shown") == (
        name, dataset, split, erasure_count, with_occlusion):
    st.session_state["erasure_shown"] = (name, dataset, split, erasure_count, with_occlusion)
    methods = faithfulness.METHODS if with_occlusion else tuple(m for m in faithfulness.METHODS if m != "leave-one-out")
    split_texts = texts[:erasure_count]
    erasure = ui.computed(("split-erasure", *ui.checkpoint_key(checkpoints[name]), dataset, split, erasure_count,
                           methods), lambda progress: faithfulness.split_erasure(classifier, split_texts, methods=methods,
                                                                                 progress=progress),
                          f"Erasure, {name} on {dataset} ({split}):")
    if erasure is not None and not erasure.documents:
        st.info("No document of this split has enough words.")
    elif erasure is not None:
        chart, numbers = st.columns([3, 2])
        ui.chart(viz.erasure_chart(erasure.shares, erasure.drops, "predicted class", "share of words removed",
                                   percent_x=True), f"erasure {name} {dataset} {split}", chart)
        base = erasure.auc.get("random", 0.0)
        numbers.dataframe({"method": list(erasure.auc), "mean drop (points)": [round(100 * v, 1) for v in erasure.auc.values()],
                           "vs random (points)": [round(100 * (v - base), 1) for v in erasure.auc.values()]},
                          hide_index=True)
        numbers.caption(f"{erasure.documents} documents. Mean Spearman correlation with attention: "
                        + ", ".join(f"{m} {r:+.2f}" for m, r in erasure.agreement.items()) + ".")

st.subheader("Topic versus sentiment")
st.caption("The SANet paper found self-attention sparser and closer to the diagonal for sentiment than for topic "
           "classification (its Table 2: topic Gini 63.6%, diagonality b=3 16.1%; sentiment, without Yelp "
           "Polarity, Gini 87.2%, diagonality b=3 63.5%). Here: two of our checkpoints, each on the test split of "
           "the data set it was trained on, word-level matrices.")
on_builtin = [n for n, c in ui.loadable(checkpoints).items() if c.dataset in BUILTIN]
if not on_builtin:
    st.info("No checkpoint here was trained on a built-in data set.")
    st.stop()


def _pick(label, wanted, key):
    return st.selectbox(label, on_builtin, key=key, format_func=labels.get,
                        index=on_builtin.index(wanted) if wanted in on_builtin else 0)


left, right = st.columns(2)
with left:
    topic_name = _pick("Topic classifier", "bbc-news-sanet", "stats_topic")
with right:
    sentiment_name = _pick("Sentiment classifier", "tweets-sanet", "stats_sentiment")
pair = {"topic": topic_name, "sentiment": sentiment_name}
datasets_of = {task: ui.load(checkpoints[n]).dataset for task, n in pair.items()}
sizes = {task: len(ui.split_part(datasets_of[task], "test")[0]) for task in pair}
keys = {task: ("statistics", *ui.checkpoint_key(checkpoints[n]), datasets_of[task], "test", sizes[task])
        for task, n in pair.items()}
ready = all(ui.is_computed(k) or ui.is_running(k) for k in keys.values())
if ready or st.button("Compute both", key="stats_pair_go", type="primary",
                      help=f"{sizes['topic']:,} + {sizes['sentiment']:,} test documents; kept once computed."):
    results = {task: _statistics(n, datasets_of[task], "test", sizes[task], None) for task, n in pair.items()}
    results = {task: r[0] for task, r in results.items() if r is not None}
    empty = [pair[t] for t, r in results.items() if (r["level"] == "word").sum() == 0]
    if len(results) < 2:
        pass  # progress bars are showing
    elif empty:
        st.info(f"No word-level self-attention in {viz.md_text(', '.join(empty))}: pick HCAN or SANet checkpoints.")
    else:
        table, judged = stats.topic_versus_sentiment(results["topic"], results["sentiment"])
        st.dataframe(table.dropna(axis=1, how="all").style.format("{:.2f}"), width="stretch",
                     column_config={c: st.column_config.NumberColumn(label, help=help_text)
                                    for c, (label, help_text) in stats.TVS_COLUMNS.items()})
        ui.table_downloads(table.reset_index(names="metric"), "topic-versus-sentiment", "tvs_table")
        st.caption("In %. **Raw difference**: sentiment mean minus topic mean, as the paper compares them. "
                   "**Length-matched difference**: sentiment minus topic in excess over an even spread, within "
                   "buckets of matrices of similar size, with its 95% interval (documents resampled). The verdict "
                   "follows the length-matched difference: an even spread is far more 'diagonal' over a short "
                   "tweet than over a long article, so raw means differ whatever the models do. A difference "
                   "under 1 point, or an interval that includes 0, is no finding.")
        for metric, claim in stats.CLAIMS.items():
            row = judged["metrics"][metric]
            raw, matched = row["raw"], row["length_matched"]
            figure = "" if matched["difference"] is None else (
                f"{100 * matched['difference']:+.1f} points at matched lengths, 95% interval "
                f"{100 * matched['interval'][0]:+.1f} to {100 * matched['interval'][1]:+.1f}; ")
            st.markdown(f"- {claim}: **{row['verdict']}** ({figure}{viz.md_text(row['reason'])}); the raw means "
                        f"would say {raw['verdict']} ({100 * raw['difference']:+.1f} points).")
        buckets = judged["metrics"]["diagonality_b3"]["length_matched"]["buckets"]
        if buckets:
            with st.expander(f"The {len(buckets)} length buckets both sets share (diagonality b = 3)"):
                st.dataframe([{"words": f"{b['sizes'][0]}–{b['sizes'][1]}", "topic matrices": b["matrices"]["topic"],
                               "sentiment matrices": b["matrices"]["sentiment"],
                               "topic excess (points)": round(100 * b["excess"]["topic"], 2),
                               "sentiment excess (points)": round(100 * b["excess"]["sentiment"], 2)}
                              for b in buckets], hide_index=True)
        else:
            sizes_of = {t: results[t].loc[results[t]["level"] == "word", "size"] for t in pair}
            st.info("These two models' word-level matrices have no lengths in common ("
                    + "; ".join(f"{t}: {int(v.min()):,}–{int(v.max()):,} words" for t, v in sizes_of.items())
                    + "), so they cannot be compared at equal length. A pair of hierarchical models (HCAN on "
                    "bbc-news and on tweets), whose word-level matrices are sentences, can.")
