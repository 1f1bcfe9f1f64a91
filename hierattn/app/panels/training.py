"""The Train page's sections: the data, the model and its knobs, the training settings, and a
run's live panel."""
from __future__ import annotations

import streamlit as st

from hierattn import viz
from hierattn.app.downloads import Figures, chart
from hierattn.app.panels import playback
from hierattn.app.samples import builtin_dataset, heldout_samples
from hierattn.app.train_form import (
    dataset_from_upload,
    dataset_summary,
    duration,
    guess_label_column,
    guess_text_column,
    parse_upload,
    preview,
    train_defaults,
)
from hierattn.app.url_state import open_in_explore
from hierattn.data.builtin import BUILTIN
from hierattn.data.dataset import DataError
from hierattn.data.formats import columns as table_columns
from hierattn.data.text import TextConfig
from hierattn.limits import UPLOAD_MB
from hierattn.models import REGISTRY
from hierattn.models.knobs import defaults, knobs
from hierattn.training import baselines
from hierattn.training.loop import (
    PRETRAINED_BATCH,
    PRETRAINED_LR,
    PRETRAINED_SCHEDULE,
    TrainConfig,
    pretrained_epochs,
)
from hierattn.training.playback import read as read_playback

PREVIEW_COLUMNS = 30  # the preview's width; the pickers offer every column (at most limits.UPLOAD_COLUMNS)


def data_section():
    """A built-in data set, or the user's file with its columns picked; None until there is one.
    A file that cannot be used says why and stops the page."""
    source = st.radio("Data set", ["built-in", "upload"], horizontal=True, key="data_source",
                      format_func={"built-in": "a built-in data set", "upload": "my own file (CSV, TSV or JSONL)"}.get)
    dataset = None
    if source == "built-in":
        name = st.selectbox("Built-in data set", list(BUILTIN), key="builtin_name",
                            help="bbc-news: 2,225 BBC articles in 5 topics. tweets: about 38k tweets, 3 sentiments.")
        dataset = builtin_dataset(name)
    else:
        upload = st.file_uploader(f"Your file (at most {UPLOAD_MB.value:g} MB)", type=["csv", "tsv", "jsonl"],
                                  key="upload",
                                  help="One document per row, with a text column and a label column. UTF-8 or UTF-16.")
        if upload is not None:
            try:
                rows = parse_upload(upload.getvalue(), upload.name)
            except DataError as exc:
                st.error(f"This file cannot be used: {viz.md_text(exc)}")
                st.stop()
            columns = table_columns(rows)
            shown = columns[:PREVIEW_COLUMNS]
            st.caption(f"{len(rows):,} rows and {len(columns):,} columns. The first ten rows"
                       + (f", in the first {len(shown)} columns:" if len(shown) < len(columns) else ":"))
            st.dataframe(preview(rows, shown), hide_index=True, width="stretch")
            c1, c2 = st.columns(2)
            text_column = c1.selectbox("Text column", columns, key="text_column",
                                       index=columns.index(guess_text_column(rows, columns)))
            label_column = c2.selectbox("Label column", columns, key="label_column",
                                        index=columns.index(guess_label_column(rows, columns, text_column)))
            try:
                dataset = dataset_from_upload(rows, text_column, label_column, upload.name)
            except DataError as exc:
                st.error(f"Cannot train on this: {viz.md_text(exc)}")
                st.stop()
    if dataset is not None:
        if dataset.decoded:
            st.info(f"{dataset.decoded:,} texts hold HTML markup or entities (such as `&#039;` or `<br />`); they "
                    "are decoded once as the file is read, so `I&#039;ve` reads I've and not the words i039ve.")
        counts, sizes = dataset_summary(dataset)
        c1, c2 = st.columns([2, 1])
        c1.dataframe(counts, hide_index=True, width="stretch")
        c2.metric("Documents", f"{len(dataset.texts):,}")
        c2.caption(f"Stratified split: {sizes['train']:,} train · {sizes['validation']:,} validation · "
                   f"{sizes['test']:,} test")
    return dataset


def model_section() -> tuple[str, dict, str]:
    """The architecture, where it starts (a checkpoint to fine-tune, or from scratch) and, from
    scratch, its knobs (its spec's variants, then the sizes its config has): a fine-tuned model
    keeps its checkpoint's sizes, so none of them is offered."""
    model_type = st.selectbox("Architecture", list(REGISTRY), key="model_type", format_func=lambda t: REGISTRY[t].label)
    start_from = _start_from(st, model_type)
    config = {}
    model_knobs = knobs(model_type) if not start_from else []
    initial = defaults(model_type)
    if start_from:
        st.caption("Its layers, sizes and tokenizer are the checkpoint's; only its classification head is new where "
                   "your labels differ.")
    if model_knobs:
        grid = st.columns(3)
        for i, k in enumerate(model_knobs):
            slot, key = grid[i % 3], f"hp_{model_type}_{k.name}"
            if k.kind == "bool":
                config[k.name] = slot.toggle(k.label, value=initial[k.name], help=k.help, key=key)
            elif k.kind == "choice":
                config[k.name] = slot.selectbox(k.label, k.options, index=k.options.index(initial[k.name]), help=k.help,
                                                key=key)
            elif k.kind == "int":
                config[k.name] = int(slot.number_input(k.label, int(k.low), int(k.high), int(initial[k.name]),
                                                       help=k.help,
                                                       key=key))
            else:
                config[k.name] = float(slot.number_input(k.label, k.low, k.high, float(initial[k.name]), step=0.05,
                                                         help=k.help, key=key))
    return model_type, config, start_from




def training_section(dataset, model_type: str, start_from: str = "") -> tuple[TextConfig, TrainConfig, int]:
    """Epochs, batch, learning rate, caps, seed and embeddings (fitted models need only the caps); a
    pre-trained start gets its own defaults (a small learning rate, few epochs) and no embeddings.
    The third value: at most how many documents to train on (0: all; ``data.stratified_subset``)."""
    fitted = REGISTRY[model_type].fitted
    suggested = train_defaults(dataset.name)
    tuned = "_pretrained" if start_from else ""  # its own widgets, so each start keeps its own defaults
    train_documents = dataset_summary(dataset)[1]["train"]
    t1, t2, t3 = st.columns(3)
    epochs = t1.number_input("Epochs", 1, 200, pretrained_epochs(train_documents) if start_from else
                             suggested["epochs"], key=f"epochs{tuned}", disabled=fitted,
                             help="Passes over the training split; the best epoch on validation is kept. A "
                                  "pre-trained start's default reaches about a hundred optimiser steps.")
    batch_size = t2.number_input("Batch size", 1, 512, PRETRAINED_BATCH if start_from else suggested["batch_size"],
                                 key=f"batch_size{tuned}", disabled=fitted, help="Documents per optimisation step.")
    lr = t3.number_input("Learning rate", 1e-6, 1e-1, PRETRAINED_LR if start_from else 1e-3, format="%.6f",
                         key=f"lr{tuned}", disabled=fitted,
                         help="Adam's step size: 1e-3 from scratch; 2e-5 to 5e-5 for a pre-trained model, whose "
                              "weights a large step would undo.")
    max_sentences = t1.number_input("Max sentences", 1, 500, suggested["max_sentences"], key="max_sentences",
                                    help="Sentences read per document; the rest is cut (and reported in Explore).")
    max_words = t2.number_input("Max words per sentence", 1, 500, suggested["max_words"], key="max_words",
                                help="Words read per sentence.")
    seed = t3.number_input("Seed", 0, 2**31 - 1, 1234, key="seed", help="Fixes the split and the initialisation.")
    embeddings = t1.selectbox("Embeddings", ["random", "word2vec"], key="embeddings",
                              disabled=fitted or bool(start_from),
                              help="word2vec: initialised with Word2Vec trained on the training split (HCAN §4.3). "
                                   "A fine-tuned model keeps its own.")
    subset = t2.number_input("At most this many documents", 0, 10_000_000, 0, step=1000, key="subset",
                             help="0: all of them. Else a stratified sample, each class in its proportion, drawn with "
                                  "the seed: a quick first run (the estimate below says how long a run takes here).")
    patience = t3.number_input("Patience (epochs)", 1, 50, 3, key="patience", disabled=fitted,
                               help="Stop when validation accuracy has not improved for this many epochs in a row; "
                                    "the best epoch is kept either way.")
    if not fitted:
        text = TextConfig(max_sentences=int(max_sentences), max_words=int(max_words))
        _steps_and_time(dataset, model_type, start_from, text, int(epochs), int(batch_size), int(subset),
                        train_documents)
    return (TextConfig(max_sentences=int(max_sentences), max_words=int(max_words)),
            TrainConfig(epochs=int(epochs), batch_size=int(batch_size), lr=float(lr), seed=int(seed),
                        embeddings="random" if start_from else embeddings, start_from=start_from,
                        lr_schedule=PRETRAINED_SCHEDULE if start_from else "constant", patience=int(patience)),
            int(subset))


def _steps_and_time(dataset, model_type: str, start_from: str, text: TextConfig, epochs: int, batch_size: int,
                    subset: int, train_documents: int) -> None:
    """The run's optimiser steps, a warning when a pre-trained start gets too few to move, and for a
    pre-trained start (the slow case) its time from a rate measured here on a click."""
    from hierattn.data.split import TRAIN_SHARE
    from hierattn.training.loop import PRETRAINED_STEPS

    documents = min(subset, len(dataset.texts)) if subset else len(dataset.texts)
    train = train_documents if not subset else int(TRAIN_SHARE * documents)
    steps = epochs * -(-train // batch_size)
    said = f"About {steps:,} optimiser steps: {epochs} epochs of {-(-train // batch_size):,} batches of {batch_size}."
    if start_from and steps < PRETRAINED_STEPS:
        st.warning(said + f" A pre-trained model moves little in under {PRETRAINED_STEPS}: 12 steps on 240 documents "
                          "ended answering the largest class. More epochs or a smaller batch give it more.")
    else:
        st.caption(said)
    if not start_from:
        return
    key = ("rate", start_from, model_type, batch_size, text.max_sentences, text.max_words)
    if st.button("Estimate the time", key="measure_rate",
                 help="Times two optimiser steps of this start on your documents, here and now (a few seconds)."):
        from hierattn.training.in_memory import measured_rate

        with st.spinner("Timing two optimiser steps…"):
            st.session_state[key] = measured_rate(start_from, model_type, dataset.texts, dataset.labels,
                                                  dataset.label_names, text, batch_size)
    rate = st.session_state.get(key)
    if rate:
        st.caption(f"Measured here: {rate:.1f} training documents a second, so about "
                   f"{duration(epochs * train / rate)} for the epochs, before validation (other runs and "
                   "visitors on the server make it slower).")


SCRATCH = "a new model, from scratch"


def _start_from(where, model_type: str) -> str:
    """For a model that can be trained further (``ModelSpec.relabel``): a checkpoint of its type to
    fine-tune (its tokenizer and weights kept, a new head for your labels), or none."""
    if REGISTRY[model_type].relabel is None:
        return ""
    from hierattn.checkpoint.format import CheckpointError
    from hierattn.checkpoint.reading import described
    from hierattn.home import all_checkpoints

    def of_this_type(path) -> bool:
        try:
            return described(path).get("model_type") == model_type
        except (CheckpointError, ValueError, KeyError, OSError):
            return False

    from hierattn.models import pretrained

    folders = {p.name: str(p) for p in all_checkpoints() if of_this_type(p)}
    if REGISTRY[model_type].reads == "text":  # pretrained encoders installed as packages (models.pretrained)
        folders.update({f"{name} (pretrained)": str(path) for name, path in pretrained.installed().items()})
    choice = where.selectbox("Start from", [SCRATCH] + list(folders), key=f"start_from_{model_type}",
                             help="Fine-tune a pretrained encoder or a checkpoint of this type (a Hugging Face folder "
                                  "placed under checkpoints/, or one trained here): its tokenizer and weights are "
                                  "kept, its classification head is new where your labels differ. A small learning "
                                  "rate (2e-5 to 5e-5) suits a pre-trained model.")
    return "" if choice == SCRATCH else folders[choice]


def run_panel(jobs, job_id: str) -> None:
    """A run's progress, curves and outcome, polled every second while it trains."""
    job = jobs.get(job_id)
    if job is None:
        return
    was_active = job.active
    from hierattn.app.run_policy import single_user
    from hierattn.app.visitors import visitor

    mine = single_user() or visitor() in jobs.owners(job)  # a job's link opened elsewhere watches, never cancels

    @st.fragment(run_every=1.0 if was_active else None)
    def panel():
        snap = job.snapshot()
        st.subheader(f"Run {viz.md_code(snap['name'])}")
        if snap["status"] in ("preparing", "running"):
            if snap["status"] == "preparing":
                st.info(f"Reading and tokenising {snap['documents']:,} documents (spaCy; large data sets take a "
                        f"minute)… {duration(snap['elapsed_seconds'])} so far.")
            else:
                eta = snap["eta_seconds"]
                rate = f"{snap['docs_per_s']:.0f} documents/s" if snap["docs_per_s"] else ""
                if snap["threads"]:  # its share of the cores, shrunk while other runs or pages compute
                    rate += f" on {snap['threads']} of {snap['cores']} cores"
                text = (f"Epoch {snap['epoch']}/{snap['epochs']}, batch {snap['step']}/{snap['steps']} · {rate}"
                        + (f" · about {duration(eta)} left" if eta is not None else ""))
                st.progress(min(snap["fraction"], 1.0), text=text)
            if snap["stopping"]:
                st.warning("Stopping after this batch…")
            elif mine and st.button("Cancel", key=f"cancel_{snap['id']}",
                           help="Stops after the current batch; the best epoch so far is kept."):
                job.cancel()
                st.rerun(scope="fragment")
        elif snap["status"] == "finished":
            metrics = snap["metrics"]
            kind = metrics.get("baseline_verdict") or baselines.judge(
                metrics.get("validation_accuracy", 0.0), metrics.get("baselines", {}), "validation",
                metrics.get("split_sizes", {}).get("validation"))[0]
            if kind in ("below", "within noise", "one class"):  # green only for a run that clearly beats them
                st.warning(viz.md_text(snap["message"]))
            else:
                st.success(viz.md_text(snap["message"]))
        elif snap["status"] == "cancelled":
            st.warning(viz.md_text(snap["message"]))
        else:
            st.error(viz.md_text(snap["message"]))
        if snap["losses"] or snap["history"]:
            left, right = st.columns(2)
            left.caption("Training loss and validation accuracy")
            curve = viz.training_chart(snap["losses"], snap["history"], snap["steps"] / snap.get("loss_stride", 1))
            run = Figures(f"{snap['name']} ({snap['display_name']}) · trained on {snap['dataset']}")
            chart(curve, "Training loss and validation accuracy", left, key=f"curve_{snap['id']}", figures=run)
            right.caption("Self-attention on the validation set: mean Gini (sparsity) and diagonality (b=3); dashed, "
                          "the diagonality attention spread evenly over the same words would have (its Gini is 0): "
                          "the model looks near only where its line is above the dashed one.")
            if any("attention_gini" in h for h in snap["history"]):
                chart(viz.attention_sharpness_chart(snap["history"]), "Self-attention's sharpness after each epoch",
                      right, key=f"sharp_{snap['id']}", figures=run)
            elif snap["history"]:
                right.info("This model has no self-attention to measure.")
            else:
                right.info("Measured after each epoch.")
        if snap["status"] in ("finished", "cancelled") and snap["metrics"]:
            recorded = read_playback(job.out)
            if recorded:
                st.markdown("**Attention forming as it trained.** The run explained a few validation documents "
                            "before training and after each epoch, exactly as Explore would have had it stopped "
                            "there. Slide through the epochs:")
                playback.show({snap["name"]: recorded}, f"playback_{snap['id']}",
                              f"{snap['name']} ({snap['display_name']}) · trained on {snap['dataset']}")
            if st.button("Open it in Explore", key=f"open_{snap['id']}"):
                own = heldout_samples(job.out, None, per_class=1)  # a document of its own data, not a built-in one
                if own:
                    open_in_explore(snap["name"], own[0][2])
                st.session_state.model = snap["name"]  # Explore's model picker
                st.switch_page("pages/explore.py")
        if was_active and not job.active:
            st.rerun(scope="app")  # stop polling; the picker and the form see the new checkpoint

    panel()
