"""Dataset statistics' sections: the attention metrics of a split in SANet Table 2's layout beside
an even spread, and SANet's topic-versus-sentiment finding judged at matched lengths."""
from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import streamlit as st

from hierattn import viz
from hierattn.analysis import metrics, stats
from hierattn.analysis.battery_split import evenly_spaced
from hierattn.app.downloads import Figures, chart, table_downloads
from hierattn.app.loading import checkpoint_key, load, loadable
from hierattn.app.samples import split_part
from hierattn.app.tasks import computed, is_computed, is_running
from hierattn.data.builtin import BUILTIN
from hierattn.data.formats import csv_bytes


def split_statistics(checkpoints: dict[str, Path], name: str, dataset: str, split: str, count: int,
                     corpus: dict | None, own: str | None = None):
    """(rows, seconds) for a checkpoint on ``count`` documents spread through a split, computed once
    for the whole app in the background; None while it runs (a progress bar shows instead)."""
    classifier = load(checkpoints[name])
    texts, true, _ = split_part(dataset, split, corpus, own)

    def compute(progress):
        from hierattn.app.admission import PEAK_PER_CELL, admission

        start = time.perf_counter()
        # within the server's budget for explanations, as one of them: a batch's peak at the caps
        with admission().admitted(PEAK_PER_CELL * stats.batch_budget(classifier)[1]):
            # documents spread through the split, which is sorted by class: its first ones are one class
            rows = stats.split_statistics(classifier, evenly_spaced(texts, count), evenly_spaced(true, count),
                                          progress=progress)
        return rows, time.perf_counter() - start

    return computed(statistics_key(checkpoints[name], dataset, split, count), compute,
                    f"{name} on {dataset} ({split}):")


def statistics_key(path: Path, dataset: str, split: str, count: int) -> tuple:
    return ("statistics", *checkpoint_key(path), dataset, split, count)


def table(rows: pd.DataFrame, seconds: float, name: str, dataset: str, split: str) -> None:
    """The Table 2 layout with its even-spread columns, grouped as the reader picks, a box plot of
    one metric, and the downloads."""
    st.caption(f"{rows['document'].nunique():,} documents, {len(rows):,} matrices, computed in {seconds:.1f} s "
               "(kept for the next visit).")
    grouping = st.segmented_control("Rows of the table", list(stats.GROUPINGS), default="overall",
                                    key="stats_grouping", help="One column per level, map (HCAN branch, SANet "
                                    "block), head, head of each map, or true class of the document.") or "overall"
    by = stats.GROUPINGS[grouping]
    table2 = stats.table2(rows, by)
    metrics_part, count_part = table2.drop(index="matrices"), table2.loc["matrices"].dropna()
    excess = [c for c in table2.columns if c.endswith("excess")]
    if len(count_part) > 3:  # many groups: one row each (HCAN's maps x heads made 48 columns)
        compact = stats.table2_by_group(table2)
        st.dataframe(compact.style.format("{:.2f}", subset=[m.short for m in metrics.METRICS if not m.even_varies])
                     .format("{:+z.2f}", subset=[c for c in compact.columns if c.endswith("excess")]), width="stretch")
        st.caption("One row per group: the measured Gini (an even spread's is 0, so its excess is the Gini itself) "
                   "and each diagonality's excess over an even spread, in points. The measured and even-spread "
                   "values are in the table's download.")
    else:
        st.dataframe(metrics_part.style.format("{:+z.2f}", subset=excess)
                     .format("{:.2f}", subset=[c for c in table2.columns if c not in excess]), width="stretch")
    table_downloads(metrics_part.reset_index(names="metric"), f"table-{name}-{dataset}-{split}", "stats_part_table")
    st.caption("In %, like SANet Table 2. **Even spread**: every word attending evenly to every word of its matrix, "
               "at the same sizes; **excess**: measured minus even spread, in points. Read the excess: an even spread "
               "over a 15-word sentence already puts 41% of its weight within 3 positions of the diagonal, over "
               "1,000 words under 1%, so raw diagonality mostly measures length. Matrices: "
               + ", ".join(f"{c.removesuffix(' · measured') if c != 'measured' else 'all'} {int(v):,}"
                           for c, v in count_part.items()) + ".")
    labels = {m.name: m.label for m in metrics.METRICS}
    metric = st.selectbox("Distribution of", list(labels), key="stats_metric", format_func=labels.get)
    chart(viz.metric_boxes(stats.metric_groups(rows, by, metric), labels[metric]),
          f"{labels[metric]} of every matrix, by {grouping}",
          figures=Figures(f"{name} · {dataset}, {split} split · {rows['document'].nunique():,} documents"))
    left, right = st.columns(2)
    left.download_button("Download every matrix's metrics (CSV)", csv_bytes(rows),
                         f"attention-statistics-{name}-{dataset}-{split}.csv", "text/csv", key="stats_csv")
    right.download_button("Download this table (CSV)", csv_bytes(table2.reset_index(names="metric")),
                          f"attention-table-{name}-{dataset}-{split}-{grouping}.csv", "text/csv", key="stats_table_csv")


def topic_versus_sentiment(checkpoints: dict[str, Path], labels: dict[str, str]) -> None:
    """Two checkpoints (SANet on bbc-news and on tweets by default), each on the test split of its
    data set, judged as ``stats.versus`` judges them."""
    st.subheader("Topic versus sentiment")
    st.caption("The SANet paper found self-attention sparser and closer to the diagonal for sentiment than for topic "
               "classification (its Table 2: topic Gini 63.6%, diagonality b=3 16.1%; sentiment, without Yelp "
               "Polarity, Gini 87.2%, diagonality b=3 63.5%). Here: two of our checkpoints, each on the test split "
               "of the data set it was trained on, word-level matrices.")
    on_builtin = [n for n, c in loadable(checkpoints).items() if c.dataset in BUILTIN]
    if not on_builtin:
        st.info("No checkpoint here was trained on a built-in data set.")
        return
    pair = {}
    for column, (task, wanted) in zip(st.columns(2), (("topic", "bbc-news-sanet"), ("sentiment", "tweets-sanet"))):
        pair[task] = column.selectbox(f"{task.capitalize()} classifier", on_builtin, key=f"stats_{task}",
                                      format_func=labels.get,
                                      index=on_builtin.index(wanted) if wanted in on_builtin else 0)
    datasets_of = {task: load(checkpoints[n]).dataset for task, n in pair.items()}
    sizes = {task: len(split_part(datasets_of[task], "test")[0]) for task in pair}
    keys = [statistics_key(checkpoints[n], datasets_of[task], "test", sizes[task]) for task, n in pair.items()]
    if not (all(is_computed(k) or is_running(k) for k in keys)
            or st.button("Compute both", key="stats_pair_go", type="primary",
                         help=f"{sizes['topic']:,} + {sizes['sentiment']:,} test documents; kept once computed.")):
        return
    results = {task: split_statistics(checkpoints, n, datasets_of[task], "test", sizes[task], None)
               for task, n in pair.items()}
    results = {task: r[0] for task, r in results.items() if r is not None}
    if len(results) < 2:
        return  # progress bars are showing
    empty = [pair[t] for t, r in results.items() if (r["level"] == "word").sum() == 0]
    if empty:
        st.info(f"No word-level self-attention in {viz.md_text(', '.join(empty))}: pick HCAN or SANet checkpoints.")
        return
    _verdicts(results, *stats.topic_versus_sentiment(results["topic"], results["sentiment"]))


def _verdicts(results: dict[str, pd.DataFrame], table: pd.DataFrame, judged: dict) -> None:
    st.dataframe(table.dropna(axis=1, how="all").style.format("{:.2f}"), width="stretch",
                 column_config={c: st.column_config.NumberColumn(label, help=help_text)
                                for c, (label, help_text) in stats.TVS_COLUMNS.items()})
    table_downloads(table.reset_index(names="metric"), "topic-versus-sentiment", "tvs_table")
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
        sizes_of = {t: r.loc[r["level"] == "word", "size"] for t, r in results.items()}
        st.info("These two models' word-level matrices have no lengths in common ("
                + "; ".join(f"{t}: {int(v.min()):,}–{int(v.max()):,} words" for t, v in sizes_of.items())
                + "), so they cannot be compared at equal length. A pair of hierarchical models (HCAN on "
                "bbc-news and on tweets), whose word-level matrices are sentences, can.")
