"""Dataset statistics: Gini and diagonality of every self-attention matrix over a split, in the
form of the SANet paper's Table 2, and its topic-versus-sentiment finding checked on our models."""
import streamlit as st

from hierattn import viz
from hierattn.app import loading, samples, url_state, widgets
from hierattn.app.panels import faithfulness, heads, statistics, trust
from hierattn.app.routing import run_through_app
from hierattn.data.builtin import BUILTIN

run_through_app()

SPLITS = ("test", "validation", "train")

st.title("Attention statistics over a data set")
st.caption("For every document of a split: the Gini coefficient (how concentrated) and the diagonality at "
           "bandwidth b = 1…5 (how local) of each self-attention matrix, as in the SANet paper §5.3 and Table 2, "
           "each beside what an even spread over the same words gives. Means are over matrices; matrices over a "
           "single word are left out.")
checkpoints = loading.checkpoints_or_stop()
names = list(checkpoints)
labels = loading.checkpoint_options(checkpoints)


# The model, data set and split are this page's own, kept in its address: each follows the model
# (its own data set first) and stays put across any other click; a reload reopens them.
widgets.own_choice("stats_model", names, "bbc-news-hcan" if "bbc-news-hcan" in names else names[0], link="model")
with st.sidebar:
    name = st.selectbox("Model", names, key="stats_model", format_func=labels.get)
classifier = loading.load_or_stop(checkpoints[name])
own_corpus = samples.corpus_with_test_file(classifier)  # a model trained on a local corpus: its test file too
own = samples.own_name(classifier) if samples.heldout(checkpoints[name]) else None  # or on your own file
datasets = ([own] if own else []) + ([classifier.dataset] if own_corpus else []) + list(BUILTIN)
widgets.own_choice("stats_dataset", datasets, own or (classifier.dataset if classifier.dataset in datasets
                                                      else datasets[0]), owner=name, link="data")
with st.sidebar:
    dataset = st.selectbox("Data set", datasets, key="stats_dataset",
                           help="A built-in data set, or the local corpus the model was trained on. Any model can "
                                "be run on any text; per-class rows use the data set's labels.")
    corpus = own_corpus if own_corpus and dataset == classifier.dataset else None
    kept = str(checkpoints[name]) if dataset == own else None
    splits = ("test",) if corpus else ("test", "validation") if kept else SPLITS
    widgets.own_choice("stats_split", splits, "test", owner=f"{name}/{dataset}", link="split")
    split = st.selectbox("Split", splits, key="stats_split",
                         help=f"A local corpus: the first {samples.CORPUS_DOCUMENTS:,} documents of its test file."
                         if corpus else None)
    texts, truth, _ = samples.split_part(dataset, split, corpus, kept)
    every = min(1000, len(texts)) if corpus else len(texts)
    widgets.own_choice("stats_documents", range(1, len(texts) + 1), every, owner=f"{name}/{dataset}/{split}")
    count = st.number_input("Documents", 1, len(texts), step=100, key="stats_documents",
                            help="The first documents of the split, in data set order; all of them by default.")
url_state.mirror_view({"model": name, "data": dataset, "split": split})
if dataset not in (classifier.dataset, own):
    st.caption(f"{viz.md_code(name)} was trained on {viz.md_code(classifier.dataset)}; its attention over "
               f"{viz.md_code(dataset)} is shown.")

result = statistics.split_statistics(checkpoints, name, dataset, split, count, corpus, kept)
if result is None:
    pass  # the progress bar is showing
elif result[0].empty:
    st.info(f"{classifier.display_name} has no self-attention, so there are no matrices to measure. "
            "Pick HCAN, SANet or HA-LSTM.")
else:
    statistics.table(*result, name, dataset, split)
heads.split_heads(classifier, checkpoints[name], name, dataset, split, texts)
faithfulness.split_erasure(classifier, checkpoints[name], name, dataset, split, texts)
trust.split_table(classifier, checkpoints[name], name, dataset, split, texts, truth)
statistics.topic_versus_sentiment(checkpoints, labels)
